package tabula

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	db, err = openDir(t, dir, opts)
	require.NoError(t, err)
	_, err = db.Table("Full").Insert(ctx, Entity{PartitionKey: "p", RowKey: "2"})
	require.NoError(t, err)
}
