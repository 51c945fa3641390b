package storage

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func setKeys(t *testing.T, db *DB, kv ...string) {
	t.Helper()
	require.NoError(t, db.Update(func(tx *Txn) error {
		for i := 0; i < len(kv); i += 2 {
			if err := tx.Set([]byte(kv[i]), []byte(kv[i+1])); err != nil {
				return err
			}
		}
		return nil
	}))
}

func snapshotKeys(t *testing.T, s *Snapshot) []string {
	t.Helper()
	var keys []string
	require.NoError(t, s.View(func(tx *Txn) error {
		it := tx.Scan(nil, nil)
		defer it.Close()
		for it.Next() {
			keys = append(keys, string(it.Key()))
		}
		return nil
	}))
	return keys
}

// A snapshot keeps reading what the store held when it was taken; a store opened from it is
// its own, and so is the store it was taken from.
func TestSnapshotIsolation(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *DB) {
		setKeys(t, db, "a", "1", "b", "2")
		s, err := db.Snapshot()
		require.NoError(t, err)
		defer s.Release()
		setKeys(t, db, "c", "3")
		require.NoError(t, db.Update(func(tx *Txn) error { return tx.Delete([]byte("a")) }))
		assert.Equal(t, []string{"a", "b"}, snapshotKeys(t, s))
		assert.Equal(t, []string{"b", "c"}, scanKeys(t, db, nil, nil))

		c1, err := s.Open()
		require.NoError(t, err)
		defer c1.Close()
		c2, err := s.Open()
		require.NoError(t, err)
		defer c2.Close()
		setKeys(t, c1, "x", "9")
		assert.Equal(t, []string{"a", "b", "x"}, scanKeys(t, c1, nil, nil))
		assert.Equal(t, []string{"a", "b"}, scanKeys(t, c2, nil, nil))
		assert.Equal(t, []string{"a", "b"}, snapshotKeys(t, s))
		assert.Equal(t, []string{"b", "c"}, scanKeys(t, db, nil, nil))
	})
}

func TestSnapshotRelease(t *testing.T) {
	db := openDisk(t)
	setKeys(t, db, "a", "1")
	s, err := db.Snapshot()
	require.NoError(t, err)
	assert.False(t, s.InMemory())
	s.Release()
	s.Release()
	assert.ErrorIs(t, s.View(func(*Txn) error { return nil }), errReleased)
	assert.ErrorIs(t, db.Restore(s), ErrOnDisk)
}

// A restore is one commit that conflicts with every transaction begun before it: the
// closure runs again on the restored data, so a read-modify-write never carries a value
// from before the restore into it.
func TestRestoreConflictsWithEverything(t *testing.T) {
	db := openMem(t)
	setKeys(t, db, "n", "0")
	s, err := db.Snapshot()
	require.NoError(t, err)
	setKeys(t, db, "n", "5", "later", "x")

	runs := 0
	require.NoError(t, db.Update(func(tx *Txn) error {
		runs++
		var n []byte
		if _, err := tx.Get([]byte("n"), func(v []byte) error { n = append(n, v...); return nil }); err != nil {
			return err
		}
		if runs == 1 {
			require.NoError(t, db.Restore(s))
		}
		return tx.Set([]byte("m"), append([]byte("from "), n...))
	}))
	assert.Equal(t, 2, runs)
	assert.Equal(t, []string{"m", "n"}, scanKeys(t, db, nil, nil))
	require.NoError(t, db.View(func(tx *Txn) error {
		_, err := tx.Get([]byte("m"), func(v []byte) error { assert.Equal(t, "from 0", string(v)); return nil })
		return err
	}))

	// A blind write begun before a restore runs again too.
	runs = 0
	require.NoError(t, db.Update(func(tx *Txn) error {
		runs++
		if runs == 1 {
			require.NoError(t, db.Restore(s))
		}
		return tx.Set([]byte("blind"), nil)
	}))
	assert.Equal(t, 2, runs)
	assert.Equal(t, []string{"blind", "n"}, scanKeys(t, db, nil, nil))
}

// Stores opened from one snapshot are written to concurrently, each seeing only its own.
func TestSnapshotConcurrentOpens(t *testing.T) {
	db := openMem(t)
	for i := range 100 {
		setKeys(t, db, fmt.Sprintf("k%03d", i), "v")
	}
	s, err := db.Snapshot()
	require.NoError(t, err)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			c, err := s.Open()
			if !assert.NoError(t, err) {
				return
			}
			defer c.Close()
			for i := range 50 {
				assert.NoError(t, c.Update(func(tx *Txn) error { return tx.Set(fmt.Appendf(nil, "w%d-%d", w, i), nil) }))
			}
			var n int
			assert.NoError(t, c.View(func(tx *Txn) error {
				it := tx.Scan(nil, nil)
				defer it.Close()
				for it.Next() {
					n++
				}
				return nil
			}))
			assert.Equal(t, 150, n)
		})
	}
	wg.Go(func() {
		for i := range 50 {
			setKeys(t, db, fmt.Sprintf("src%d", i), "v")
			assert.NoError(t, db.Restore(s))
		}
	})
	wg.Wait()
	assert.Len(t, scanKeys(t, db, nil, nil), 100)
}
