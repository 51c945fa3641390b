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

const salvageUsage = `Usage: tabula salvage --data DIR --to NEWDIR

Copies every entity, table, access policy and service property that can still be read from
the damaged database in DIR into a new database in NEWDIR, and lists what could not be read
(each damaged file, with the tables and keys it held where they are known). DIR is never
written: the copy reads past damage that keeps "tabula serve" and "tabula check" from opening
it (a damaged MANIFEST, log or table index), and keeps every block of a damaged table that
passes its checksum. NEWDIR must not exist or be empty. Stop the server that uses DIR first.

It exits 0 when everything was copied, 1 when something could not be read or the new database
has problems (both listed), and 2 for a mistake in the command. Serve the new database with
"tabula serve --data NEWDIR" once you have read the list.
`

// runSalvage is "tabula salvage".
func runSalvage(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("salvage", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("data", "", "the damaged database's directory")
	to := fs.String("to", "", "the directory of the new database")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, salvageUsage)
			return 0
		}
		fmt.Fprintf(stderr, "tabula salvage: %v\n%s", err, salvageUsage)
		return 2
	}
	if *dir == "" || *to == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, salvageUsage)
		return 2
	}
	if _, err := os.Stat(*dir); err != nil {
		fmt.Fprintf(stderr, "tabula salvage: --data: %v\n", err)
		return 2
	}
	if entries, err := os.ReadDir(*to); err == nil && len(entries) > 0 {
		fmt.Fprintf(stderr, "tabula salvage: --to %s is not empty: name a new directory\n", *to)
		return 2
	}
	r, err := tabula.Salvage(ctx, *dir, *to)
	if err != nil {
		fmt.Fprintln(stderr, "tabula salvage:", message(err))
		return 1
	}
	fmt.Fprintf(stdout, "%s: %d entities copied to %s\n", *dir, r.Entities, *to)
	for _, lost := range r.Lost {
		fmt.Fprintln(stdout, "lost:", lost)
	}
	if r.Problems != nil {
		for _, line := range strings.Split(r.Problems.Error(), "\n") {
			fmt.Fprintln(stdout, "problem in the new database:", line)
		}
	}
	if len(r.Lost) > 0 || r.Problems != nil {
		return 1
	}
	return 0
}
