package storage

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// On a real, small tmpfs (mounting needs root; skipped where it is not permitted), writing
// until the disk is full ends in ErrDiskFull, not in a SIGBUS inside Badger's memory-mapped
// files (with a reserve of 1 byte, this loop dies of SIGBUS in Badger's valueLog.write):
// everything acknowledged reads back, also after a reopen, which is read-only while the disk
// stays full and writable once it grows.
func TestFullDiskOnTmpfs(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=48m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, 0) })
	opts := Options{Dir: mnt, Reserve: 16 << 20}
	db, err := Open(opts)
	require.NoError(t, err)
	value := string(make([]byte, 256<<10)) // to the value log, which Badger maps in memory
	n := 0
	start := time.Now()
	for ; n < 1000; n++ {
		err = set(db, string(rune('a'+n%26))+string(rune(n)), value)
		if err != nil {
			break
		}
	}
	require.ErrorIs(t, err, ErrDiskFull, "after %d writes", n)
	require.Greater(t, n, 10)
	t.Logf("%d writes in %v", n, time.Since(start))
	check := func(db *DB) {
		for i := range n {
			v, ok := get(t, db, string(rune('a'+i%26))+string(rune(i)))
			require.True(t, ok, "write %d", i)
			require.Len(t, v, len(value))
		}
	}
	check(db)
	require.NoError(t, db.Close())

	db, err = Open(opts)
	require.NoError(t, err)
	check(db)
	require.ErrorIs(t, set(db, "more", "x"), ErrDiskFull)
	require.NoError(t, db.Close())

	out, err := exec.Command("mount", "-o", "remount,size=128m", mnt).CombinedOutput()
	if err != nil {
		t.Skipf("cannot grow the tmpfs: %v %s", err, out)
	}
	db, err = Open(opts)
	require.NoError(t, err)
	require.NoError(t, set(db, "more", "x"))
	check(db)
	require.NoError(t, db.Close())
}
