package tabula_test

import (
	"context"
	"fmt"

	"github.com/tabuladb/tabula"
)

// A Filter is built from typed values, escaped: the quote in the title cannot end the
// literal, whatever the text.
func ExampleAnd() {
	title := "Ocean's Eleven"
	f := tabula.And(tabula.Eq("PartitionKey", tabula.String("Heist")), tabula.Eq("RowKey", tabula.String(title)),
		tabula.Or(tabula.Gt("Rating", tabula.Double(4)), tabula.Eq("Year", tabula.Int64(2001))))
	fmt.Println(f)
	// Output:
	// PartitionKey eq 'Heist' and RowKey eq 'Ocean''s Eleven' and (Rating gt 4.0 or Year eq 2001L)
}

// SubmitBulk writes any number of actions as valid transactions; Count and DeletePartition
// work on a partition without a loop of your own.
func ExampleSubmitBulk() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(nil)
	defer db.Close()
	events, _ := db.CreateTable(ctx, "Events")

	var actions []tabula.Action
	for i := range 250 {
		actions = append(actions, tabula.InsertAction(tabula.Entity{
			PartitionKey: fmt.Sprintf("device%d", i%2), RowKey: fmt.Sprintf("%04d", i)}))
	}
	results, err := tabula.SubmitBulk(ctx, events, actions)
	fmt.Println(len(results), "transactions, error:", err)

	n, _ := tabula.Count(ctx, events, tabula.Eq("PartitionKey", tabula.String("device0")).String())
	fmt.Println(n, "events of device0")
	deleted, _ := tabula.DeletePartition(ctx, events, "device0")
	left, _ := tabula.Count(ctx, events, "")
	fmt.Println(deleted, "deleted,", left, "left")
	// Output:
	// 4 transactions, error: <nil>
	// 125 events of device0
	// 125 deleted, 125 left
}
