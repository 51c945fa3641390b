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

const checkUsage = `Usage: tabula check --data DIR

Opens the database in DIR as "tabula serve" would (finishing what a crash left, such as the
deletion of a dropped table's data) and verifies it: every block of every table file and
every value against its checksum, the logs, every record's decoding, and the database's
invariants (every entity belongs to a table, the table-ID counter and the clock are ahead of
the data). It prints each problem found, damaged files with the tables and keys they hold,
and what to do, and exits 0 when there is none and 1 when there is any. Stop the server that
uses DIR first: a directory has one user at a time.

A damaged database can be restored from a snapshot or an export, or what is readable of it
copied into a new directory with "tabula salvage --data DIR --to NEWDIR".
`

// runCheck is "tabula check".
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("data", "", "the database's directory")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, checkUsage)
			return 0
		}
		fmt.Fprintf(stderr, "tabula check: %v\n%s", err, checkUsage)
		return 2
	}
	if *dir == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, checkUsage)
		return 2
	}
	// Open creates a missing directory; a check of one that does not exist is a mistake.
	if _, err := os.Stat(*dir); err != nil {
		fmt.Fprintf(stderr, "tabula check: %v\n", err)
		return 1
	}
	db, err := tabula.Open(*dir, nil)
	if err != nil {
		fmt.Fprintln(stderr, "tabula check:", message(err))
		if errors.Is(err, tabula.ErrDamaged) {
			fmt.Fprintf(stdout, "problem: %s\n", message(err))
			fmt.Fprintf(stdout, "what to do: restore the database from a snapshot or an export, or copy what is readable with \"tabula salvage --data %s --to NEWDIR\"\n", *dir)
		}
		return 1
	}
	err = db.Check(ctx)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			if strings.HasPrefix(line, "what to do: ") {
				fmt.Fprintln(stdout, line)
			} else {
				fmt.Fprintln(stdout, "problem:", message(errors.New(line)))
			}
		}
		return 1
	}
	fmt.Fprintf(stdout, "%s: no problem found\n", *dir)
	return 0
}
