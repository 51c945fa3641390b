package tabula

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tabuladb/tabula/partition"
)

// An ETag fits the room entity makes for one, at the extremes of time and with every
// fraction digit.
func TestETagRoom(t *testing.T) {
	for _, tm := range []time.Time{minDateTime, maxDateTime, time.Date(2022, 3, 1, 20, 40, 24, 431753500, time.UTC)} {
		assert.LessOrEqual(t, len(etagOf(ticksOf(tm))), maxETagLen, tm)
	}
}

// Page.End names why each page ended: $top, the service's 1,000, the budget, a range
// boundary, a forced continuation, or the end of the results.
func TestPageEndSaysWhyThePageEnded(t *testing.T) {
	ctx := context.Background()
	fill := func(t *testing.T, db *DB, n int) *Table {
		tbl := createTable(t, db, "Ends")
		for i := range n {
			_, err := tbl.Insert(ctx, Entity{PartitionKey: fmt.Sprintf("p%d", i/600), RowKey: fmt.Sprintf("%04d", i)})
			require.NoError(t, err)
		}
		return tbl
	}
	t.Run("top and results", func(t *testing.T) {
		tbl := fill(t, openTestDB(t, nil), 1200)
		page, err := tbl.Query(ctx, Query{Top: 7})
		require.NoError(t, err)
		assert.Equal(t, PageEndTop, page.End)
		page, err = tbl.Query(ctx, Query{})
		require.NoError(t, err)
		assert.Len(t, page.Entities, 1000)
		assert.Equal(t, PageEndMaxEntities, page.End)
		page, err = tbl.Query(ctx, Query{Continuation: page.Continuation})
		require.NoError(t, err)
		assert.Len(t, page.Entities, 200)
		assert.Equal(t, PageEndResults, page.End)
		assert.True(t, page.Continuation.IsZero())
	})
	t.Run("budget", func(t *testing.T) {
		clock := newFakeClock()
		db := openStore(t, &Options{Clock: func() time.Time { clock.Advance(time.Second); return clock.Now() }})
		page, err := fill(t, db, 20).Query(ctx, Query{})
		require.NoError(t, err)
		assert.Equal(t, PageEndBudget, page.End)
		assert.False(t, page.Continuation.IsZero())
	})
	t.Run("range boundary", func(t *testing.T) {
		db := openStore(t, &Options{BoundaryContinuations: true})
		tbl := fill(t, db, 1200)
		split, err := tbl.SplitRangePartition(ctx, "p1")
		require.NoError(t, err)
		require.True(t, split)
		page, err := tbl.Query(ctx, Query{})
		require.NoError(t, err)
		assert.Len(t, page.Entities, 600)
		assert.Equal(t, PageEndRangeBoundary, page.End)
	})
	t.Run("forced", func(t *testing.T) {
		db := openStore(t, &Options{Faults: partition.Faults{ContinuationEvery: 3}})
		page, err := fill(t, db, 10).Query(ctx, Query{})
		require.NoError(t, err)
		assert.Len(t, page.Entities, 3)
		assert.Equal(t, PageEndForced, page.End)
	})
}

// The request's context reaches the scan loop and the transaction: canceled in the middle
// of a scan (at the 100th look at the clock, which a page takes once per entity it has
// examined), the scan stops there rather than at the page's 1,000th entity; canceled while a
// write's transaction runs, the transaction is discarded rather than committed.
func TestRequestContextStopsWork(t *testing.T) {
	t.Run("scan", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clock := newFakeClock()
		var reads, cancelAt atomic.Int64
		db := openStore(t, &Options{Clock: func() time.Time {
			if reads.Add(1) == cancelAt.Load() {
				cancel()
			}
			return clock.Now()
		}})
		var err error
		tbl := createTable(t, db, "Scan")
		for i := range 3000 {
			_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%04d", i)})
			require.NoError(t, err)
		}
		before := reads.Load()
		cancelAt.Store(before + 100)
		_, err = tbl.Query(ctx, Query{Filter: "Missing eq 1"}) // examines every entity, returns none
		require.ErrorIs(t, err, context.Canceled)
		assert.LessOrEqual(t, reads.Load()-before, int64(101), "entities examined after the cancel")
	})
	t.Run("transaction", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var armed atomic.Bool
		var reads atomic.Int64
		clock := newFakeClock()
		db, err := OpenInMemory(&Options{Clock: func() time.Time {
			// A write reads the clock to admit it, then inside its transaction for each
			// Timestamp: the second read after arming is inside the transaction.
			if armed.Load() && reads.Add(1) == 2 {
				cancel()
			}
			return clock.Now()
		}, Limits: partition.Limits{Mode: partition.LimitOff}}) // no reading of the clock before the transaction
		require.NoError(t, err)
		defer db.Close()
		tbl := createTable(t, db, "Txn")
		_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "0"}) // the first touch reads the clock outside
		require.NoError(t, err)
		armed.Store(true)
		_, err = tbl.SubmitTransaction(ctx, []Action{InsertAction(Entity{PartitionKey: "p", RowKey: "1"}), InsertAction(Entity{PartitionKey: "p", RowKey: "2"})})
		require.ErrorIs(t, err, context.Canceled)
		_, err = tbl.Insert(context.Background(), Entity{PartitionKey: "p", RowKey: "3"})
		require.NoError(t, err)
		got := dumpTable(t, tbl)
		require.Len(t, got, 2, "the canceled transaction wrote nothing")
		assert.Equal(t, "3", got[1].RowKey)
	})
}
