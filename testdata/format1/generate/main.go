// Command generate writes testdata/format1/db: a small database in the first release's
// format (commit cce054d, "Core engine"), for the upgrade test in format_test.go. It builds
// only against that commit's API; see testdata/format1/README.md.
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/tabuladb/tabula"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: generate DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(dir string) error {
	// A fixed clock, one second per reading, so the Timestamps are known.
	now := time.Date(2026, 11, 21, 23, 30, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Second); return now }
	db, err := tabula.Open(dir, &tabula.Options{Clock: clock})
	if err != nil {
		return err
	}
	ctx := context.Background()
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	mk := func(name string) *tabula.Table {
		t, err := db.CreateTable(ctx, name)
		must(err)
		return t
	}
	ins := func(t *tabula.Table, pk, rk string, p tabula.Properties) {
		_, err := t.Insert(ctx, tabula.Entity{PartitionKey: pk, RowKey: rk, Properties: p})
		must(err)
	}
	guid, err := tabula.ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")
	must(err)

	movies := mk("Movies")
	ins(movies, "Nolan", "Inception", tabula.Properties{
		"Title":    tabula.String("Inception"),
		"Year":     tabula.Int32(2010),
		"Gross":    tabula.Int64(836_800_000),
		"Rating":   tabula.Double(8.8),
		"Released": tabula.DateTime(time.Date(2010, 7, 16, 0, 0, 0, 0, time.UTC)),
		"Color":    tabula.Boolean(true),
		"Id":       guid,
		"Poster":   tabula.Binary{0x89, 'P', 'N', 'G', 0x00, 0xff},
	})
	ins(movies, "Nolan", "Memento", tabula.Properties{"Year": tabula.Int32(2000), "Color": tabula.Boolean(false)})
	ins(movies, "Nolan", "Tenet", tabula.Properties{"Year": tabula.Int32(2020)})
	ins(movies, "Varda", "Cléo de 5 à 7", tabula.Properties{
		"Year":   tabula.Int32(1962),
		"Rating": tabula.Double(math.Inf(1)),
		"Min":    tabula.Int64(math.MinInt64),
		"Early":  tabula.DateTime(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)),
	})
	// An update (merge) and a deletion, so the records are not all first writes.
	_, err = movies.Upsert(ctx, tabula.Entity{PartitionKey: "Nolan", RowKey: "Memento",
		Properties: tabula.Properties{"Rating": tabula.Double(8.4)}}, tabula.Merge)
	must(err)
	must(movies.Delete(ctx, "Nolan", "Tenet", "*"))

	people := mk("people")
	ins(people, "Zoë", "🎬 director", tabula.Properties{"Name": tabula.String("日本語の名前")})
	ins(people, "", "", tabula.Properties{"Empty": tabula.String("")})

	// A table deleted long before Close (its data dropped), then a new table of the same name.
	old := mk("Archive")
	ins(old, "p", "gone", tabula.Properties{"N": tabula.Int32(1)})
	must(db.DeleteTable(ctx, "Archive"))
	time.Sleep(time.Second) // the background drop finishes
	again := mk("ARCHIVE")
	ins(again, "p", "kept", tabula.Properties{"N": tabula.Int32(2)})

	// A table deleted just before Close: its drop marker may still be there for the next Open.
	scratch := mk("Scratch")
	for i := range 20 {
		ins(scratch, "p", fmt.Sprintf("%03d", i), tabula.Properties{"I": tabula.Int32(int32(i))})
	}
	must(db.DeleteTable(ctx, "Scratch"))
	return db.Close()
}
