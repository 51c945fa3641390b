package tabula_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tabuladb/tabula"
)

// A fixed clock makes Timestamps and ETags reproducible.
func fixedClock() time.Time { return time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC) }

func Example() {
	ctx := context.Background()
	db, err := tabula.OpenInMemory(&tabula.Options{Clock: fixedClock})
	if err != nil {
		panic(err)
	}
	defer db.Close()

	movies, err := db.CreateTable(ctx, "Movies")
	if err != nil {
		panic(err)
	}
	_, err = movies.Insert(ctx, tabula.Entity{
		PartitionKey: "Action",
		RowKey:       "Cop Out",
		Properties: tabula.Properties{
			"ReleaseYear": tabula.Int32(2010),
			"Rating":      tabula.Double(4.5),
		},
	})
	if err != nil {
		panic(err)
	}

	e, err := movies.Get(ctx, "Action", "Cop Out")
	if err != nil {
		panic(err)
	}
	fmt.Println(e.RowKey, e.Properties["ReleaseYear"], e.Properties["Rating"])
	fmt.Println(e.ETag)
	// Output:
	// Cop Out 2010 4.5
	// W/"datetime'2024-01-02T03%3A04%3A05.0000001Z'"
}

// Optimistic concurrency: an update made with an ETag fails once someone else has written.
func ExampleTable_Update() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(nil)
	defer db.Close()
	movies, _ := db.CreateTable(ctx, "Movies")
	movies.Insert(ctx, tabula.Entity{PartitionKey: "Action", RowKey: "Heat"})

	mine, _ := movies.Get(ctx, "Action", "Heat")
	theirs, _ := movies.Get(ctx, "Action", "Heat")

	theirs.Properties["Favorite"] = tabula.Boolean(true)
	if _, err := movies.Update(ctx, theirs, tabula.Merge, theirs.ETag); err != nil {
		panic(err)
	}

	mine.Properties["Rating"] = tabula.Double(5)
	_, err := movies.Update(ctx, mine, tabula.Merge, mine.ETag)
	fmt.Println(errors.Is(err, tabula.ErrUpdateConditionNotSatisfied))
	var te *tabula.Error
	if errors.As(err, &te) {
		fmt.Println(te.StatusCode, te.Code)
	}
	// Output:
	// true
	// 412 UpdateConditionNotSatisfied
}

// Upsert is the service's InsertOrReplace and InsertOrMerge.
func ExampleTable_Upsert() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(nil)
	defer db.Close()
	movies, _ := db.CreateTable(ctx, "Movies")

	movies.Upsert(ctx, tabula.Entity{PartitionKey: "Drama", RowKey: "Up",
		Properties: tabula.Properties{"Rating": tabula.Double(4)}}, tabula.Merge)
	movies.Upsert(ctx, tabula.Entity{PartitionKey: "Drama", RowKey: "Up",
		Properties: tabula.Properties{"Language": tabula.String("English")}}, tabula.Merge)

	e, _ := movies.Get(ctx, "Drama", "Up")
	fmt.Println(e.Properties["Rating"], e.Properties["Language"])
	// Output: 4 English
}

// Rejected input carries the service's code and a detail naming the field and the limit.
func ExampleError() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(nil)
	defer db.Close()
	movies, _ := db.CreateTable(ctx, "Movies")

	_, err := movies.Insert(ctx, tabula.Entity{PartitionKey: "Action/Adventure", RowKey: "Heat"})
	fmt.Println(err)
	// Output: tabula: PartitionKey "Action/Adventure" contains U+002F, which keys may not contain (OutOfRangeInput)
}

// A fake or a wrapper of a table answers with the service's errors by deriving them from
// the sentinels, so callers' errors.Is checks hold.
func ExampleError_WithDetail() {
	err := tabula.ErrEntityTooLarge.WithDetail("entity %q is %d bytes", "Heat", 2<<20)
	fmt.Println(err)
	fmt.Println(errors.Is(err, tabula.ErrEntityTooLarge), err.StatusCode, tabula.ErrEntityTooLarge.Detail == "")
	// Output:
	// tabula: entity "Heat" is 2097152 bytes (EntityTooLarge)
	// true 400 true
}
