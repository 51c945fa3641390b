package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openMem(t *testing.T) *DB {
	t.Helper()
	db, err := Open(Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func openDisk(t *testing.T) *DB {
	t.Helper()
	db, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// eachEngine runs a test on a fresh store of each engine: in memory and Badger on disk.
func eachEngine(t *testing.T, test func(t *testing.T, db *DB)) {
	t.Run("memory", func(t *testing.T) { test(t, openMem(t)) })
	t.Run("badger", func(t *testing.T) { test(t, openDisk(t)) })
}

func scanKeys(t *testing.T, db *DB, lower, upper []byte) []string {
	t.Helper()
	var keys []string
	require.NoError(t, db.View(func(txn *Txn) error {
		it := txn.Scan(lower, upper)
		defer it.Close()
		for it.Next() {
			keys = append(keys, string(it.Key()))
		}
		return nil
	}))
	return keys
}

func TestScanIsOrderedAndBounded(t *testing.T) { eachEngine(t, testScanIsOrderedAndBounded) }

func testScanIsOrderedAndBounded(t *testing.T, db *DB) {
	require.NoError(t, db.Update(func(txn *Txn) error {
		for _, k := range []string{"b2", "a", "b1", "c", "b"} {
			if err := txn.Set([]byte(k), []byte("v"+k)); err != nil {
				return err
			}
		}
		return nil
	}))
	assert.Equal(t, []string{"a", "b", "b1", "b2", "c"}, scanKeys(t, db, nil, nil))
	assert.Equal(t, []string{"b", "b1", "b2"}, scanKeys(t, db, []byte("b"), []byte("c")))
	assert.Equal(t, []string{"b1"}, scanKeys(t, db, []byte("b1"), []byte("b2")))
	assert.Empty(t, scanKeys(t, db, []byte("b3"), []byte("b4")))
	assert.Equal(t, []string{"b2", "c"}, scanKeys(t, db, []byte("b2"), nil))

	require.NoError(t, db.View(func(txn *Txn) error {
		it := txn.Scan([]byte("c"), nil)
		defer it.Close()
		require.True(t, it.Next())
		return it.Value(func(v []byte) error {
			assert.Equal(t, "vc", string(v))
			return nil
		})
	}))
}

func TestGetSetDelete(t *testing.T) { eachEngine(t, testGetSetDelete) }

func testGetSetDelete(t *testing.T, db *DB) {
	get := func(k string) (string, bool) {
		var v string
		var found bool
		require.NoError(t, db.View(func(txn *Txn) error {
			var err error
			found, err = txn.Get([]byte(k), func(b []byte) error { v = string(b); return nil })
			return err
		}))
		return v, found
	}
	_, found := get("k")
	assert.False(t, found)
	require.NoError(t, db.Update(func(txn *Txn) error { return txn.Set([]byte("k"), []byte("v")) }))
	v, found := get("k")
	assert.True(t, found)
	assert.Equal(t, "v", v)
	require.NoError(t, db.Update(func(txn *Txn) error { return txn.Delete([]byte("k")) }))
	_, found = get("k")
	assert.False(t, found)

	// An error from the closure discards its writes.
	boom := fmt.Errorf("boom")
	err := db.Update(func(txn *Txn) error {
		require.NoError(t, txn.Set([]byte("k"), []byte("v")))
		return boom
	})
	assert.ErrorIs(t, err, boom)
	_, found = get("k")
	assert.False(t, found)
}

// Concurrent read-modify-write closures never lose an increment: conflicts are retried by
// re-running the closure on fresh data, and callers never see Badger's conflict error.
func TestUpdateRetriesConflicts(t *testing.T) { eachEngine(t, testUpdateRetriesConflicts) }

func testUpdateRetriesConflicts(t *testing.T, db *DB) {
	key := []byte("counter")
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				err := db.Update(func(txn *Txn) error {
					var n uint64
					if _, err := txn.Get(key, func(v []byte) error { n = binary.BigEndian.Uint64(v); return nil }); err != nil {
						return err
					}
					return txn.Set(key, binary.BigEndian.AppendUint64(nil, n+1))
				})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	var n uint64
	require.NoError(t, db.View(func(txn *Txn) error {
		_, err := txn.Get(key, func(v []byte) error { n = binary.BigEndian.Uint64(v); return nil })
		return err
	}))
	assert.Equal(t, uint64(workers*each), n)
}

func TestDeleteRange(t *testing.T) { eachEngine(t, testDeleteRange) }

func testDeleteRange(t *testing.T, db *DB) {
	var want []string
	require.NoError(t, db.Update(func(txn *Txn) error {
		for i := range 2500 {
			k := fmt.Sprintf("x%05d", i)
			if err := txn.Set([]byte(k), []byte("v")); err != nil {
				return err
			}
		}
		for _, k := range []string{"a", "y1"} {
			want = append(want, k)
			if err := txn.Set([]byte(k), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	}))
	// Writers elsewhere are not blocked while it runs.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			assert.NoError(t, db.Update(func(txn *Txn) error { return txn.Set([]byte(fmt.Sprintf("z%d", i)), nil) }))
		}
	}()
	require.NoError(t, db.DeleteRange(context.Background(), []byte("x"), []byte("y")))
	<-done
	got := scanKeys(t, db, nil, []byte("z"))
	assert.Equal(t, want, got)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, db.DeleteRange(ctx, []byte("a"), nil), context.Canceled)
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(txn *Txn) error { return txn.Set([]byte("k"), []byte("v")) }))
	require.NoError(t, db.Close())
	db, err = Open(Options{Dir: dir})
	require.NoError(t, err)
	defer db.Close()
	assert.Equal(t, []string{"k"}, scanKeys(t, db, nil, nil))
}

// A transaction of a hundred ~1 MiB values is far above Badger's in-LSM transaction limit, but
// on disk large values live in the value log, so it commits; it reads back intact after a
// reopen.
func TestLargeTransactionOnDisk(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	big := bytes.Repeat([]byte("v"), 900<<10)
	require.NoError(t, db.Update(func(txn *Txn) error {
		for i := range 100 {
			if err := txn.Set([]byte(fmt.Sprintf("k%03d", i)), big); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, db.Close())
	db, err = Open(Options{Dir: dir})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.View(func(txn *Txn) error {
		found, err := txn.Get([]byte("k099"), func(v []byte) error {
			assert.Equal(t, big, v)
			return nil
		})
		assert.True(t, found)
		return err
	}))
}

// TestOpenAfterEmptyLogs: a crash (or a power cut) between Badger's creating a log file and
// sizing it leaves an empty one, which Badger alone refuses to open.
func TestOpenAfterEmptyLogs(t *testing.T) {
	for _, name := range []string{"00009.mem", "000009.vlog"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := Open(Options{Dir: dir})
			require.NoError(t, err)
			require.NoError(t, db.Update(func(tx *Txn) error { return tx.Set([]byte("k"), []byte("v")) }))
			require.NoError(t, db.Close())
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))

			db, err = Open(Options{Dir: dir})
			require.NoError(t, err)
			found := false
			require.NoError(t, db.View(func(tx *Txn) error {
				var err error
				found, err = tx.Get([]byte("k"), nil)
				return err
			}))
			require.True(t, found)
			require.NoError(t, db.Update(func(tx *Txn) error { return tx.Set([]byte("k2"), []byte("v")) }))
			require.NoError(t, db.Close())
		})
	}
}
