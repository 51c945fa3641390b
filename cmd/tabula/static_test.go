package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Dockerfile copies a binary into an empty image, so the binary must need nothing from
// the system: built as README.md and the Dockerfile say, it is a static executable (no
// program interpreter, no shared libraries) that runs.
func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	dockerfile, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	const buildLine = "CGO_ENABLED=0 go build -ldflags='-s -w' -o tabula ./cmd/tabula"
	assert.Contains(t, string(dockerfile), buildLine)
	assert.Contains(t, string(dockerfile), "FROM scratch\nCOPY tabula /tabula\n")
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), buildLine)

	bin := filepath.Join(t.TempDir(), "tabula")
	cmd := exec.Command(goTool, "build", "-ldflags=-s -w", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	f, err := elf.Open(bin)
	if err != nil {
		t.Skipf("not an ELF platform: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no program interpreter")
		assert.NotEqual(t, elf.PT_DYNAMIC, p.Type, "a static binary has no dynamic section")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	assert.Empty(t, libs)

	version, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(version), "tabula "), string(version))
}
