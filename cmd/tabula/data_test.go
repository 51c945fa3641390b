package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/tabulatest"
)

// seedDir makes a data directory with tables in two accounts.
func seedDir(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	for _, ns := range []string{"", "second"} {
		for _, name := range []string{"Alpha", "Beta", "Gamma"} {
			tb, err := db.Namespace(ns).CreateTable(ctx, name)
			require.NoError(t, err)
			for i := range 40 {
				_, err := tb.Insert(ctx, tabula.Entity{PartitionKey: fmt.Sprint(i % 4), RowKey: fmt.Sprintf("%03d", i),
					Properties: tabula.Properties{"N": tabula.Int64(int64(i) << 40), "S": tabula.String(name)}})
				require.NoError(t, err)
			}
		}
	}
	require.NoError(t, db.Close())
	return dir
}

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(context.Background(), args, &out, &errs)
	return out.String(), errs.String(), code
}

func readFile(t *testing.T, file string) string {
	t.Helper()
	r, _, _, closeFn, err := openInterchange(file)
	require.NoError(t, err)
	defer closeFn()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(b)
}

// export and import between data directories, plain and gzip, give back the same file;
// nothing is printed as progress when standard error is not a terminal.
func TestCLIExportImportData(t *testing.T) {
	src := seedDir(t)
	tmp := t.TempDir()
	for _, name := range []string{"all.jsonl", "all.jsonl.gz"} {
		file := filepath.Join(tmp, name)
		_, errs, code := runCLI(t, "export", "--data", src, file)
		require.Equal(t, 0, code, errs)
		assert.Empty(t, errs)
		text := readFile(t, file)
		assert.Contains(t, text, `{"@tabula":"eof","tables":6,"entities":240}`)
		_, err := os.Stat(statePath(file))
		assert.ErrorIs(t, err, os.ErrNotExist, "the state file is gone when done")

		dst := filepath.Join(t.TempDir(), "copy")
		out, errs, code := runCLI(t, "import", "--data", dst, "--keep-timestamps", file)
		require.Equal(t, 0, code, errs)
		assert.Equal(t, "Imported 6 tables, 240 entities\n", out)
		again := filepath.Join(tmp, "again-"+name)
		_, errs, code = runCLI(t, "export", "--data", dst, again)
		require.Equal(t, 0, code, errs)
		assert.Equal(t, text, readFile(t, again))
	}
	// --tables and --filter choose what is written.
	file := filepath.Join(tmp, "some.jsonl")
	_, errs, code := runCLI(t, "export", "--data", src, "--namespaces", "second", "--tables", "beta", "--filter", "PartitionKey eq '1'", file)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, readFile(t, file), `{"@tabula":"eof","tables":1,"entities":10}`)

	// A cut file is an error naming the line, and changes nothing.
	whole := readFile(t, filepath.Join(tmp, "all.jsonl"))
	cut := filepath.Join(tmp, "cut.jsonl")
	require.NoError(t, os.WriteFile(cut, []byte(whole[:len(whole)/2]), 0o644))
	dst := filepath.Join(t.TempDir(), "copy")
	_, errs, code = runCLI(t, "import", "--data", dst, cut)
	assert.Equal(t, 1, code)
	assert.Regexp(t, `^tabula import: import: line \d+: the file ends before its trailer`, errs)
	empty := filepath.Join(tmp, "empty.jsonl")
	_, errs, code = runCLI(t, "export", "--data", dst, empty)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, readFile(t, empty), `{"@tabula":"eof","tables":0,"entities":0}`)
}

// An export interrupted after a checkpoint resumes from its state file and writes the file
// an uninterrupted one would, plain and gzip.
func TestCLIExportResumes(t *testing.T) {
	defer func(n int) { checkpointEvery = n }(checkpointEvery)
	checkpointEvery = 15
	src := seedDir(t)
	tmp := t.TempDir()
	for _, name := range []string{"all.jsonl", "all.jsonl.gz"} {
		whole := filepath.Join(tmp, "whole-"+name)
		_, errs, code := runCLI(t, "export", "--data", src, whole)
		require.Equal(t, 0, code, errs)
		for _, stopAfter := range []int{1, 4, 9} {
			file := filepath.Join(tmp, fmt.Sprint(stopAfter)+name)
			ctx, cancel := context.WithCancel(context.Background())
			n := 0
			d := dataFlags{dir: src, progress: "off"}
			exportHook = func() {
				if n++; n == stopAfter {
					cancel()
				}
			}
			err := export(ctx, &d, "", file, io.Discard, io.Discard)
			exportHook = nil
			require.ErrorIs(t, err, context.Canceled)
			_, err = os.Stat(statePath(file))
			require.NoError(t, err, "a state file records how far it got")
			_, errs, code := runCLI(t, "export", "--data", src, file)
			require.Equal(t, 0, code, errs)
			assert.Contains(t, errs, "Resuming after")
			assert.Equal(t, readFile(t, whole), readFile(t, file), "stopped after checkpoint %d", stopAfter)
		}
	}
}

// The same through remote: down from a live tabula serve to a file, and up into another.
func TestCLIExportImportRemote(t *testing.T) {
	ctx := context.Background()
	from := tabulatest.NewServer(t, nil)
	things, err := from.DB.CreateTable(ctx, "Things")
	require.NoError(t, err)
	for i := range 30 {
		_, err := things.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	policies := []tabula.AccessPolicy{{ID: "readers", Permission: "r", Expiry: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}
	require.NoError(t, things.SetAccessPolicies(ctx, policies))
	file := filepath.Join(t.TempDir(), "down.jsonl.gz")
	_, errs, code := runCLI(t, "export", "--connection-string", from.ConnectionString(), file)
	require.Equal(t, 0, code, errs)
	down := readFile(t, file)
	assert.Contains(t, down, `{"@tabula":"eof","tables":1,"entities":30}`)
	// The service's properties (its defaults) and the table's access policies come too.
	assert.Contains(t, down, `{"@tabula":"account","account":"","serviceProperties":"<StorageServiceProperties>`)
	assert.Contains(t, down, `"accessPolicies":[{"Id":"readers","Expiry":"2030-01-01T00:00:00Z","Permission":"r"}]`)

	to := tabulatest.NewServer(t, nil)
	out, errs, code := runCLI(t, "import", "--connection-string", to.ConnectionString(), file)
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "Imported 1 tables, 30 entities\n", out)
	n := 0
	for _, err := range to.DB.Table("Things").QueryAll(ctx, tabula.Query{}) {
		require.NoError(t, err)
		n++
	}
	assert.Equal(t, 30, n)
	got, err := to.DB.Table("Things").AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Equal(t, policies, got)
	// Again: every entity exists; skip leaves them, fail says which line.
	_, errs, code = runCLI(t, "import", "--connection-string", to.ConnectionString(), "--existing", "skip", file)
	require.Equal(t, 0, code, errs)
	_, errs, code = runCLI(t, "import", "--connection-string", to.ConnectionString(), file)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "line 4: ", "the export's header, account and table lines come first")
	assert.Contains(t, errs, "EntityAlreadyExists")
}

// tabula serve --import loads a file at start, and --export-on-exit writes one on a clean
// stop: a server started from the file it wrote serves the same entities and ETags.
func TestServeImportExportOnExit(t *testing.T) {
	src := seedDir(t)
	tmp := t.TempDir()
	file := filepath.Join(tmp, "fixture.jsonl")
	_, errs, code := runCLI(t, "export", "--data", src, file)
	require.Equal(t, 0, code, errs)
	onExit := filepath.Join(tmp, "exit.jsonl.gz")
	r := start(t, "--in-memory", "--addr", "127.0.0.1:0", "--silent", "--import", file, "--export-on-exit", onExit)
	assert.Contains(t, r.out.String(), "Imported 6 tables, 240 entities from "+file)
	r.shutdown(t)
	assert.Contains(t, r.out.String(), "Exported every table to "+onExit)
	assert.Equal(t, readFile(t, file), readFile(t, onExit))
}
