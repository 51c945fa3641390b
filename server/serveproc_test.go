package server

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serveProcess is a `tabula serve` child process, as a user in any language would run it.
type serveProcess struct {
	connStr string // the development account's connection string, from the banner
	console string // the console's URL, from the banner
}

// reserved is the URL of path under ReservedPrefix on this server.
func (p serveProcess) reserved(path string) string {
	return strings.TrimSuffix(p.console, "console/") + path
}

// startServe builds cmd/tabula into a temporary directory, starts `tabula serve --in-memory` on
// a random loopback port with the extra flags given, and reads the address from its banner.
// The process is killed when the test ends; its standard error is logged if the test failed.
func startServe(t *testing.T, flags ...string) serveProcess {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "tabula")
	build := exec.Command("go", "build", "-o", bin, "../cmd/tabula")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building tabula: %v\n%s", err, out)
	}
	errFile, err := os.Create(filepath.Join(dir, "stderr"))
	require.NoError(t, err)
	cmd := exec.Command(bin, append([]string{"serve", "--in-memory", "--addr", "127.0.0.1:0"}, flags...)...)
	cmd.Stderr = errFile
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = errFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(errFile.Name()); err == nil && len(b) > 0 {
				t.Logf("tabula serve's standard error:\n%s", b)
			}
		}
	})
	// A server that never prints its banner is killed, which ends the read below with EOF.
	stuck := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() })
	defer stuck.Stop()

	var p serveProcess
	r := bufio.NewReader(out)
	for p.console == "" {
		line, err := r.ReadString('\n')
		require.NoError(t, err, "tabula serve ended its banner early")
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "DefaultEndpointsProtocol=") && p.connStr == "":
			p.connStr = line
		case strings.HasPrefix(line, "Console "):
			_, url, ok := strings.Cut(line, ": ")
			require.True(t, ok, "console line %q", line)
			p.console = url
		}
	}
	require.NotEmpty(t, p.connStr, "no connection string in the banner")
	go func() { _, _ = io.Copy(io.Discard, r) }() // the request log, if any
	return p
}
