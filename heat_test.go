package tabula

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

	db, err = openDir(t, dir, nil)
	require.NoError(t, err)
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
	db, err = openDir(t, dir, nil)
	require.NoError(t, err)
	require.NoError(t, db.Table("Heat").Delete(ctx, "p0", "2", AnyETag))
	assert.EqualValues(t, 2, db.HeatReport().Entities)
}

// A table's first use after its database opens does not wait for the count of what it holds,
// which reads every key: here the count is held up (the snapshot's statistics cache, which
// counts for every database opened from it, is locked), and reads and writes still go on.
// Writes made meanwhile are counted once: the count is of the data as the table was first
// used, and each write after adds itself.
func TestFirstUseDoesNotWaitForCount(t *testing.T) {
	ctx := context.Background()
	src, err := OpenInMemory(nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, src.Close()) })
	tbl := createTable(t, src, "Heat")
	for i := range 5 {
		_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	snap, err := src.Snapshot(ctx)
	require.NoError(t, err)
	db, err := snap.Open(nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })

	snap.statsMu.Lock()
	done := make(chan error, 1)
	go func() {
		clone := db.Table("Heat")
		if _, err := clone.Get(ctx, "p", "0"); err != nil {
			done <- err
			return
		}
		_, err := clone.Insert(ctx, Entity{PartitionKey: "p", RowKey: "new"})
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute): // a hang, not a wait for behaviour
		snap.statsMu.Unlock()
		t.Fatal("the first read and write of the table waited for its count")
	}
	reported := make(chan int64, 1)
	go func() { reported <- db.HeatReport().Entities }()
	snap.statsMu.Unlock()
	assert.EqualValues(t, 6, <-reported, "the 5 counted, and the one written meanwhile")
	require.NoError(t, db.Check(ctx))
}
