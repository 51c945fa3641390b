package tabula

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// Thirty restarts with a clock that stands still: each reopened database continues from
// the last Timestamp it handed out plus one tick, not from the reservation persisted ahead
// of it, which used to push Timestamps reserveAhead (10 s) further into the future per
// restart (297 s after 30 restarts with a real clock).
func TestTimestampClockDoesNotDriftAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := newFakeClock()
	start := clock.Now()
	var last time.Time
	for i := range 30 {
		db, err := Open(dir, &Options{Clock: clock.Now})
		require.NoError(t, err)
		tbl := db.Table("Clock")
		if i == 0 {
			tbl = createTable(t, db, "Clock")
		}
		e, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)})
		require.NoError(t, err)
		require.True(t, e.Timestamp.After(last), "restart %d: %v is not after %v", i, e.Timestamp, last)
		last = e.Timestamp
		require.NoError(t, db.Close())
	}
	// CreateTable and 30 inserts: 31 Timestamps, one tick (100 ns) apart.
	assert.Equal(t, 30*100*time.Nanosecond, last.Sub(start), "drift after 30 restarts")

	// After a crash, only the reservation is on disk: the clock, which has not passed it,
	// resumes after the newest Timestamp stored instead.
	store, err := storage.Open(storage.Options{Dir: dir})
	require.NoError(t, err)
	reservation := binary.BigEndian.AppendUint64(nil, uint64(ticksOf(last)+reserveAhead))
	require.NoError(t, store.Update(func(tx *storage.Txn) error { return tx.Set(clockKey, reservation) }))
	require.NoError(t, store.Close())
	db, err := Open(dir, &Options{Clock: clock.Now})
	require.NoError(t, err)
	defer db.Close()
	e, err := db.Table("Clock").Insert(ctx, Entity{PartitionKey: "p", RowKey: "after a crash"})
	require.NoError(t, err)
	assert.Equal(t, 100*time.Nanosecond, e.Timestamp.Sub(last), "after a crash")
}

// A ServerBusy says which limit refused it: the PartitionKey's or the account's. Both are
// ServerBusy for errors.Is and on the wire.
func TestServerBusySaysPartitionOrAccount(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	db, err := OpenInMemory(&Options{Clock: clock.Now, Limits: partition.Limits{Mode: partition.LimitEnforce,
		PartitionRate: 10, AccountRate: 15}})
	require.NoError(t, err)
	defer db.Close()
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
		db, err := OpenInMemory(&Options{Clock: func() time.Time { clock.Advance(time.Second); return clock.Now() }})
		require.NoError(t, err)
		defer db.Close()
		page, err := fill(t, db, 20).Query(ctx, Query{})
		require.NoError(t, err)
		assert.Equal(t, PageEndBudget, page.End)
		assert.False(t, page.Continuation.IsZero())
	})
	t.Run("range boundary", func(t *testing.T) {
		db, err := OpenInMemory(&Options{BoundaryContinuations: true})
		require.NoError(t, err)
		defer db.Close()
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
		db, err := OpenInMemory(&Options{Faults: partition.Faults{ContinuationEvery: 3}})
		require.NoError(t, err)
		defer db.Close()
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
		db, err := OpenInMemory(&Options{Clock: func() time.Time {
			if reads.Add(1) == cancelAt.Load() {
				cancel()
			}
			return clock.Now()
		}})
		require.NoError(t, err)
		defer db.Close()
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

// The compiled-filter cache stays within its byte bound however large and many the filters:
// 40 distinct 50 KB filters against a 1 MiB bound leave less than 2 MiB on the heap (a bound
// of 1,024 filters by count kept all of them, about 6.6 MB; with 250 KB filters, 1.4 GB). A
// filter in use is still compiled once.
func TestFilterCacheIsBoundedByBytes(t *testing.T) {
	db := openTestDB(t, nil)
	db.filterCacheBytes = 1 << 20
	large := func(i int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "PartitionKey eq 'p%d'", i)
		for b.Len() < 50_000 {
			fmt.Fprintf(&b, " or Name eq 'a somewhat long value %d'", b.Len())
		}
		return b.String()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 40 {
		_, err := db.compile(large(i))
		require.NoError(t, err)
		require.LessOrEqual(t, db.filterBytes, db.filterCacheBytes)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	assert.Less(t, int64(after.HeapAlloc)-int64(before.HeapAlloc), int64(2<<20), "heap growth")

	// What makes it fast: a filter in use is compiled once, and a hit is the same compiled form.
	first, err := db.compile("PartitionKey eq 'a' and RowKey eq 'b'")
	require.NoError(t, err)
	again, err := db.compile("PartitionKey eq 'a' and RowKey eq 'b'")
	require.NoError(t, err)
	assert.Same(t, first, again)
}

// The heat report counts what is stored, also after a reopen: right after it the table
// shows its 5 entities, and after deleting 2 of them, 3 and their bytes (it used to count
// from Open on, and said -2 entities and -58 bytes).
func TestHeatReportAfterReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	tbl := createTable(t, db, "Heat")
	for i := range 5 {
		_, err := tbl.Insert(ctx, Entity{PartitionKey: fmt.Sprint("p", i%2), RowKey: fmt.Sprint(i), Properties: Properties{"Name": String("same size")}})
		require.NoError(t, err)
	}
	written := db.HeatReport()
	require.EqualValues(t, 5, written.Entities)
	require.Positive(t, written.Bytes)
	require.NoError(t, db.Close())

	db, err = Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	reopened := db.HeatReport()
	assert.EqualValues(t, 5, reopened.Entities, "right after the reopen")
	assert.Equal(t, written.Bytes, reopened.Bytes)
	require.Len(t, reopened.Tables, 1)
	assert.EqualValues(t, 5, reopened.Tables[0].Entities)

	tbl = db.Table("Heat")
	require.NoError(t, tbl.Delete(ctx, "p0", "0", AnyETag))
	require.NoError(t, tbl.Delete(ctx, "p1", "1", AnyETag))
	report := db.HeatReport()
	assert.EqualValues(t, 3, report.Entities)
	assert.Equal(t, written.Bytes/5*3, report.Bytes, "every entity has the same size")
	for _, r := range report.Tables[0].Ranges {
		assert.GreaterOrEqual(t, r.Entities, int64(0))
		assert.GreaterOrEqual(t, r.Bytes, int64(0))
	}

	// A table first used by a write after the reopen starts from what it holds too.
	require.NoError(t, db.Close())
	db, err = Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Table("Heat").Delete(ctx, "p0", "2", AnyETag))
	assert.EqualValues(t, 2, db.HeatReport().Entities)
}

// A full disk refuses writes with ErrDiskFull, a 503 ServerBusy that SDKs retry, and keeps
// serving reads; the database opens again on a full disk, read-only, and writes once it has
// space. (Badger used to run into the full disk and die of SIGBUS; see also
// storage.TestFullDiskOnTmpfs, on a real small disk.)
func TestFullDiskRefusesWritesKeepsReads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var free atomic.Uint64
	free.Store(1 << 40)
	opts := &Options{freeSpace: func() (uint64, error) { return free.Load(), nil }}
	db, err := Open(dir, opts)
	require.NoError(t, err)
	tbl := createTable(t, db, "Full")
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "1"})
	require.NoError(t, err)

	free.Store(100 << 20) // below the 512 MiB reserve
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "2"})
	require.ErrorIs(t, err, ErrDiskFull)
	require.ErrorIs(t, err, ErrServerBusy)
	assert.True(t, IsRetryable(err))
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 503, te.StatusCode)
	assert.Contains(t, te.Detail, "bytes free")
	_, err = tbl.SubmitTransaction(ctx, []Action{InsertAction(Entity{PartitionKey: "p", RowKey: "3"})})
	require.ErrorIs(t, err, ErrDiskFull)
	_, err = db.CreateTable(ctx, "Other")
	require.ErrorIs(t, err, ErrDiskFull)
	got, err := tbl.Get(ctx, "p", "1")
	require.NoError(t, err, "reads go on")
	assert.Equal(t, "1", got.RowKey)
	assert.Len(t, dumpTable(t, tbl), 1)
	require.NoError(t, db.Close())

	db, err = Open(dir, opts)
	require.NoError(t, err, "opens read-only on a full disk")
	tbl = db.Table("Full")
	_, err = tbl.Get(ctx, "p", "1")
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "2"})
	require.ErrorIs(t, err, ErrDiskFull)
	assert.Contains(t, err.Error(), "read-only")
	require.NoError(t, db.Close())

	free.Store(1 << 40)
	db, err = Open(dir, opts)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Table("Full").Insert(ctx, Entity{PartitionKey: "p", RowKey: "2"})
	require.NoError(t, err)
}
