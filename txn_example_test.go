package tabula_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tabuladb/tabula"
)

// A member and their rentals share a partition, so renting a film and counting it happen
// together or not at all. A transaction built on a stale read fails as a whole and names
// the action that failed.
func ExampleTable_SubmitTransaction() {
	ctx := context.Background()
	clock := func() time.Time { return time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC) }
	db, err := tabula.OpenInMemory(&tabula.Options{Clock: clock})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	rentals, err := db.CreateTable(ctx, "Rentals")
	if err != nil {
		panic(err)
	}
	member, err := rentals.Insert(ctx, tabula.Entity{PartitionKey: "member42", RowKey: "Member",
		Properties: tabula.Properties{"Rented": tabula.Int32(0)}})
	if err != nil {
		panic(err)
	}

	rent := func(film string, rented int32, memberETag tabula.ETag) ([]tabula.ActionResult, error) {
		return rentals.SubmitTransaction(ctx, []tabula.Action{
			tabula.InsertAction(tabula.Entity{PartitionKey: "member42", RowKey: "Rental_" + film}),
			tabula.UpdateAction(tabula.Entity{PartitionKey: "member42", RowKey: "Member",
				Properties: tabula.Properties{"Rented": tabula.Int32(rented)}}, tabula.Merge, memberETag),
		})
	}
	results, err := rent("Heat", 1, member.ETag)
	if err != nil {
		panic(err)
	}
	for _, r := range results {
		fmt.Println(r.ETag)
	}

	// member.ETag is stale now: the second action fails, and the first is undone.
	_, err = rent("Up", 1, member.ETag)
	var te *tabula.TransactionError
	if errors.As(err, &te) {
		fmt.Println(te.Index, te.Err.StatusCode, te.Err.Code)
	}
	fmt.Println(errors.Is(err, tabula.ErrUpdateConditionNotSatisfied))
	_, err = rentals.Get(ctx, "member42", "Rental_Up")
	fmt.Println(errors.Is(err, tabula.ErrResourceNotFound))
	// Output:
	// W/"datetime'2024-01-02T03%3A04%3A05.0000002Z'"
	// W/"datetime'2024-01-02T03%3A04%3A05.0000003Z'"
	// 1 412 UpdateConditionNotSatisfied
	// true
	// true
}
