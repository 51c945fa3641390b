package storage

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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
// is read-only, says so, and is writable as soon as there is space, without a reopen.
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
	require.NoError(t, set(db, "c", "3"), "writable again, without a reopen, once there is space")
	v, _ = get(t, db, "b")
	assert.Equal(t, "2", v)
	require.NoError(t, db.Close())

	db, err = Open(opts)
	require.NoError(t, err)
	v, _ = get(t, db, "c")
	assert.Equal(t, "3", v)
	require.NoError(t, db.Close())
}

// TestOpenAfterCrashOnFullDisk: a directory left by a kill -9 (its memtable log holds
// bytes past its last transaction, which a read-only open of Badger refuses) opens on a disk
// with less free space than the reserve, read-only, with every acknowledged write; once
// there is space, writes resume without a reopen; the first refused write is told, once.
func TestOpenAfterCrashOnFullDisk(t *testing.T) {
	if dir := os.Getenv("STORAGE_CRASH_CHILD"); dir != "" {
		db, err := Open(Options{Dir: dir})
		require.NoError(t, err)
		for i := 0; ; i++ {
			require.NoError(t, set(db, fmt.Sprintf("k%06d", i), strings.Repeat("v", 100)))
			fmt.Printf("ack %d\n", i)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenAfterCrashOnFullDisk$")
	cmd.Env = append(os.Environ(), "STORAGE_CRASH_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	acked := -1
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if s, ok := strings.CutPrefix(lines.Text(), "ack "); ok {
			acked, err = strconv.Atoi(s)
			require.NoError(t, err)
			if acked == 500 {
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			}
		}
	}
	_ = cmd.Wait()
	require.GreaterOrEqual(t, acked, 500)

	var free atomic.Uint64
	free.Store(1 << 20)
	var told []error
	opts := Options{Dir: dir, FreeSpace: func() (uint64, error) { return free.Load(), nil }, Reserve: 64 << 20,
		OnFull: func(err error) { told = append(told, err) }}
	db, err := Open(opts)
	require.NoError(t, err, "a directory left by a crash opens on a full disk")
	for i := range acked + 1 {
		_, ok := get(t, db, fmt.Sprintf("k%06d", i))
		require.True(t, ok, "acknowledged write %d", i)
	}
	require.ErrorIs(t, set(db, "more", "x"), ErrDiskFull)
	require.ErrorIs(t, set(db, "more", "x"), ErrDiskFull)
	require.Len(t, told, 1, "the first refused write is told, once")
	assert.Contains(t, told[0].Error(), "read-only")

	free.Store(1 << 30)
	require.NoError(t, set(db, "more", "x"), "writes resume once there is space")
	for i := range acked + 1 {
		_, ok := get(t, db, fmt.Sprintf("k%06d", i))
		require.True(t, ok, "acknowledged write %d", i)
	}
	free.Store(1 << 20)
	require.ErrorIs(t, set(db, "more2", "x"), ErrDiskFull)
	require.Len(t, told, 2, "a refusal after writes had resumed is told again")
	require.NoError(t, db.Close())
}

// The file system's free space is asked before every commit near the reserve, and reused
// for a short while only when far more than the reserve is free.
func TestReuseFreeSpace(t *testing.T) {
	const reserve = 1 << 20
	var (
		free  uint64 = reserve + freeSpaceMargin + 1
		asked int
		now   = time.Unix(1000, 0)
	)
	get := reuseFreeSpace(func() (uint64, error) { asked++; return free, nil }, reserve, func() time.Time { return now })
	ask := func() uint64 {
		t.Helper()
		f, err := get()
		require.NoError(t, err)
		return f
	}
	require.Equal(t, free, ask())
	free = reserve // the disk filled up meanwhile
	require.Equal(t, uint64(reserve+freeSpaceMargin+1), ask(), "reused within freeSpaceReuse")
	require.Equal(t, 1, asked)
	now = now.Add(freeSpaceReuse)
	require.Equal(t, uint64(reserve), ask(), "asked again once freeSpaceReuse passed")
	require.Equal(t, uint64(reserve), ask(), "near the reserve, asked every time")
	require.Equal(t, 3, asked)
	free = reserve + freeSpaceMargin // not more than the margin: still asked every time
	ask()
	ask()
	require.Equal(t, 5, asked)
}
