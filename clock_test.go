package tabula

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	reservation := clockRecord(ticksOf(last)+reserveAhead, clockReserved)
	require.NoError(t, store.Update(func(tx *storage.Txn) error { return tx.Set(clockKey, reservation) }))
	require.NoError(t, store.Close())
	db, err := openDir(t, dir, &Options{Clock: clock.Now})
	require.NoError(t, err)
	e, err := db.Table("Clock").Insert(ctx, Entity{PartitionKey: "p", RowKey: "after a crash"})
	require.NoError(t, err)
	assert.Equal(t, 100*time.Nanosecond, e.Timestamp.Sub(last), "after a crash")
}

// After a crash the clock resumes after the newest Timestamp stored, a table's creation in
// another namespace included: the next write is stamped after it.
func TestClockAfterACrashCountsEveryNamespacesTables(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := newFakeClock()
	db, err := Open(dir, &Options{Clock: clock.Now})
	require.NoError(t, err)
	_, err = createTable(t, db, "Root").Insert(ctx, Entity{PartitionKey: "p", RowKey: "r"})
	require.NoError(t, err)
	clock.Advance(time.Second)
	_, err = db.Namespace("acct").CreateTable(ctx, "Newest")
	require.NoError(t, err)
	var created time.Time
	for info, err := range db.Namespace("acct").Tables(ctx, "") {
		require.NoError(t, err)
		created = info.Created
	}
	require.NoError(t, db.Close())
	// A crash leaves only the reservation, which the clock has not passed.
	store, err := storage.Open(storage.Options{Dir: dir})
	require.NoError(t, err)
	reservation := clockRecord(ticksOf(created)+reserveAhead, clockReserved)
	require.NoError(t, store.Update(func(tx *storage.Txn) error { return tx.Set(clockKey, reservation) }))
	require.NoError(t, store.Close())

	clock.Advance(-time.Minute) // and the clock stepped back
	db, err = openDir(t, dir, &Options{Clock: clock.Now})
	require.NoError(t, err)
	e, err := db.Table("Root").Insert(ctx, Entity{PartitionKey: "p", RowKey: "after a crash"})
	require.NoError(t, err)
	assert.Equal(t, 100*time.Nanosecond, e.Timestamp.Sub(created))
}

// Any bytes under the clock key decode to a bound or an error, never a panic; what this build
// writes reads back exactly; and the only forms read are this format's and the three older.
func FuzzDecodeClock(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 8))
	f.Add(append(make([]byte, 8), 'c'))
	f.Add(clockRecord(12345, clockReserved))
	f.Add(clockRecord(-1, clockClean))
	f.Fuzz(func(t *testing.T, v []byte) {
		ticks, clean, err := decodeClock(v)
		if err != nil {
			return
		}
		switch len(v) {
		case 8, 9, clockLen:
		default:
			t.Fatalf("%x: a record of %d bytes read", v, len(v))
		}
		kind := byte(clockReserved)
		if clean {
			kind = clockClean
		}
		again, cleanAgain, err := decodeClock(clockRecord(ticks, kind))
		if err != nil || again != ticks || cleanAgain != clean {
			t.Fatalf("%x: rewritten as %x, read back as %d %v %v", v, clockRecord(ticks, kind), again, cleanAgain, err)
		}
	})
}
