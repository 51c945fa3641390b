package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var files = []archiveFile{{"tabula", 0o755, []byte("binary")}, {"README.md", 0o644, []byte("# Tabula")}}

// The same inputs give the same archive bytes, whenever and by whom they are written, with
// the entries sorted, owned by 0:0 and dated by the source date.
func TestArchivesAreReproducible(t *testing.T) {
	when := time.Unix(1700000000, 0).UTC()
	for name, write := range map[string]func(io.Writer, []archiveFile, time.Time) error{"tar.gz": writeTarGz, "zip": writeZip} {
		t.Run(name, func(t *testing.T) {
			var a, b bytes.Buffer
			require.NoError(t, write(&a, files, when))
			require.NoError(t, write(&b, []archiveFile{files[1], files[0]}, when))
			assert.Equal(t, a.Bytes(), b.Bytes(), "the order given does not matter")
			var c bytes.Buffer
			require.NoError(t, write(&c, files, when.Add(time.Hour)))
			assert.NotEqual(t, a.Bytes(), c.Bytes(), "the source date is in the archive")
		})
	}

	var buf bytes.Buffer
	require.NoError(t, writeTarGz(&buf, files, when))
	gz, err := gzip.NewReader(&buf)
	require.NoError(t, err)
	assert.Empty(t, gz.Name)
	assert.True(t, gz.ModTime.IsZero())
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		names = append(names, h.Name)
		assert.Zero(t, h.Uid)
		assert.Zero(t, h.Gid)
		assert.Empty(t, h.Uname)
		assert.True(t, when.Equal(h.ModTime), h.ModTime)
	}
	assert.Equal(t, []string{"README.md", "tabula"}, names)

	buf.Reset()
	require.NoError(t, writeZip(&buf, files, when))
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	require.Len(t, zr.File, 2)
	assert.Equal(t, "README.md", zr.File[0].Name)
	assert.Equal(t, os.FileMode(0o755), zr.File[1].Mode().Perm())
}

// A dynamically linked program, or one of another architecture, fails the check loudly.
func TestCheckBinaryRefusesDynamicAndForeign(t *testing.T) {
	const dynamic = "/bin/sh" // dynamically linked on every Debian
	if _, err := os.Stat(dynamic); err != nil {
		t.Skip("no /bin/sh")
	}
	err := checkBinary(dynamic, target{"linux", "amd64"})
	require.Error(t, err)
	assert.Regexp(t, `not a static linux_amd64 executable: (it has a PT_INTERP segment|machine)`, err.Error())
	assert.Error(t, checkBinary(dynamic, target{"linux", "arm64"}))
	assert.Error(t, checkBinary(dynamic, target{"darwin", "arm64"}), "not Mach-O")
	assert.Error(t, checkBinary(dynamic, target{"windows", "amd64"}), "not PE")
	assert.Error(t, checkBinary("main.go", target{"linux", "amd64"}))
}

func TestParseTarget(t *testing.T) {
	for _, ok := range allTargets {
		_, err := parseTarget(ok)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"linux", "plan9/amd64", "linux/386", ""} {
		_, err := parseTarget(bad)
		assert.Error(t, err, bad)
	}
}

// With no flags the release builds this machine's platform, which is one of the release's.
func TestDefaultTargetIsThisMachine(t *testing.T) {
	host := hostTarget()
	_, err := parseTarget(host)
	require.NoError(t, err)
	if runtime.GOOS+"/"+runtime.GOARCH != host {
		assert.Equal(t, "linux/amd64", host, "a machine the release does not cover gets linux/amd64")
	}
}

// The summary says where each artefact went and the command that installs it, or why an
// ecosystem's packages were not built.
func TestPrintNextSaysWhereAndWhatNext(t *testing.T) {
	var b strings.Builder
	printNext(&b, "dist", []string{"linux/amd64"}, []builtPackage{
		{ecosystem: "npm", files: []string{"/d/npm/tabuladb-tabula-1.0.0.tgz", "/d/npm/tabuladb-tabula-linux-x64-1.0.0.tgz"},
			install: "npm install -D /d/npm/tabuladb-tabula-1.0.0.tgz /d/npm/tabuladb-tabula-linux-x64-1.0.0.tgz"},
		{ecosystem: "Python", note: "not built: python3 is not installed"},
	})
	out := b.String()
	assert.Contains(t, out, filepath.Join(mustAbs("dist"), "bin", "linux_amd64", "tabula"))
	assert.Contains(t, out, "/d/npm/tabuladb-tabula-linux-x64-1.0.0.tgz")
	assert.Contains(t, out, "npm:    in your project: npm install -D /d/npm/tabuladb-tabula-1.0.0.tgz")
	assert.Regexp(t, `Python packages +not built: python3 is not installed`, out)
	if runtime.GOOS+"/"+runtime.GOARCH == "linux/amd64" {
		assert.Contains(t, out, "serve:  "+filepath.Join(mustAbs("dist"), "bin", "linux_amd64", "tabula")+" serve --in-memory")
	}

	b.Reset()
	printNext(&b, "dist", []string{"linux/amd64"}, nil)
	assert.Contains(t, b.String(), "go run ./packaging/release -packages", "without -packages, how to get them")
}

func TestMainPackageFirst(t *testing.T) {
	assert.Equal(t, []string{"/n/tabuladb-tabula-1.0.0.tgz", "/n/tabuladb-tabula-linux-x64-1.0.0.tgz"},
		mainPackageFirst([]string{"/n/tabuladb-tabula-linux-x64-1.0.0.tgz", "/n/tabuladb-tabula-1.0.0.tgz"}))
}
