package main

import (
	"compress/gzip"
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

// What "tabula export" (export.go) and "tabula import" (import.go) share: where the tables
// are, the state file of a resumable run, the progress line, and the file's reader.

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

// oneFile parses the flags and the one FILE of import or export: on --help it prints usage
// and the flags; on a mistake it says so. It returns the FILE (as a slice of one), or nil
// and the exit code.
func oneFile(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) ([]string, int) {
	files, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil, 0
		}
		fmt.Fprintf(stderr, "tabula %s: %v\n", fs.Name(), err)
		return nil, 2
	}
	if len(files) != 1 {
		fmt.Fprintf(stderr, "tabula %s: give one FILE (%d given)\n", fs.Name(), len(files))
		return nil, 2
	}
	return files, 0
}
