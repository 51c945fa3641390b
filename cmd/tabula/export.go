package main

import (
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tabuladb/tabula"
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
On a terminal, a progress line shows tables, entities, the rate and the time; with --data,
the time left too (the entities are counted first).

Flags:
`

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
	files, code := oneFile(fs, args, exportUsage, stdout, stderr)
	if files == nil {
		return code
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
	var exported int64 // the entities the last Progress counted, for the time left
	if m.on && db != nil {
		// A count of the keys first (a scan much cheaper than the export's), for the time
		// left; a service's would cost a query of every entity, so it gets none.
		if total, err := exportTotal(ctx, db, opts); err == nil && total > 0 {
			m.fraction = func() float64 { return float64(exported) / float64(total) }
		}
	}
	run := func(w io.Writer) error {
		if db != nil {
			return db.Export(ctx, w, opts)
		}
		return tabula.ExportService(ctx, svc, w, opts)
	}
	if file == "-" {
		opts.Progress = func(p tabula.Progress) error { exported = p.Entities; m.show(p, false); return nil }
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
		exported = p.Entities
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
	// Said on a terminal or not: a script's log shows what was written.
	fmt.Fprintf(stdout, "Exported %s, %s to %s.\n", count(last.Tables, "table"), count(last.Entities, "entity"), file)
	return nil
}

// exportTotal counts the entities an export of db by opts writes.
func exportTotal(ctx context.Context, db *tabula.DB, opts *tabula.ExportOptions) (int64, error) {
	namespaces := opts.Namespaces
	if namespaces == nil {
		more, err := db.Namespaces(ctx)
		if err != nil {
			return 0, err
		}
		namespaces = append([]string{""}, more...)
	}
	var total int64
	for _, ns := range namespaces {
		for info, err := range db.Namespace(ns).Tables(ctx, "") {
			if err != nil {
				return 0, err
			}
			if opts.Tables != nil && !slices.ContainsFunc(opts.Tables, func(t string) bool { return strings.EqualFold(t, info.Name) }) {
				continue
			}
			n, err := tabula.Count(ctx, db.Namespace(ns).Table(info.Name), opts.Filter)
			if err != nil {
				return 0, err
			}
			total += n
		}
	}
	return total, nil
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
