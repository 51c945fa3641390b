package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/server"
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
		out, errs, code := runCLI(t, "export", "--data", src, file)
		require.Equal(t, 0, code, errs)
		assert.Empty(t, errs)
		assert.Equal(t, "Exported 6 tables, 240 entities to "+file+".\n", out, "said when not on a terminal too")
		text := readFile(t, file)
		assert.Contains(t, text, `{"@tabula":"eof","tables":6,"entities":240}`)
		_, err := os.Stat(statePath(file))
		assert.ErrorIs(t, err, os.ErrNotExist, "the state file is gone when done")

		dst := filepath.Join(t.TempDir(), "copy")
		out, errs, code = runCLI(t, "import", "--data", dst, "--keep-timestamps", file)
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
	assert.Regexp(t, `^tabula import: .*cut.jsonl: line \d+: the file ends before its trailer`, errs)
	_, err := os.Stat(dst)
	assert.ErrorIs(t, err, os.ErrNotExist, "a failed import into a new directory leaves none")
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
			err := export(ctx, &d, nil, file, io.Discard, io.Discard)
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
	assert.Equal(t, "Imported 1 table, 30 entities\n", out)
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

// No command makes a database, a file or a table as a side effect of failing or of a
// mistyped path.
func TestCLIFailureLeavesNothing(t *testing.T) {
	src := seedDir(t)
	tmp := t.TempDir()

	typo := filepath.Join(tmp, "typo")
	_, errs, code := runCLI(t, "export", "--data", typo, filepath.Join(tmp, "out.jsonl"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "--data "+typo)
	for _, p := range []string{typo, filepath.Join(tmp, "out.jsonl")} {
		_, err := os.Stat(p)
		assert.ErrorIs(t, err, os.ErrNotExist, p)
	}
	empty := t.TempDir()
	_, errs, code = runCLI(t, "export", "--data", empty, filepath.Join(tmp, "out.jsonl"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "holds no Tabula database")
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	assert.Empty(t, entries, "no database made in it")

	// A failed export (a bad filter) leaves no file.
	failed := filepath.Join(tmp, "failed.jsonl")
	_, errs, code = runCLI(t, "export", "--data", src, "--filter", "Nope eq", failed)
	assert.Equal(t, 1, code, errs)
	_, err = os.Stat(failed)
	assert.ErrorIs(t, err, os.ErrNotExist, "a failed export leaves no file")

	// A failed import into a new directory, or an empty one, leaves nothing.
	bad := filepath.Join(tmp, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"Orders": [{"PartitionKey": "p"}]}`), 0o600))
	newdir := filepath.Join(tmp, "newdir")
	_, errs, code = runCLI(t, "import", "--data", newdir, bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "bad.json: line 1: $.Orders[0]: an entity must carry both PartitionKey and RowKey")
	_, err = os.Stat(newdir)
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, _, code = runCLI(t, "import", "--data", empty, bad)
	assert.Equal(t, 1, code)
	entries, err = os.ReadDir(empty)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// A hand-written fixture, with every EDM type, imports and checks from the command line,
// and its flags may follow FILE.
func TestCLIImportFixture(t *testing.T) {
	ctx := context.Background()
	fixture := filepath.Join("..", "..", "testdata", "fixture.json")
	out, errs, code := runCLI(t, "import", fixture, "--check")
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "Checked 2 tables, 2 entities\n", out)

	dir := filepath.Join(t.TempDir(), "db")
	out, errs, code = runCLI(t, "import", fixture, "--data", dir, "--progress", "off")
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "Imported 2 tables, 2 entities\n", out)
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	e, err := db.Table("Orders").Get(ctx, "alice", "0001")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	assertFixtureOrder(t, e.Properties)

	// The same again fails on the entities that exist, naming the flag that imports them.
	_, errs, code = runCLI(t, "import", "--data", dir, fixture)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "fixture.json: line 3: $.Orders[0]: entity (\"alice\", \"0001\") exists in the table already")
	assert.Contains(t, errs, "(--existing replace, merge or skip imports it)")
	assert.NotContains(t, errs, "Existing")

	// Skipped entities are not counted as imported.
	out, errs, code = runCLI(t, "import", "--data", dir, "--existing", "skip", fixture)
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "Imported 2 tables, 0 entities (2 left out)\n", out)

	// --check finds what an import would refuse, writing nothing.
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{\"Orders\": [\n {\"PartitionKey\": \"p\", \"RowKey\": \"r\", \"1x\": 1}]}"), 0o600))
	_, errs, code = runCLI(t, "import", "--check", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "bad.json: line 2: $.Orders[0]")
}

// assertFixtureOrder checks the first entity of testdata/fixture.json, every EDM type.
func assertFixtureOrder(t *testing.T, got tabula.Properties) {
	t.Helper()
	id, err := tabula.ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")
	require.NoError(t, err)
	ratio, ok := got["Ratio"].(tabula.Double)
	assert.True(t, ok && math.IsNaN(float64(ratio)), "Ratio %v", got["Ratio"])
	due, ok := got["Due"].(tabula.DateTime)
	assert.True(t, ok && time.Time(due).Equal(time.Date(2024, 5, 1, 10, 0, 0, 123456700, time.UTC)), "Due %v", got["Due"])
	delete(got, "Ratio")
	delete(got, "Due")
	assert.Equal(t, tabula.Properties{"Name": tabula.String("Widget"), "Paid": tabula.Boolean(true), "Units": tabula.Int32(3),
		"Total": tabula.Double(12.5), "Serial": tabula.Int64(math.MaxInt64), "Id": id, "Blob": tabula.Binary{0, 1, 2, 3}}, got)
}

// --namespaces "" is the first account's tables alone, and an empty name listed twice
// (",") is still one namespace.
func TestCLIExportNamespaces(t *testing.T) {
	src := seedDir(t)
	tmp := t.TempDir()
	for _, v := range []string{"", ","} {
		file := filepath.Join(tmp, "ns.jsonl")
		_, errs, code := runCLI(t, "export", "--data", src, "--namespaces", v, file)
		require.Equal(t, 0, code, errs)
		assert.Contains(t, readFile(t, file), `{"@tabula":"eof","tables":3,"entities":120}`, "--namespaces %q", v)
		_, errs, code = runCLI(t, "import", "--check", file)
		require.Equal(t, 0, code, "--namespaces %q: %s", v, errs)
	}
	file := filepath.Join(tmp, "both.jsonl")
	_, errs, code := runCLI(t, "export", "--data", src, "--namespaces", ",second", file)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, readFile(t, file), `{"@tabula":"eof","tables":6,"entities":240}`)
}

// A .gz file cut short is an error naming the file and the line it stopped after.
func TestCLIImportTruncatedGzip(t *testing.T) {
	src := seedDir(t)
	tmp := t.TempDir()
	file := filepath.Join(tmp, "all.jsonl.gz")
	_, errs, code := runCLI(t, "export", "--data", src, file)
	require.Equal(t, 0, code, errs)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	cut := filepath.Join(tmp, "cut.jsonl.gz")
	require.NoError(t, os.WriteFile(cut, b[:len(b)*2/3], 0o600))
	_, errs, code = runCLI(t, "import", "--check", cut)
	assert.Equal(t, 1, code)
	assert.Regexp(t, `cut.jsonl.gz: line \d+: reading the file: unexpected EOF \(--best-effort imports the tables whole before the cut\)`, errs)
}

// --export-on-exit to a path that cannot be written is refused at start, before any data
// is at risk.
func TestServeExportOnExitCheckedAtStart(t *testing.T) {
	_, errs, code := runCLI(t, "serve", "--in-memory", "--addr", "127.0.0.1:0", "--silent", "--export-on-exit", filepath.Join(t.TempDir(), "missing", "x.jsonl"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "--export-on-exit")
}

// serve --import puts a file's accounts in the namespaces the server serves them from,
// whatever the order of --accounts.
func TestServeImportAccounts(t *testing.T) {
	ctx := context.Background()
	src := tabulatest.Tables(map[string][]tabula.Entity{"Orders": {{PartitionKey: "p", RowKey: "r"}}}).Open(t, nil)
	var file bytes.Buffer
	require.NoError(t, tabula.ExportService(ctx, tabula.Embedded(src), &file, &tabula.ExportOptions{Account: "myacct"}))
	path := filepath.Join(t.TempDir(), "f.jsonl")
	require.NoError(t, os.WriteFile(path, file.Bytes(), 0o600))
	for _, accounts := range [][]string{{"myacct"}, {"other", "myacct"}, {"myacct", "other"}} {
		db, err := tabula.OpenInMemory(nil)
		require.NoError(t, err)
		var list []server.Account
		for _, a := range accounts {
			list = append(list, server.Account{Name: a, Keys: []string{server.DevelopmentAccountKey}})
		}
		h, err := server.New(db, &server.Options{Accounts: list})
		require.NoError(t, err)
		_ = h
		p, err := importAtStart(ctx, db, path, accounts)
		require.NoError(t, err)
		assert.EqualValues(t, 1, p.Tables)
		assigned, _, err := db.AccountNamespaces(ctx, accounts)
		require.NoError(t, err)
		_, err = assigned["myacct"].Table("Orders").Get(ctx, "p", "r")
		assert.NoError(t, err, "--accounts %v", accounts)
		require.NoError(t, db.Close())
	}
}

// A hand-written fixture loads at serve's start.
func TestServeImportFixture(t *testing.T) {
	r := start(t, "--in-memory", "--addr", "127.0.0.1:0", "--silent", "--import", filepath.Join("..", "..", "testdata", "fixture.json"))
	assert.Contains(t, r.out.String(), "Imported 2 tables, 2 entities from ")
	c, err := remote.Dial(r.connStr, nil)
	require.NoError(t, err)
	e, err := c.Table("Orders").Get(context.Background(), "alice", "0001")
	require.NoError(t, err)
	assertFixtureOrder(t, e.Properties)
	r.shutdown(t)
}

// --filter imports (and --check counts) only the entities it selects; a filter that does
// not parse is named by its flag.
func TestCLIImportFilter(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "all.jsonl")
	_, errs, code := runCLI(t, "export", "--data", seedDir(t), file)
	require.Equal(t, 0, code, errs)
	out, errs, code := runCLI(t, "import", "--check", "--filter", "PartitionKey eq '1' and N ge 10995116277760L", file)
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "Checked 6 tables, 42 entities\n", out) // 7 of each table's 40

	dir := filepath.Join(t.TempDir(), "db")
	out, errs, code = runCLI(t, "import", "--data", dir, "--progress", "off", "--filter", "PartitionKey eq '1' and N ge 10995116277760L", file)
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "Imported 6 tables, 42 entities\n", out)
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	n := 0
	for e, err := range db.Table("Alpha").QueryAll(ctx, tabula.Query{}) {
		require.NoError(t, err)
		assert.Equal(t, "1", e.PartitionKey)
		n++
	}
	assert.Equal(t, 7, n)

	_, errs, code = runCLI(t, "import", "--check", "--filter", "PartitionKey eq", file)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "tabula import: --filter: syntax error")
}

// tabula import --data loads a table large enough and in key order directly into the
// store (ImportOptions.Exclusive): every entity is there, the database checks out, and a
// repeat far into the file is still refused, leaving no directory behind.
func TestCLIImportLargeTable(t *testing.T) {
	ctx := context.Background()
	const n = 40_000 // past the 32,768 entities a direct load starts from
	var b bytes.Buffer
	b.WriteString(`{"@tabula":"export","version":1}` + "\n" + `{"@tabula":"table","account":"","table":"Big"}` + "\n")
	for i := range n {
		fmt.Fprintf(&b, `{"PartitionKey":"p%03d","RowKey":"r%06d","Timestamp":"2024-01-02T03:04:05Z","N":%d}`+"\n", i/1000, i, i)
	}
	fmt.Fprintf(&b, `{"@tabula":"end","account":"","table":"Big","entities":%d}`+"\n"+`{"@tabula":"eof","tables":1,"entities":%d}`+"\n", n, n)
	file := filepath.Join(t.TempDir(), "big.jsonl")
	require.NoError(t, os.WriteFile(file, b.Bytes(), 0o600))

	dir := filepath.Join(t.TempDir(), "db")
	out, errs, code := runCLI(t, "import", "--data", dir, "--progress", "off", file)
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "Imported 1 table, 40000 entities\n", out)
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, db.Check(ctx))
	got, err := tabula.Count(ctx, db.Table("Big"), "")
	require.NoError(t, err)
	assert.Equal(t, int64(n), got)
	e, err := db.Table("Big").Get(ctx, "p039", "r039999")
	require.NoError(t, err)
	assert.Equal(t, tabula.Int32(n-1), e.Properties["N"])
	require.NoError(t, db.Close())

	repeat := bytes.Replace(b.Bytes(), []byte(`"RowKey":"r039999"`), []byte(`"RowKey":"r000005"`), 1)
	repeat = bytes.Replace(repeat, []byte(`"PartitionKey":"p039","RowKey":"r000005"`), []byte(`"PartitionKey":"p000","RowKey":"r000005"`), 1)
	require.NoError(t, os.WriteFile(file, repeat, 0o600))
	fresh := filepath.Join(t.TempDir(), "fresh")
	_, errs, code = runCLI(t, "import", "--data", fresh, "--progress", "off", file)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "big.jsonl: line 40002:")
	assert.Contains(t, errs, "is in the table twice")
	assert.NoDirExists(t, fresh)
}

// With --data, export's progress line shows the time left, from a count of the entities it
// will write (the count respects --tables and --filter).
func TestCLIExportTimeLeft(t *testing.T) {
	defer func(n int) { checkpointEvery = n }(checkpointEvery)
	checkpointEvery = 15
	file := filepath.Join(t.TempDir(), "all.jsonl")
	_, errs, code := runCLI(t, "export", "--data", seedDir(t), "--progress", "on", file)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "15 entities, ")
	assert.Contains(t, errs, " left")

	db, err := tabula.Open(seedDir(t), nil)
	require.NoError(t, err)
	defer db.Close()
	total, err := exportTotal(context.Background(), db, &tabula.ExportOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(240), total)
	total, err = exportTotal(context.Background(), db, &tabula.ExportOptions{Namespaces: []string{"second"}, Tables: []string{"alpha"}, Filter: "PartitionKey eq '1'"})
	require.NoError(t, err)
	assert.Equal(t, int64(10), total)
}
