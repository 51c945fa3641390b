package tabula_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tabuladb/tabula"
)

// A fixture seeded once gives every test a database of its own: Open copies an in-memory
// snapshot in microseconds, whatever it holds, and writes to one copy reach no other.
func ExampleSnapshot_Open() {
	ctx := context.Background()
	seed, err := tabula.OpenInMemory(nil)
	if err != nil {
		panic(err)
	}
	movies, err := seed.CreateTable(ctx, "Movies")
	if err != nil {
		panic(err)
	}
	if _, err := movies.Insert(ctx, tabula.Entity{PartitionKey: "Action", RowKey: "Cop Out"}); err != nil {
		panic(err)
	}
	fixture, err := seed.Snapshot(ctx)
	if err != nil {
		panic(err)
	}
	seed.Close() // the snapshot outlives the database it was taken of

	a, err := fixture.Open(nil)
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := fixture.Open(nil)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	if _, err := a.Table("Movies").Insert(ctx, tabula.Entity{PartitionKey: "Action", RowKey: "Heat"}); err != nil {
		panic(err)
	}
	for _, db := range []*tabula.DB{a, b} {
		n, err := tabula.Count(ctx, db.Table("Movies"), "")
		if err != nil {
			panic(err)
		}
		fmt.Println(n)
	}
	// Output:
	// 2
	// 1
}

// Restore puts an in-memory database back to a snapshot at once: a suite resets to its
// fixture between tests.
func ExampleDB_Restore() {
	ctx := context.Background()
	db, err := tabula.OpenInMemory(nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	movies, err := db.CreateTable(ctx, "Movies")
	if err != nil {
		panic(err)
	}
	fixture, err := db.Snapshot(ctx)
	if err != nil {
		panic(err)
	}
	if _, err := movies.Insert(ctx, tabula.Entity{PartitionKey: "Action", RowKey: "Heat"}); err != nil {
		panic(err)
	}
	if err := db.Restore(ctx, fixture); err != nil {
		panic(err)
	}
	_, err = movies.Get(ctx, "Action", "Heat")
	fmt.Println(errors.Is(err, tabula.ErrResourceNotFound))
	// Output:
	// true
}

// A snapshot reads every table of every namespace, with its entities, access policies and
// service properties, as of one instant, while the database goes on serving writes: what an
// export or a backup reads.
func ExampleSnapshot_Tables() {
	ctx := context.Background()
	db, err := tabula.OpenInMemory(nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	for _, ns := range []string{"", "alice"} {
		t, err := db.Namespace(ns).CreateTable(ctx, "Movies")
		if err != nil {
			panic(err)
		}
		if _, err := t.Insert(ctx, tabula.Entity{PartitionKey: "Action", RowKey: ns + "Heat",
			Properties: tabula.Properties{"Year": tabula.Int32(1995)}}); err != nil {
			panic(err)
		}
	}
	snap, err := db.Snapshot(ctx)
	if err != nil {
		panic(err)
	}
	defer snap.Close()
	if err := db.DeleteTable(ctx, "Movies"); err != nil { // the snapshot still has it
		panic(err)
	}
	for t, err := range snap.Tables(ctx) {
		if err != nil {
			panic(err)
		}
		for e, err := range snap.Entities(ctx, t) {
			if err != nil {
				panic(err)
			}
			fmt.Printf("%q %s %s/%s %v\n", t.Namespace, t.Name, e.PartitionKey, e.RowKey, e.Properties["Year"])
		}
	}
	// Output:
	// "" Movies Action/Heat 1995
	// "alice" Movies Action/aliceHeat 1995
}
