package storage

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Load's keys are there after Finish, and after the store is opened again (Open verifies
// the tables it wrote); the store takes writes again; a key out of order is refused; a
// cancelled load leaves the store usable, with its keys deletable.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, d.Update(func(tx *Txn) error { return tx.Set([]byte("before"), []byte("x")) }))
	value := bytes.Repeat([]byte{'v'}, 1<<10)
	const n = 12_000 // three chunks of loadChunk
	l, err := d.NewLoad()
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, l.Set(bulkKey(i), append(bytes.Clone(value), byte(i%256))))
	}
	require.ErrorIs(t, l.Set(bulkKey(n-1), value), errUnsorted)
	require.NoError(t, l.Finish())
	require.NoError(t, d.Update(func(tx *Txn) error { return tx.Set([]byte("after"), []byte("y")) }))
	check := func(d *DB) {
		keys := bulkKeys(t, d)
		require.Len(t, keys, n)
		for i, k := range keys {
			assert.Equal(t, bulkKey(i), k)
		}
		require.NoError(t, d.View(func(tx *Txn) error {
			for _, k := range []string{"before", "after"} {
				found, err := tx.Get([]byte(k), nil)
				require.NoError(t, err)
				assert.True(t, found, k)
			}
			found, err := tx.Get(bulkKey(n-1), func(v []byte) error {
				assert.Equal(t, append(bytes.Clone(value), byte((n-1)%256)), v)
				return nil
			})
			assert.True(t, found)
			return err
		}))
	}
	check(d)
	require.NoError(t, d.Close())
	d, err = Open(Options{Dir: dir})
	require.NoError(t, err)
	defer d.Close()
	check(d)

	// A second load goes above the first.
	l, err = d.NewLoad()
	require.NoError(t, err)
	for i := n; i < n+10; i++ {
		require.NoError(t, l.Set(bulkKey(i), value))
	}
	require.NoError(t, l.Finish())
	assert.Len(t, bulkKeys(t, d), n+10)
}

func TestLoadCancel(t *testing.T) {
	d, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer d.Close()
	l, err := d.NewLoad()
	require.NoError(t, err)
	for i := range 6_000 {
		require.NoError(t, l.Set(bulkKey(i), bytes.Repeat([]byte{'v'}, 1<<10)))
	}
	l.Cancel()
	l.Cancel()
	require.NoError(t, d.DeleteRange(t.Context(), []byte("load/"), []byte("load0")))
	assert.Empty(t, bulkKeys(t, d))
	require.NoError(t, d.Update(func(tx *Txn) error { return tx.Set([]byte("after"), []byte("y")) }))
}

func TestLoadInMemory(t *testing.T) {
	d, err := Open(Options{InMemory: true})
	require.NoError(t, err)
	defer d.Close()
	_, err = d.NewLoad()
	require.ErrorIs(t, err, ErrNoLoad)
}

// A store opened with SyncWrites collects value-log garbage beside its writes, which a
// load's reopening would pull the store from under: it takes a Bulk instead.
func TestLoadSyncWrites(t *testing.T) {
	d, err := Open(Options{Dir: t.TempDir(), SyncWrites: true})
	require.NoError(t, err)
	defer d.Close()
	_, err = d.NewLoad()
	require.ErrorIs(t, err, ErrNoLoad)
}
