package tabula

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tabuladb/tabula/partition"
)

// Retry gets through injected ServerBusy faults with the backoff of "Design a scalable partitioning
// strategy for Azure Table storage", waiting on an injected sleep; it does not retry errors the
// service says not to.
func TestRetry(t *testing.T) {
	ctx := context.Background()
	db := openStore(t, &Options{Faults: partition.Faults{Seed: 3, ServerBusy: 0.5, Kinds: partition.Kinds(partition.KindInsert)}})
	var err error
	tbl := createTable(t, db, "Retries")
	var waits []time.Duration
	policy := Backoff{MaxAttempts: 20, Rand: func() float64 { return 0.5 },
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
	for i := range 20 {
		err := Retry(ctx, policy, func() error {
			_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)})
			return err
		})
		require.NoError(t, err)
	}
	require.NotEmpty(t, waits, "some inserts were refused and retried")
	assert.Equal(t, policy.Delay(1, 0.5), waits[0], "the first wait follows the formula")

	calls := 0
	err = Retry(ctx, policy, func() error {
		calls++
		_, err := tbl.Update(ctx, Entity{PartitionKey: "p", RowKey: "missing"}, Replace, AnyETag)
		return err
	})
	assert.ErrorIs(t, err, ErrResourceNotFound)
	assert.Equal(t, 1, calls, "a 404 is not retried")
	assert.True(t, IsRetryable(ErrOperationTimedOut.WithDetail("x")))
	assert.False(t, IsRetryable(ErrNotImplemented))
}
