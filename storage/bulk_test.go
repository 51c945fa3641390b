package storage

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/internal/badgertuning"
)

// bulkKey is the key of write i of a bulk load.
func bulkKey(i int) []byte { return fmt.Appendf(nil, "load/%010d", i) }

// bulkKeys lists the keys under "load/" in d.
func bulkKeys(t *testing.T, d *DB) [][]byte {
	t.Helper()
	var keys [][]byte
	require.NoError(t, d.View(func(tx *Txn) error {
		it := tx.Scan([]byte("load/"), []byte("load0"))
		defer it.Close()
		for it.Next() {
			keys = append(keys, bytes.Clone(it.Key()))
		}
		return nil
	}))
	return keys
}

// Writes of many transactions' worth are all there after Flush, with their values, on
// both stores; the Bulk goes on after a Flush.
func TestBulk(t *testing.T) {
	for _, inMemory := range []bool{false, true} {
		t.Run(fmt.Sprint("inMemory=", inMemory), func(t *testing.T) {
			d, err := Open(Options{Dir: t.TempDir(), InMemory: inMemory})
			require.NoError(t, err)
			defer d.Close()
			value := bytes.Repeat([]byte{'v'}, 1<<10)
			const n = 12_000 // about five of Badger's transactions at the default budget
			b := d.NewBulk()
			for i := range n / 2 {
				require.NoError(t, b.Set(bulkKey(i), value))
			}
			require.NoError(t, b.Flush())
			assert.Len(t, bulkKeys(t, d), n/2)
			for i := n / 2; i < n; i++ {
				require.NoError(t, b.Set(bulkKey(i), append(bytes.Clone(value), byte(i%256))))
			}
			require.NoError(t, b.Flush())
			keys := bulkKeys(t, d)
			require.Len(t, keys, n)
			for i, k := range keys {
				assert.Equal(t, bulkKey(i), k)
			}
			require.NoError(t, d.View(func(tx *Txn) error {
				found, err := tx.Get(bulkKey(n-1), func(v []byte) error {
					assert.Equal(t, append(bytes.Clone(value), byte((n-1)%256)), v)
					return nil
				})
				assert.True(t, found)
				return err
			}))
		})
	}
}

// Cancel drops what was not committed: what is visible after it is the writes of the
// transactions committed before, a prefix of the load, never all of it.
func TestBulkCancel(t *testing.T) {
	d, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer d.Close()
	value := make([]byte, 1<<10)
	const n = 10_000
	b := d.NewBulk()
	for i := range n {
		require.NoError(t, b.Set(bulkKey(i), value))
	}
	b.Cancel()
	keys := bulkKeys(t, d)
	assert.Less(t, len(keys), n, "the transaction being filled is not committed")
	assert.Positive(t, len(keys), "the full ones were sent before")
	for i, k := range keys {
		require.Equal(t, bulkKey(i), k)
	}
}

// A Bulk keeps the store's rules for writes: a commit is refused when the disk is below
// the reserve, and nothing is written on a store opened read-only for lack of space.
func TestBulkDiskFull(t *testing.T) {
	var full atomic.Bool
	dir := t.TempDir()
	free := func() (uint64, error) {
		if full.Load() {
			return 1, nil
		}
		return 1 << 40, nil
	}
	d, err := Open(Options{Dir: dir, FreeSpace: free})
	require.NoError(t, err)
	value := make([]byte, 1<<10)
	b := d.NewBulk()
	full.Store(true)
	var setErr error
	for i := 0; i < 10_000 && setErr == nil; i++ {
		setErr = b.Set(bulkKey(i), value)
	}
	require.ErrorIs(t, setErr, ErrDiskFull, "a full transaction's commit is refused")
	b.Cancel()
	assert.Empty(t, bulkKeys(t, d))
	require.NoError(t, d.Close())

	d, err = Open(Options{Dir: dir, FreeSpace: free}) // opened read-only
	require.NoError(t, err)
	defer d.Close()
	b = d.NewBulk()
	require.ErrorIs(t, b.Set(bulkKey(0), value), ErrDiskFull)
	full.Store(false)
	require.NoError(t, b.Set(bulkKey(0), value), "writable again once there is space")
	require.NoError(t, b.Flush())
	assert.Len(t, bulkKeys(t, d), 1)
}

// BenchmarkBulkUpdate writes b.N keys of 1 KiB values on disk in Updates of up to 2,000
// writes each (fewer where the budget's memtables take less), as the import staged them
// before Bulk: what the store sustains through its write
// path for a bulk load (run it at -benchtime 1000000x for the 1M case).
func BenchmarkBulkUpdate(b *testing.B) {
	value := make([]byte, 1<<10)
	db, err := Open(Options{Dir: b.TempDir()})
	require.NoError(b, err)
	defer db.Close()
	// As many writes as the store takes in one Update, at most 2,000 (half its limit in
	// bytes: Badger counts each entry's metadata and version beside its key and value).
	per := int(min(2000, badgertuning.TxnLimit(db.bo)/2/int64(len(bulkKey(0))+len(value))))
	for i := 0; i < b.N; i += per {
		require.NoError(b, db.Update(func(tx *Txn) error {
			for j := i; j < min(i+per, b.N); j++ {
				if err := tx.Set(bulkKey(j), value); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entities/s")
}

// BenchmarkBulk is BenchmarkBulkUpdate through a Bulk.
func BenchmarkBulk(b *testing.B) {
	value := make([]byte, 1<<10)
	db, err := Open(Options{Dir: b.TempDir()})
	require.NoError(b, err)
	defer db.Close()
	bulk := db.NewBulk()
	for i := range b.N {
		require.NoError(b, bulk.Set(bulkKey(i), value))
	}
	require.NoError(b, bulk.Flush())
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entities/s")
}
