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

// The Dockerfile copies the binary into an empty image, so the binary must need nothing
// from the system: built as the release tool (packaging/release) builds it, it is a static
// executable (no program interpreter, no shared libraries) that runs and prints the version
// stamped into it. The Dockerfile copies it from dist/, where the release tool writes it,
// never from a path that git tracks.
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
	assert.Contains(t, string(dockerfile), "FROM scratch\nARG TARGETARCH\nCOPY dist/bin/linux_${TARGETARCH}/tabula /tabula\n")
	assert.Contains(t, string(dockerfile), "USER 65532:65532\n")
	assert.NotContains(t, string(dockerfile), "RUN ", "an image of linux/arm64 builds on amd64 only if nothing runs in it")
	gitignore, err := os.ReadFile("../../.gitignore")
	require.NoError(t, err)
	assert.Contains(t, string(gitignore), "\n/dist/\n")
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), "go run ./packaging/release -targets linux/amd64,linux/arm64 -image localhost/tabula")

	bin := filepath.Join(t.TempDir(), "tabula")
	cmd := exec.Command(goTool, "build", "-trimpath", "-buildvcs=false",
		"-ldflags=-s -w -buildid= -X main.version=v0.0.0-test", "-o", bin, ".")
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
	assert.True(t, strings.HasPrefix(string(version), "tabula v0.0.0-test "), string(version))
}
