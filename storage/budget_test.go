package storage

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BadgerOptions shares one budget out across Badger's memtables, caches and compaction, and
// keeps the value threshold low enough for the service's largest transaction.
func TestBadgerOptions(t *testing.T) {
	const MiB = 1 << 20
	for _, tc := range []struct {
		budget                           uint64
		memtable, blockCache, indexCache int64
		table, threshold                 int64
	}{
		{0, 16 * MiB, 256 * MiB / 5, 256 * MiB / 10, 2 * MiB, 19660}, // the default
		{256 * MiB, 16 * MiB, 256 * MiB / 5, 256 * MiB / 10, 2 * MiB, 19660},
		{1, 4 * MiB, 64 * MiB / 5, 64 * MiB / 10, MiB / 2, 4915}, // raised to the minimum
		{64 * MiB, 4 * MiB, 64 * MiB / 5, 64 * MiB / 10, MiB / 2, 4915},
		{1 << 30, 64 * MiB, (1 << 30) / 5, (1 << 30) / 10, 8 * MiB, 64 << 10}, // threshold capped
	} {
		t.Run(fmt.Sprint(tc.budget), func(t *testing.T) {
			o := BadgerOptions("dir", tc.budget)
			assert.Equal(t, "dir", o.Dir)
			assert.Equal(t, tc.memtable, o.MemTableSize, "memtable")
			assert.Equal(t, 2, o.NumMemtables)
			assert.Equal(t, tc.blockCache, o.BlockCacheSize, "block cache")
			assert.Equal(t, tc.indexCache, o.IndexCacheSize, "index cache")
			assert.Equal(t, 2, o.NumCompactors)
			assert.Equal(t, options.None, o.Compression)
			assert.Equal(t, tc.table, o.BaseTableSize, "table")
			assert.Equal(t, tc.threshold, o.ValueThreshold, "value threshold")
			// The service's largest transaction: 100 values just under the threshold fit in
			// Badger's batch limit (15% of a memtable).
			assert.Less(t, 100*(o.ValueThreshold+1024), o.MemTableSize*15/100)
		})
	}
}

// A store opened with the smallest budget still commits the Table service's largest
// transaction: 100 writes just under the value threshold, and 4 MiB of 1 MiB values.
func TestSmallBudgetHoldsTheServiceLimits(t *testing.T) {
	db, err := Open(Options{Dir: t.TempDir(), MemoryBudget: MinMemoryBudget})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	threshold := int(BadgerOptions("", MinMemoryBudget).ValueThreshold)
	for _, size := range []int{threshold - 1, 40 << 10, 1 << 20} {
		n := min(100, (4<<20)/size)
		require.NoError(t, db.Update(func(txn *Txn) error {
			for i := range n {
				if err := txn.Set(fmt.Appendf(nil, "k/%d/%03d", size, i), bytes.Repeat([]byte{'v'}, size)); err != nil {
					return err
				}
			}
			return nil
		}), "%d values of %d bytes", n, size)
	}
}

// A directory written with Badger's defaults (Snappy-compressed tables, as stores written
// before the budget have) still reads: Badger records each table's compression in its
// manifest, so turning compression off applies to new tables only.
func TestBudgetReadsCompressedTables(t *testing.T) {
	dir := t.TempDir()
	old := BadgerOptions(dir, 0).WithCompression(options.Snappy)
	bdb, err := badger.Open(old)
	require.NoError(t, err)
	require.NoError(t, bdb.Update(func(txn *badger.Txn) error {
		for i := range 1000 {
			if err := txn.Set(fmt.Appendf(nil, "k/%04d", i), bytes.Repeat([]byte{'v'}, 100)); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, bdb.Close()) // flushes the memtable to a compressed table
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.NotEmpty(t, tables, "the data is in a table, not only the memtable's log")
	db, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, db.View(func(txn *Txn) error {
		for _, i := range []int{0, 500, 999} {
			var got []byte
			found, err := txn.Get(fmt.Appendf(nil, "k/%04d", i), func(v []byte) error { got = bytes.Clone(v); return nil })
			require.NoError(t, err)
			assert.True(t, found)
			assert.Equal(t, bytes.Repeat([]byte{'v'}, 100), got)
		}
		return nil
	}))
}
