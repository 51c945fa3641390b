package storage

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func get(t *testing.T, db *DB, key string) (string, bool) {
	t.Helper()
	var value string
	var found bool
	require.NoError(t, db.View(func(tx *Txn) (err error) {
		found, err = tx.Get([]byte(key), func(v []byte) error { value = string(v); return nil })
		return err
	}))
	return value, found
}

func set(db *DB, key, value string) error {
	return db.Update(func(tx *Txn) error { return tx.Set([]byte(key), []byte(value)) })
}

// With an injected free-space figure: below the reserve, writes are refused with
// ErrDiskFull and reads go on; with space again, writes resume; a store opened on a full disk
// is read-only, says so, and is writable once reopened with space.
func TestFullDiskRefusesWritesAndOpensReadOnly(t *testing.T) {
	dir := t.TempDir()
	var free atomic.Uint64
	free.Store(1 << 30)
	opts := Options{Dir: dir, FreeSpace: func() (uint64, error) { return free.Load(), nil }, Reserve: 1 << 20}
	db, err := Open(opts)
	require.NoError(t, err)
	require.NoError(t, set(db, "a", "1"))

	free.Store(1<<20 - 1)
	err = set(db, "b", "2")
	require.ErrorIs(t, err, ErrDiskFull)
	var full *diskFullError
	require.ErrorAs(t, err, &full)
	assert.Equal(t, uint64(1<<20-1), full.Free)
	assert.Contains(t, err.Error(), "writes are refused until space is freed")
	v, ok := get(t, db, "a")
	assert.True(t, ok)
	assert.Equal(t, "1", v, "reads go on")
	_, ok = get(t, db, "b")
	assert.False(t, ok, "the refused write left nothing")

	free.Store(1 << 20)
	require.NoError(t, set(db, "b", "2"), "writes resume once space is freed")
	require.NoError(t, db.Close())

	free.Store(1000)
	db, err = Open(opts)
	require.NoError(t, err, "a full disk still opens, read-only")
	v, _ = get(t, db, "b")
	assert.Equal(t, "2", v)
	err = set(db, "c", "3")
	require.ErrorIs(t, err, ErrDiskFull)
	assert.Contains(t, err.Error(), "opened read-only")
	free.Store(1 << 30)
	assert.ErrorIs(t, set(db, "c", "3"), ErrDiskFull, "read-only until reopened")
	require.NoError(t, db.Close())

	db, err = Open(opts)
	require.NoError(t, err)
	require.NoError(t, set(db, "c", "3"))
	require.NoError(t, db.Close())
}
