package server_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/tabulatest"
)

// curlSession extracts the curl session documented in text: the lines from the one that sets
// KEY to the last curl line, with prefix (the comment's "//\t" in Go) removed.
func curlSession(t *testing.T, text, prefix string) string {
	t.Helper()
	var lines []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		line, ok := strings.CutPrefix(line, prefix)
		if !ok {
			if in {
				break
			}
			continue
		}
		if strings.HasPrefix(line, "KEY=") {
			in = true
		}
		if in {
			if strings.HasPrefix(line, "```") {
				break
			}
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		t.Fatal("no curl session found")
	}
	return strings.Join(lines, "\n") + "\n"
}

// The curl session of the package documentation and of the README is the same, and it does
// what it says against a running server.
func TestDocumentedCurlSessionWorks(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	session := curlSession(t, string(doc), "//\t")
	if got := curlSession(t, string(readme), ""); got != session {
		t.Fatalf("the README's curl session differs from the package documentation's:\n%s\nvs\n%s", got, session)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	srv := tabulatest.NewServer(t, nil)
	script := strings.ReplaceAll(session, "http://127.0.0.1:10002", srv.Endpoint)
	// Stop after the first change, as the client under test would run there.
	first, _, ok := strings.Cut(script, "# ")
	if !ok {
		t.Fatal("the session has no comment where the client under test runs")
	}
	out, err := exec.Command("sh", "-ec", first).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), `"mode":"enforce","partitionRate":10,`) {
		t.Fatalf("the first change answered %s", out)
	}
	if l := srv.DB.Namespace("").Limits(); l.Mode != partition.LimitEnforce || l.PartitionRate != 10 {
		t.Fatalf("limits after the first change: %+v", l)
	}
	out, err = exec.Command("sh", "-ec", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if l := srv.DB.Namespace("").Limits(); l.Mode != partition.LimitObserve || l.PartitionRate != 10 {
		t.Fatalf("limits after the session: %+v", l)
	}
}
