package tabula_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
)

// With limits enforced, a hot PartitionKey is throttled like on the service; a fake clock
// makes it exact.
func ExampleOptions_limits() {
	ctx := context.Background()
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	db, _ := tabula.OpenInMemory(&tabula.Options{
		Clock:  func() time.Time { return now },
		Limits: partition.Limits{Mode: partition.LimitEnforce},
	})
	defer db.Close()
	logs, _ := db.CreateTable(ctx, "Logs")

	written, busy := 0, 0
	for i := range 2500 { // 2,500 inserts within one second into one partition
		_, err := logs.Insert(ctx, tabula.Entity{PartitionKey: "today", RowKey: fmt.Sprintf("%04d", i)})
		switch {
		case err == nil:
			written++
		case errors.Is(err, tabula.ErrServerBusy):
			busy++
		}
	}
	fmt.Println(written, "written,", busy, "refused with ServerBusy")
	// Output: 2000 written, 500 refused with ServerBusy
}

// Forced continuations exercise a client's paging code; QueryAll follows them.
func ExampleOptions_faults() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(&tabula.Options{Faults: partition.Faults{ContinuationEvery: 2}})
	defer db.Close()
	t, _ := db.CreateTable(ctx, "Paged")
	for _, rk := range []string{"a", "b", "c", "d", "e"} {
		t.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: rk})
	}
	page, _ := t.Query(ctx, tabula.Query{})
	fmt.Println(len(page.Entities), "entities and a token:", !page.Continuation.IsZero())
	n := 0
	for range t.QueryAll(ctx, tabula.Query{}) {
		n++
	}
	fmt.Println(n, "in all")
	// Output:
	// 2 entities and a token: true
	// 5 in all
}
