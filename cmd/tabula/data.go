package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
)

const exportUsage = `Usage: tabula export [flags] FILE

Writes tables to FILE as an interchange file (JSON Lines, one entity a line in the Azure
Table service's own JSON; gzip-compressed when FILE ends in .gz; "-" for standard output),
from a Tabula data directory (--data, every account's tables and settings) or from any
service the connection string or SAS URL names: Azure Storage, the Cosmos DB Table API,
Azurite, a tabula serve; with its tables go their stored access policies and the account's
service properties, as far as the credential may read them (a SAS may not read a table's
access policies: only the account key may).

An interrupted export resumes where it stopped when run again with the same arguments: it
records how far it got in FILE.state beside FILE, and removes that file when it is done.
On a terminal, a progress line shows tables, entities, the rate and the time.

Flags:
`

const importUsage = `Usage: tabula import [flags] FILE

Reads FILE ("-" for standard input; gzip-compressed when its name ends in .gz) into a
Tabula data directory (--data, made if it does not exist; each account's tables go to the
namespace of its name, the empty name, as "tabula serve" writes its first account's, to the
root) or into any service the connection string or SAS URL names. FILE is an interchange
file (see "tabula export --help") or a fixture a person writes: one JSON document mapping
table names to arrays of entities in the service's JSON, with no header, counts or
Timestamps, for instance

  {"Orders": [{"PartitionKey": "alice", "RowKey": "1", "Total": 12.5,
               "Units@odata.type": "Edm.Int64", "Units": "42"}]}

Into a data directory the import is all or nothing, into new tables and tables that exist
alike, through a bad line, a cut file or a kill: nothing is visible until the whole file has
been read and checked, and then every table at once; the error names the file, the line,
the field and the rule, and a failed import into a new directory leaves none. Into a
service, entities go in transactions of one partition each; a failure deletes the tables
the import created, and an interrupted import (Ctrl-C, a kill) resumes from FILE.state when
run again. With --check, FILE is read and checked by the same rules, and nothing is written.

Flags:
`

// dataFlags are the flags export and import share: where the tables are, and which.
type dataFlags struct {
	dir, conn, sas, account string
	tables, filter          string
	restart                 bool
	progress                string
}

func (d *dataFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&d.dir, "data", "", "a Tabula data `directory` (stop the server using it first)")
	fs.StringVar(&d.conn, "connection-string", "", "a service's `connection string` (default $AZURE_STORAGE_CONNECTION_STRING when no --data or --sas-url)")
	fs.StringVar(&d.sas, "sas-url", "", "a service `URL` with a shared access signature")
	fs.StringVar(&d.tables, "tables", "", "only these tables, `a,b,c`")
	fs.BoolVar(&d.restart, "restart", false, "start over, ignoring the state file of an interrupted run")
	fs.StringVar(&d.progress, "progress", "auto", "progress line: `auto` (on a terminal), on or off")
}

func (d *dataFlags) tableList() []string {
	if d.tables == "" {
		return nil
	}
	return strings.Split(d.tables, ",")
}

// target opens what the command reads or writes: a DB, or a remote service. An export
// reads a database that exists; an import may make one, and undo then removes it (and the
// directory, when the import made that) after db.Close, for a failed import to leave none.
func (d *dataFlags) target(create bool) (db *tabula.DB, svc tabula.ServiceAPI, undo func(), err error) {
	undo = func() {}
	db, svc, err = d.open(create, &undo)
	return db, svc, undo, err
}

func (d *dataFlags) open(create bool, undo *func()) (db *tabula.DB, svc tabula.ServiceAPI, err error) {
	n := 0
	for _, s := range []string{d.dir, d.conn, d.sas} {
		if s != "" {
			n++
		}
	}
	if n == 0 {
		if d.conn = os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); d.conn == "" {
			return nil, nil, errors.New("say where the tables are: --data, --connection-string or --sas-url")
		}
	} else if n > 1 {
		return nil, nil, errors.New("give one of --data, --connection-string and --sas-url")
	}
	switch {
	case d.dir != "":
		entries, err := os.ReadDir(d.dir)
		switch {
		case errors.Is(err, os.ErrNotExist) && create:
			*undo = func() { os.RemoveAll(d.dir) }
		case err == nil && len(entries) == 0 && create:
			*undo = func() { emptyDir(d.dir) }
		case err != nil:
			return nil, nil, fmt.Errorf("--data %s: %w", d.dir, err)
		case !holdsDatabase(entries):
			return nil, nil, fmt.Errorf("--data %s: the directory holds no Tabula database", d.dir)
		}
		db, err = tabula.Open(d.dir, nil)
		if err != nil {
			(*undo)()
		}
		return db, nil, err
	case d.sas != "":
		c, err := remote.DialSAS(d.sas, nil)
		return nil, c, err
	}
	c, err := remote.Dial(d.conn, nil)
	return nil, c, err
}

// holdsDatabase says whether a directory's entries are a database's: the store's manifest
// is among them from the moment it is made.
func holdsDatabase(entries []os.DirEntry) bool {
	return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == "MANIFEST" })
}

// emptyDir removes what a directory holds, leaving it.
func emptyDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// parseArgs parses args by fs, flags before and after the positional arguments alike, and
// returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// checkpointEvery is how many entities pass between the checkpoints a state file records;
// tests lower it.
var checkpointEvery = 10_000

// exportHook, when set (by tests), is called after each checkpoint an export records.
var exportHook func()

// state is what the state file beside FILE records: how far a run got.
type state struct {
	Progress tabula.Progress
	// Offset is the length of FILE at Progress (export).
	Offset int64
}

func statePath(file string) string { return file + ".state" }

func readState(file string) (*state, error) {
	b, err := os.ReadFile(statePath(file))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("state file %s: %w", statePath(file), err)
	}
	return &s, nil
}

// writeState replaces the state file whole (a new file renamed over the old).
func writeState(file string, s state) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := statePath(file) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(file))
}

// meter prints the progress line on a terminal: tables, entities, rate, and the time left
// where the total is known.
type meter struct {
	out   io.Writer
	on    bool
	start time.Time
	last  time.Time
	base  int64 // entities done before this run (a resumed one)
	// fraction, when set, is the share of the work done, for the time left.
	fraction func() float64
}

func newMeter(mode string, out io.Writer) (*meter, error) {
	m := &meter{out: out, start: time.Now()}
	switch mode {
	case "on":
		m.on = true
	case "off":
	case "auto":
		m.on = isTerminal(out)
	default:
		return nil, fmt.Errorf("--progress %q: it must be auto, on or off", mode)
	}
	return m, nil
}

// isTerminal says whether w is a character device, a terminal rather than a pipe or file.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (m *meter) show(p tabula.Progress, final bool) {
	if !m.on || (!final && time.Since(m.last) < 200*time.Millisecond) {
		return
	}
	m.last = time.Now()
	elapsed := time.Since(m.start)
	rate := float64(p.Entities-m.base) / max(elapsed.Seconds(), 1e-3)
	line := fmt.Sprintf("\r%d tables, %d entities, %.0f entities/s, %s", p.Tables, p.Entities, rate, elapsed.Round(time.Second))
	if m.fraction != nil && !final {
		if f := m.fraction(); f > 0.001 {
			left := time.Duration(float64(elapsed) * (1 - f) / f)
			line += fmt.Sprintf(", %s left", left.Round(time.Second))
		}
	}
	if p.InTable {
		line += " (" + p.Table + ")"
	}
	fmt.Fprintf(m.out, "%-100s", line)
	if final {
		fmt.Fprintln(m.out)
	}
}

// swapWriter writes to w, which the export replaces at each checkpoint of a gzip file.
type swapWriter struct{ w io.Writer }

func (s *swapWriter) Write(p []byte) (int, error) { return s.w.Write(p) }

// runExport is "tabula export".
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var d dataFlags
	d.define(fs)
	fs.StringVar(&d.filter, "filter", "", "only the entities this OData `$filter` selects")
	fs.StringVar(&d.account, "account", "", "the account `name` to write in the file for a service's tables (default none, the name \"tabula serve\" reads as its first account's)")
	var namespaces []string // nil: every namespace
	fs.Func("namespaces", "with --data, only the tables of these accounts (namespaces), `a,b`; \"\" alone (or an empty name in the list) is the first account's, the root namespace", func(v string) error {
		for _, ns := range strings.Split(v, ",") {
			if !slices.Contains(namespaces, ns) {
				namespaces = append(namespaces, ns)
			}
		}
		return nil
	})
	files, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, exportUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "tabula export: %v\n", err)
		return 2
	}
	if len(files) != 1 {
		fmt.Fprintf(stderr, "tabula export: give one FILE (%d given)\n", len(files))
		return 2
	}
	if err := export(ctx, &d, namespaces, files[0], stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "tabula export:", message(err))
		return 1
	}
	return 0
}

func export(ctx context.Context, d *dataFlags, namespaces []string, file string, stdout, stderr io.Writer) (err error) {
	m, err := newMeter(d.progress, stderr)
	if err != nil {
		return err
	}
	db, svc, _, err := d.target(false)
	if err != nil {
		return err
	}
	if db != nil {
		defer func() { err = errors.Join(err, db.Close()) }()
	}
	opts := &tabula.ExportOptions{Tables: d.tableList(), Filter: d.filter, Account: d.account, ProgressEvery: checkpointEvery, Namespaces: namespaces}
	run := func(w io.Writer) error {
		if db != nil {
			return db.Export(ctx, w, opts)
		}
		return tabula.ExportService(ctx, svc, w, opts)
	}
	if file == "-" {
		opts.Progress = func(p tabula.Progress) error { m.show(p, false); return nil }
		err := run(stdout)
		return err
	}

	var resume *state
	if !d.restart {
		if resume, err = readState(file); err != nil {
			return err
		}
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if resume != nil {
		flags = os.O_WRONLY
	}
	f, err := os.OpenFile(file, flags, 0o644)
	if err != nil {
		return err
	}
	checkpointed := false
	defer func() {
		err = errors.Join(err, f.Close())
		if err != nil && resume == nil && !checkpointed {
			os.Remove(file) // a failed export leaves no file that a resume does not need
		}
	}()
	if resume != nil {
		fmt.Fprintf(stderr, "Resuming after %d entities (table %q), as %s records.\n", resume.Progress.Entities, resume.Progress.Table, statePath(file))
		if err := f.Truncate(resume.Offset); err != nil {
			return err
		}
		if _, err := f.Seek(resume.Offset, io.SeekStart); err != nil {
			return err
		}
		opts.Resume = &resume.Progress
		m.base = resume.Progress.Entities
	}
	// A gzip file is a series of gzip members, one closed at each checkpoint, so that what
	// a checkpoint records is a whole gzip stream that a resumed run appends to.
	gz := strings.HasSuffix(file, ".gz")
	out := &swapWriter{w: f}
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(f)
		out.w = zw
	}
	opts.Progress = func(p tabula.Progress) error {
		if zw != nil {
			if err := zw.Close(); err != nil {
				return err
			}
			zw = gzip.NewWriter(f)
			out.w = zw
		}
		off, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return err
		}
		m.show(p, false)
		if err := writeState(file, state{Progress: p, Offset: off}); err != nil {
			return err
		}
		checkpointed = true
		if exportHook != nil {
			exportHook()
		}
		return ctx.Err()
	}
	var last tabula.Progress
	progress := opts.Progress
	opts.Progress = func(p tabula.Progress) error { last = p; return progress(p) }
	if err := run(out); err != nil {
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	m.show(last, true)
	if err := os.Remove(statePath(file)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// runImport is "tabula import".
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var d dataFlags
	d.define(fs)
	existing := fs.String("existing", "fail", "what to do with an entity that exists: `fail`, replace, merge or skip")
	keep := fs.Bool("keep-timestamps", false, "keep the file's Timestamps (and ETags) rather than stamp new ones (--data only)")
	bestEffort := fs.Bool("best-effort", false, "leave out the lines that cannot be imported (and access policies a service refuses), and import the whole tables of a cut file")
	check := fs.Bool("check", false, "read and check FILE by the import's rules, writing nothing (no --data or service needed)")
	files, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, importUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "tabula import: %v\n", err)
		return 2
	}
	if len(files) != 1 {
		fmt.Fprintf(stderr, "tabula import: give one FILE (%d given)\n", len(files))
		return 2
	}
	policies := map[string]tabula.Existing{"fail": tabula.ExistingFail, "replace": tabula.ExistingReplace, "merge": tabula.ExistingMerge, "skip": tabula.ExistingSkip}
	policy, ok := policies[*existing]
	if !ok {
		fmt.Fprintf(stderr, "tabula import: --existing %q: it must be fail, replace, merge or skip\n", *existing)
		return 2
	}
	opts := &tabula.ImportOptions{Existing: policy, KeepTimestamps: *keep, BestEffort: *bestEffort, Tables: d.tableList(), ProgressEvery: checkpointEvery}
	file := files[0]
	var p tabula.Progress
	if *check {
		p, err = checkFile(ctx, opts, file)
	} else {
		p, err = importFile(ctx, &d, opts, file, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "tabula import:", importMessage(file, err))
		return 1
	}
	verb := "Imported"
	if *check {
		verb = "Checked"
	}
	fmt.Fprintf(stdout, "%s %d tables, %d entities", verb, p.Tables, p.Entities)
	if p.Skipped > 0 {
		fmt.Fprintf(stdout, " (%d left out)", p.Skipped)
	}
	fmt.Fprintln(stdout)
	return 0
}

// importMessage is an import's error for the command line: a defect of the file names the
// file, and an entity that exists names the flag that imports it.
func importMessage(file string, err error) string {
	msg := message(err)
	if ie := (*tabula.ImportError)(nil); errors.As(err, &ie) {
		msg = file + ": " + msg
	}
	if errors.Is(err, tabula.ErrEntityAlreadyExists) {
		msg += " (--existing replace, merge or skip imports it)"
	}
	return msg
}

// checkFile is "tabula import --check".
func checkFile(ctx context.Context, opts *tabula.ImportOptions, file string) (tabula.Progress, error) {
	r, _, _, closeFile, err := openInterchange(file)
	if err != nil {
		return tabula.Progress{}, err
	}
	defer closeFile()
	return tabula.CheckImport(ctx, r, opts)
}

// countingReader counts the bytes read, for the time left.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// openInterchange opens an interchange file for reading, through gzip when its name ends
// in .gz; size is its length on disk (0 when unknown) and read counts the bytes read of it.
func openInterchange(file string) (r io.Reader, read *countingReader, size int64, closeFn func() error, err error) {
	var f *os.File
	if file == "-" {
		f = os.Stdin
	} else if f, err = os.Open(file); err != nil {
		return nil, nil, 0, nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	read = &countingReader{r: f}
	r = read
	if strings.HasSuffix(file, ".gz") {
		zr, err := gzip.NewReader(read)
		if err != nil {
			f.Close()
			return nil, nil, 0, nil, fmt.Errorf("%s: %w", file, err)
		}
		r = zr
	}
	return r, read, size, f.Close, nil
}

func importFile(ctx context.Context, d *dataFlags, opts *tabula.ImportOptions, file string, stderr io.Writer) (p tabula.Progress, err error) {
	m, err := newMeter(d.progress, stderr)
	if err != nil {
		return p, err
	}
	r, read, size, closeFile, err := openInterchange(file)
	if err != nil {
		return p, err
	}
	defer closeFile()
	if size > 0 {
		m.fraction = func() float64 { return float64(read.n) / float64(size) }
	}
	db, svc, undo, err := d.target(true)
	if err != nil {
		return p, err
	}
	if db != nil {
		defer func() {
			err = errors.Join(err, db.Close())
			if err != nil {
				undo()
			}
		}()
		opts.Progress = func(p tabula.Progress) error { m.show(p, false); return nil }
		p, err = db.Import(ctx, r, opts)
		if err == nil {
			m.show(p, true)
		}
		return p, err
	}
	resumable := file != "-"
	if resumable && !d.restart {
		s, err := readState(file)
		if err != nil {
			return p, err
		}
		if s != nil {
			fmt.Fprintf(stderr, "Resuming after line %d (table %q), as %s records.\n", s.Progress.Line, s.Progress.Table, statePath(file))
			opts.Resume = &s.Progress
			m.base = s.Progress.Entities
		}
	}
	opts.Progress = func(p tabula.Progress) error {
		m.show(p, false)
		if resumable {
			return writeState(file, state{Progress: p})
		}
		return nil
	}
	if p, err = tabula.ImportService(ctx, svc, r, opts); err != nil {
		return p, err
	}
	m.show(p, true)
	if resumable {
		if err := os.Remove(statePath(file)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return p, err
		}
	}
	return p, nil
}

// checkExportPath checks at start that "tabula serve --export-on-exit" will be able to
// write file, so that a path it cannot write is found while the data is still to come,
// not at shutdown, when an in-memory database's data goes: it makes and removes a
// temporary file beside it, as exportOnExit will.
func checkExportPath(file string) error {
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory", file)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".*.tmp")
	if err != nil {
		return err
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}

// exportOnExit writes the database to file for "tabula serve --export-on-exit", through a
// temporary file renamed over it, so that a failed export leaves the last good one.
func exportOnExit(ctx context.Context, db *tabula.DB, file string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	var w io.Writer = tmp
	var zw *gzip.Writer
	if strings.HasSuffix(file, ".gz") {
		zw = gzip.NewWriter(tmp)
		w = zw
	}
	if err := db.Export(ctx, w, nil); err != nil {
		tmp.Close()
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// importAtStart loads file into db for "tabula serve --import", replacing the entities
// that exist and keeping the file's Timestamps, so that a server started from the file it
// exported on exit serves the same ETags. Each account of the file that the server serves
// (accounts) lands in the namespace the server serves it from, whatever the order of
// --accounts; the empty account's (a fixture's, an export of the root namespace) in the
// root namespace, the first account's unless the directory recorded otherwise; any other
// in the namespace of its name.
func importAtStart(ctx context.Context, db *tabula.DB, file string, accounts []string) (tabula.Progress, error) {
	assigned, _, err := db.AssignNamespaces(ctx, accounts)
	if err != nil {
		return tabula.Progress{}, err
	}
	opts := &tabula.ImportOptions{Existing: tabula.ExistingReplace, KeepTimestamps: true, Namespaces: map[string]string{}}
	for account, ns := range assigned {
		opts.Namespaces[account] = ns.Name()
	}
	r, _, _, closeFile, err := openInterchange(file)
	if err != nil {
		return tabula.Progress{}, err
	}
	defer closeFile()
	p, err := db.Import(ctx, r, opts)
	if err != nil {
		return p, errors.New(importMessage(file, err))
	}
	return p, nil
}
