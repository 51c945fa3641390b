package storage

import (
	"bytes"
	"testing"

	"github.com/dgraph-io/badger/v4"

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

// A load starts on a tree past loadMaxRewrite when what the store took since the last load
// lies after the keys loaded (merging it rewrites none of them), and is refused when it
// lies on both sides of them (merging it would rewrite them all); the store goes on.
func TestLoadAfterLoad(t *testing.T) {
	d, err := Open(Options{Dir: t.TempDir(), MemoryBudget: MinMemoryBudget})
	require.NoError(t, err)
	defer d.Close()
	value := bytes.Repeat([]byte{'v'}, 1<<10)
	n := int(loadMaxRewrite(d.bo)/int64(len(value))) * 5 / 4
	load := func(from int) {
		t.Helper()
		l, err := d.NewLoad()
		require.NoError(t, err)
		for i := from; i < from+n; i++ {
			require.NoError(t, l.Set(bulkKey(i), value))
		}
		require.NoError(t, l.Finish())
	}
	set := func(keys ...string) {
		t.Helper()
		require.NoError(t, d.Update(func(tx *Txn) error {
			for _, k := range keys {
				if err := tx.Set([]byte(k), []byte("x")); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	load(0)
	set("m/after")
	load(n)
	set("a/before", "m/after2")
	_, err = d.NewLoad()
	require.ErrorIs(t, err, ErrNoLoad)
	keys := bulkKeys(t, d)
	require.Len(t, keys, 2*n)
	assert.Equal(t, bulkKey(2*n-1), keys[2*n-1])
	set("z/last")
	require.NoError(t, d.View(func(tx *Txn) error {
		for _, k := range []string{"a/before", "m/after", "m/after2", "z/last"} {
			found, err := tx.Get([]byte(k), nil)
			require.NoError(t, err)
			assert.True(t, found, k)
		}
		return nil
	}))
}

func TestMergeCost(t *testing.T) {
	ts := func(k string) []byte { return append([]byte(k), 0, 0, 0, 0, 0, 0, 0, 1) }
	table := func(level int, left, right string, size uint32) badger.TableInfo {
		return badger.TableInfo{Level: level, Left: ts(left), Right: ts(right), OnDiskSize: size}
	}
	loaded := []badger.TableInfo{table(5, "e1", "e3", 100), table(5, "e4", "e6", 200), table(6, "a", "z", 1000)}
	for _, c := range []struct {
		name string
		l0   []badger.TableInfo
		want int64
	}{
		{"after the loaded keys", []badger.TableInfo{table(0, "m", "n", 1)}, 0},
		{"before them", []badger.TableInfo{table(0, "d", "d", 1)}, 0},
		{"on both sides", []badger.TableInfo{table(0, "d", "m", 1)}, 300},
		{"over one table, in two", []badger.TableInfo{table(0, "e5", "e5", 1), table(0, "e7", "f", 1)}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, mergeCost(append(c.l0, loaded...)))
		})
	}
	assert.Zero(t, mergeCost([]badger.TableInfo{table(0, "a", "z", 1)}), "nothing below level 0")
}
