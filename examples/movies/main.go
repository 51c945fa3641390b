// Movies walks through the Movies example of the Azure Tables case study ("How to get most
// out of Windows Azure Tables") on Tabula: create the table, insert, point get, merge,
// replace, a conditional update that loses to a concurrent writer, upsert and delete,
// printing what happens at each step.
//
//	go run ./examples/movies              # in memory
//	go run ./examples/movies -data DIR    # on disk; run it twice to see the data come back
//	go run ./examples/movies -remote "$CONNECTION_STRING"
//
// The walk-through itself is written against tabula.ServiceAPI, so with -remote the same
// code runs against a table service (tabula serve, Azurite, an Azure Storage account)
// through package remote, and prints the same lines, ETags aside.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
)

func main() {
	dir := flag.String("data", "", "keep the database in this directory instead of in memory")
	conn := flag.String("remote", "", "run against the table service this connection string names, instead of an embedded database")
	flag.Parse()
	var err error
	if *conn != "" {
		err = runRemote(context.Background(), os.Stdout, *conn, nil)
	} else {
		err = run(context.Background(), *dir)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// runRemote runs the walk-through on the service a connection string names.
func runRemote(ctx context.Context, out io.Writer, connectionString string, opts *remote.Options) error {
	svc, err := remote.Dial(connectionString, opts)
	if err != nil {
		return err
	}
	return walk(ctx, out, svc)
}

// run runs the walk-through on an embedded database, in memory or in dir.
func run(ctx context.Context, dir string) error {
	return runEmbedded(ctx, os.Stdout, dir)
}

func runEmbedded(ctx context.Context, out io.Writer, dir string) error {
	var (
		db  *tabula.DB
		err error
	)
	if dir == "" {
		db, err = tabula.OpenInMemory(nil)
	} else {
		db, err = tabula.Open(dir, nil)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	return walk(ctx, out, tabula.Embedded(db))
}

// walk is the walk-through, on either backend.
func walk(ctx context.Context, out io.Writer, db tabula.ServiceAPI) error {
	// Movie category is the PartitionKey, title the RowKey.
	movies, err := db.CreateTable(ctx, "Movies")
	switch {
	case errors.Is(err, tabula.ErrTableAlreadyExists):
		fmt.Fprintln(out, "table Movies already exists (from an earlier run); starting over")
		if err := db.DeleteTable(ctx, "Movies"); err != nil {
			return err
		}
		if movies, err = db.CreateTable(ctx, "Movies"); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		fmt.Fprintln(out, "created table Movies")
	}

	copOut := tabula.Entity{PartitionKey: "Action", RowKey: "Cop Out", Properties: tabula.Properties{
		"ReleaseYear": tabula.Int32(2010),
		"Rating":      tabula.Double(4.0),
		"Language":    tabula.String("English"),
		"Favorite":    tabula.Boolean(false),
	}}
	inserted, err := movies.Insert(ctx, copOut)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "inserted %s/%s, ETag %s\n", inserted.PartitionKey, inserted.RowKey, inserted.ETag)

	_, err = movies.Insert(ctx, copOut)
	fmt.Fprintln(out, "inserting it again:", describe(err))

	got, err := movies.Get(ctx, "Action", "Cop Out")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "point get:", show(got))

	// Merge touches only the properties it carries; a nil value is ignored, as the service
	// ignores nulls, so Language stays.
	etag, err := movies.Update(ctx, tabula.Entity{PartitionKey: "Action", RowKey: "Cop Out",
		Properties: tabula.Properties{"Favorite": tabula.Boolean(true), "Language": nil}}, tabula.Merge, got.ETag)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "merged Favorite=true, new ETag", etag)

	// Replace drops whatever it does not carry.
	if _, err := movies.Update(ctx, tabula.Entity{PartitionKey: "Action", RowKey: "Cop Out",
		Properties: tabula.Properties{"ReleaseYear": tabula.Int32(2010), "Rating": tabula.Double(3.5)}}, tabula.Replace, etag); err != nil {
		return err
	}
	got, _ = movies.Get(ctx, "Action", "Cop Out")
	fmt.Fprintln(out, "replaced:", show(got))

	// The ETag read before the merge is stale now: the update is refused and nothing changes.
	_, err = movies.Update(ctx, tabula.Entity{PartitionKey: "Action", RowKey: "Cop Out",
		Properties: tabula.Properties{"Rating": tabula.Double(1)}}, tabula.Merge, inserted.ETag)
	fmt.Fprintln(out, "update with a stale ETag:", describe(err))

	// Upsert: InsertOrMerge creates, then merges.
	for _, p := range []tabula.Properties{{"Rating": tabula.Double(4.8)}, {"Language": tabula.String("French")}} {
		if _, err := movies.Upsert(ctx, tabula.Entity{PartitionKey: "Drama", RowKey: "Amelie", Properties: p}, tabula.Merge); err != nil {
			return err
		}
	}
	got, _ = movies.Get(ctx, "Drama", "Amelie")
	fmt.Fprintln(out, "after two InsertOrMerge:", show(got))

	// An unconditional delete (AnyETag), then the point get misses.
	if err := movies.Delete(ctx, "Action", "Cop Out", tabula.AnyETag); err != nil {
		return err
	}
	_, err = movies.Get(ctx, "Action", "Cop Out")
	fmt.Fprintln(out, "get after delete:", describe(err))

	_, err = movies.Insert(ctx, tabula.Entity{PartitionKey: "Action/Adventure", RowKey: "Heat"})
	fmt.Fprintln(out, "a key with '/':", describe(err))
	return nil
}

func describe(err error) string {
	var te *tabula.Error
	if errors.As(err, &te) {
		return fmt.Sprintf("%d %s (%s)", te.StatusCode, te.Code, te.Message)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return "unexpected error"
	}
	return "ok"
}

func show(e tabula.Entity) string {
	names := make([]string, 0, len(e.Properties))
	for n := range e.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	s := e.PartitionKey + "/" + e.RowKey
	for _, n := range names {
		s += fmt.Sprintf(" %s=%v", n, e.Properties[n])
	}
	return s
}
