package tabula_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
)

// Retry gets an insert through injected ServerBusy faults (three in a row here), waiting with
// the backoff of "Design a scalable partitioning strategy for Azure Table storage". Its sample
// values, a fixed draw and a Sleep that only records make the waits exact: 27 s, then 75 s,
// then the 90 s cap. Nothing but the root package is needed to retry; partition only
// configures the faults.
func ExampleRetry() {
	ctx := context.Background()
	db, _ := tabula.OpenInMemory(&tabula.Options{
		Faults: partition.Faults{Seed: 2, ServerBusy: 0.75, Kinds: partition.Kinds(partition.KindInsert)},
	})
	defer db.Close()
	t, _ := db.CreateTable(ctx, "Orders")

	var waited []time.Duration
	policy := tabula.Backoff{
		Base: 30 * time.Second, Min: 3 * time.Second, Max: 90 * time.Second, MaxAttempts: 10,
		Rand: func() float64 { return 0 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			waited = append(waited, d)
			return ctx.Err()
		},
	}
	err := tabula.Retry(ctx, policy, func() error {
		_, err := t.Insert(ctx, tabula.Entity{PartitionKey: "customer-42", RowKey: "order-1"})
		return err
	})
	fmt.Println(err, waited)
	// Output: <nil> [27s 1m15s 1m30s]
}
