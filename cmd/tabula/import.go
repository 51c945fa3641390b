package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tabuladb/tabula"
)

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

(the tables of the account ""; another account's go in an object of its name, in place of
the arrays: {"shop": {"Orders": […]}}).

Into a data directory the import is all or nothing, into new tables and tables that exist
alike, through a bad line, a cut file or a kill: nothing is visible until the whole file has
been read and checked, and then every table at once; the error names the file, the line,
the field and the rule, and a failed import into a new directory leaves none. Into a
service, entities go in transactions of one partition each; a failure deletes the tables
the import created, and an interrupted import (Ctrl-C, a kill) resumes from FILE.state when
run again. With --check, FILE is read and checked by the same rules, and nothing is written.

Flags:
`

// runImport is "tabula import".
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var d dataFlags
	d.define(fs)
	existing := fs.String("existing", "fail", "what to do with an entity that exists: `fail`, replace, merge or skip")
	keep := fs.Bool("keep-timestamps", false, "keep the file's Timestamps (and ETags) rather than stamp new ones (--data only)")
	bestEffort := fs.Bool("best-effort", false, "leave out the lines that cannot be imported (and access policies a service refuses), and import the whole tables of a cut file")
	fs.StringVar(&d.filter, "filter", "", "only the entities this OData `$filter` selects, as the file has them (its Timestamps); the others are left out")
	check := fs.Bool("check", false, "read and check FILE by the import's rules, writing nothing (no --data or service needed)")
	files, code := oneFile(fs, args, importUsage, stdout, stderr)
	if files == nil {
		return code
	}
	policies := map[string]tabula.Existing{"fail": tabula.ExistingFail, "replace": tabula.ExistingReplace, "merge": tabula.ExistingMerge, "skip": tabula.ExistingSkip}
	policy, ok := policies[*existing]
	if !ok {
		fmt.Fprintf(stderr, "tabula import: --existing %q: it must be fail, replace, merge or skip\n", *existing)
		return 2
	}
	if d.filter != "" {
		// Checked on an empty fixture, before anything is opened or read.
		if _, err := tabula.CheckImport(ctx, strings.NewReader("{}"), &tabula.ImportOptions{Filter: d.filter}); err != nil {
			fmt.Fprintf(stderr, "tabula import: --filter: %s\n", message(err))
			return 2
		}
	}
	opts := &tabula.ImportOptions{Existing: policy, KeepTimestamps: *keep, BestEffort: *bestEffort, Tables: d.tableList(), Filter: d.filter, ProgressEvery: checkpointEvery}
	file := files[0]
	var (
		p   tabula.Progress
		err error
	)
	if *check {
		p, err = checkFile(ctx, opts, file)
	} else {
		p, err = importFile(ctx, &d, opts, file, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "tabula import:", importMessage(file, err, true))
		return 1
	}
	verb := "Imported"
	if *check {
		verb = "Checked"
	}
	fmt.Fprintf(stdout, "%s %s, %s", verb, count(p.Tables, "table"), count(p.Entities, "entity"))
	if p.Skipped > 0 {
		fmt.Fprintf(stdout, " (%d left out)", p.Skipped)
	}
	fmt.Fprintln(stdout)
	return 0
}

// importMessage is an import's error for the command line: a defect of the file names the
// file, and, where a flag changes the outcome, the flag (flags: those of the command that
// ran it; serve --import has none of them).
func importMessage(file string, err error, flags bool) string {
	msg := message(err)
	ie := (*tabula.ImportError)(nil)
	if errors.As(err, &ie) {
		msg = file + ": " + msg
	}
	switch {
	case !flags || ie == nil:
	case errors.Is(err, tabula.ErrEntityAlreadyExists):
		msg += " (--existing replace, merge or skip imports it)"
	case ie.Truncated:
		msg += " (--best-effort imports the tables whole before the cut)"
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
		// The command opened the database for the import alone.
		opts.Exclusive = true
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

// importAtStart loads file into db for "tabula serve --import", replacing the entities
// that exist and keeping the file's Timestamps, so that a server started from the file it
// exported on exit serves the same ETags. Each account of the file that the server serves
// (accounts) lands in the namespace the server serves it from, whatever the order of
// --accounts; the empty account's (a fixture's, an export of the root namespace) in the
// root namespace, the first account's unless the directory recorded otherwise; any other
// in the namespace of its name.
func importAtStart(ctx context.Context, db *tabula.DB, file string, accounts []string) (tabula.Progress, error) {
	assigned, _, err := db.AccountNamespaces(ctx, accounts)
	if err != nil {
		return tabula.Progress{}, err
	}
	// Nothing is served before the import ends: it has the database to itself.
	opts := &tabula.ImportOptions{Existing: tabula.ExistingReplace, KeepTimestamps: true, Namespaces: map[string]string{}, Exclusive: true}
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
		return p, errors.New(importMessage(file, err, false))
	}
	return p, nil
}
