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

	"github.com/tabuladb/tabula/internal/badgertuning"
)

// A store opened with the smallest budget still commits the Table service's largest
// transaction: 100 writes just under the value threshold, and 4 MiB of 1 MiB values.
func TestSmallBudgetHoldsTheServiceLimits(t *testing.T) {
	db, err := Open(Options{Dir: t.TempDir(), MemoryBudget: MinMemoryBudget})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	threshold := int(badgertuning.Options("", MinMemoryBudget).ValueThreshold)
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
	old := badgertuning.Options(dir, 0).WithCompression(options.Snappy).WithBlockCacheSize(32 << 20) // Badger requires one with compression
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
