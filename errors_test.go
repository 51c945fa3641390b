package tabula

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// A ServerBusy says which limit refused it: the PartitionKey's or the account's. Both are
// ServerBusy for errors.Is and on the wire.
func TestServerBusySaysPartitionOrAccount(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	db := openStore(t, &Options{Clock: clock.Now, Limits: partition.Limits{Mode: partition.LimitEnforce,
		PartitionRate: 10, AccountRate: 15}})
	var err error
	tbl := createTable(t, db, "Busy")
	refusal := func(pk string) error {
		for range 100 {
			if _, err := tbl.Upsert(ctx, Entity{PartitionKey: pk, RowKey: "r"}, Merge); err != nil {
				return err
			}
		}
		t.Fatalf("PartitionKey %q was never refused", pk)
		return nil
	}
	// One PartitionKey alone runs out of its own 10 entities first.
	err = refusal("a")
	assert.ErrorIs(t, err, ErrPartitionBusy)
	assert.NotErrorIs(t, err, ErrAccountBusy)
	assert.ErrorIs(t, err, ErrServerBusy)
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "ServerBusy", te.Code)
	assert.Equal(t, 503, te.StatusCode)

	// A fresh PartitionKey still has its 10, but the account has only 5 of its 15 left.
	err = refusal("b")
	assert.ErrorIs(t, err, ErrAccountBusy)
	assert.NotErrorIs(t, err, ErrPartitionBusy)
	assert.ErrorIs(t, err, ErrServerBusy)

	// A ServerBusy of no particular cause matches neither.
	assert.NotErrorIs(t, storageError(storage.ErrContention), ErrPartitionBusy)
	assert.ErrorIs(t, storageError(storage.ErrContention), ErrServerBusy)
}

// The narrowed sentinels are their parent on the wire and for errors.Is, and tell their
// causes apart from one another.
func TestNarrowedSentinels(t *testing.T) {
	narrowed := []struct {
		sentinel, parent *Error
	}{
		{ErrPartitionBusy, ErrServerBusy}, {ErrAccountBusy, ErrServerBusy},
		{ErrDiskFull, ErrServerBusy}, {ErrDamaged, ErrInternal},
	}
	for i, n := range narrowed {
		assert.Equal(t, []any{n.parent.Code, n.parent.StatusCode, n.parent.Message, ""},
			[]any{n.sentinel.Code, n.sentinel.StatusCode, n.sentinel.Message, n.sentinel.Detail}, n.sentinel.busy)
		assert.ErrorIs(t, n.sentinel, n.parent)
		assert.ErrorIs(t, n.sentinel.WithDetail("x"), n.sentinel)
		assert.NotErrorIs(t, n.parent, n.sentinel, "the parent has no cause")
		for j, other := range narrowed {
			if i != j {
				assert.NotErrorIs(t, n.sentinel, other.sentinel)
			}
		}
	}
}
