package lazyfs_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tabuladb/tabula/internal/lazyfs"
)

// mount mounts a lazyfs over a new backing directory and returns both paths. Without FUSE
// the test skips, unless CI is set: CI installs fuse3 and must run these tests.
func mount(t *testing.T, o *lazyfs.Options) (fsys *lazyfs.FS, backing, mnt string) {
	t.Helper()
	if err := lazyfs.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %v", err)
		}
		t.Skip(err)
	}
	base := t.TempDir()
	backing, mnt = filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	require.NoError(t, os.Mkdir(backing, 0o755))
	require.NoError(t, os.Mkdir(mnt, 0o755))
	return remount(t, backing, mnt, o), backing, mnt
}

func remount(t *testing.T, backing, mnt string, o *lazyfs.Options) *lazyfs.FS {
	t.Helper()
	fsys, err := lazyfs.Mount(backing, mnt, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = fsys.Unmount() }) // a second Unmount does nothing
	return fsys
}

// cut cuts the power, unmounts (restoring the durable state) and mounts again.
func cut(t *testing.T, fsys *lazyfs.FS, backing, mnt string, o *lazyfs.Options) *lazyfs.FS {
	t.Helper()
	fsys.Cut()
	require.NoError(t, fsys.Unmount())
	return remount(t, backing, mnt, o)
}

func write(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	if sync {
		require.NoError(t, f.Sync())
	}
	require.NoError(t, f.Close())
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestContentIsDurableAsOfTheLastFsync(t *testing.T) {
	fsys, backing, mnt := mount(t, nil)
	p := filepath.Join(mnt, "f")
	synced := bytes.Repeat([]byte("s"), 3*4096+100) // several blocks and a partial one
	write(t, p, synced, true)

	// Overwrite part of it, grow it, unsynced.
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("UNSYNCED"), 4090) // across a block boundary
	require.NoError(t, err)
	_, err = f.WriteAt(bytes.Repeat([]byte("g"), 9000), int64(len(synced)))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Len(t, read(t, p), len(synced)+9000, "the mount shows unsynced writes before a cut")

	fsys = cut(t, fsys, backing, mnt, nil)
	require.Equal(t, string(synced), read(t, p))
	require.Equal(t, string(synced), read(t, filepath.Join(backing, "f")))
	require.Positive(t, fsys.Stats().Written+1) // a fresh mount counts from zero
}

func TestTruncateIsUndone(t *testing.T) {
	fsys, backing, mnt := mount(t, nil)
	p := filepath.Join(mnt, "f")
	synced := bytes.Repeat([]byte("0123456789"), 2000)
	write(t, p, synced, true)
	require.NoError(t, os.Truncate(p, 5))
	write(t, p, []byte("x"), false) // and a write after the cut-down size
	fsys = cut(t, fsys, backing, mnt, nil)
	require.Equal(t, string(synced), read(t, p))

	// A file truncated and then synced keeps the new size.
	require.NoError(t, os.Truncate(p, 7))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	_ = cut(t, fsys, backing, mnt, nil)
	require.Equal(t, string(synced[:7]), read(t, p))
}

func TestSyncedWritesSurviveLaterUnsyncedOnes(t *testing.T) {
	fsys, backing, mnt := mount(t, nil)
	p := filepath.Join(mnt, "log")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	var want []byte
	for i := range 50 {
		rec := bytes.Repeat([]byte{byte('a' + i%26)}, 1000)
		_, err := f.Write(rec)
		require.NoError(t, err)
		if i < 30 {
			require.NoError(t, f.Sync())
			want = append(want, rec...)
		}
	}
	fsys.Cut()
	_, err = f.Write([]byte("after"))
	require.ErrorIs(t, err, syscall.EIO, "after a cut nothing reaches the disk")
	require.ErrorIs(t, f.Sync(), syscall.EIO)
	require.NoError(t, f.Close())
	require.NoError(t, fsys.Unmount())
	fsys = remount(t, backing, mnt, nil)
	require.Equal(t, string(want), read(t, p))
	_ = fsys
}

func TestNamesAreDurableWithTheNextFsync(t *testing.T) {
	fsys, backing, mnt := mount(t, nil)
	write(t, filepath.Join(mnt, "kept"), []byte("k"), true)
	write(t, filepath.Join(mnt, "unsynced"), []byte("u"), false)
	write(t, filepath.Join(mnt, "gone"), []byte("g"), true)
	write(t, filepath.Join(mnt, "old"), []byte("o"), true)
	// Since the last fsync: a create, an unlink, a rename over another file.
	write(t, filepath.Join(mnt, "new"), []byte("n"), false)
	require.NoError(t, os.Remove(filepath.Join(mnt, "gone")))
	require.NoError(t, os.Rename(filepath.Join(mnt, "old"), filepath.Join(mnt, "kept")))
	fsys = cut(t, fsys, backing, mnt, nil)
	names := func() []string {
		entries, err := os.ReadDir(mnt)
		require.NoError(t, err)
		var ns []string
		for _, e := range entries {
			ns = append(ns, e.Name())
		}
		return ns
	}
	// "unsynced" was created before the fsync of "gone", which committed its name, but not
	// its content.
	require.Equal(t, []string{"gone", "kept", "old", "unsynced"}, names())
	require.Equal(t, "k", read(t, filepath.Join(mnt, "kept")))
	require.Equal(t, "o", read(t, filepath.Join(mnt, "old")))
	require.Equal(t, "g", read(t, filepath.Join(mnt, "gone")))
	require.Empty(t, read(t, filepath.Join(mnt, "unsynced")))

	// The same changes followed by an fsync of anything are durable.
	write(t, filepath.Join(mnt, "new"), []byte("n"), false)
	require.NoError(t, os.Remove(filepath.Join(mnt, "gone")))
	require.NoError(t, os.Rename(filepath.Join(mnt, "old"), filepath.Join(mnt, "kept")))
	write(t, filepath.Join(mnt, "other"), nil, true)
	_ = cut(t, fsys, backing, mnt, nil)
	require.Equal(t, []string{"kept", "new", "other", "unsynced"}, names())
	require.Equal(t, "o", read(t, filepath.Join(mnt, "kept")))
	require.Empty(t, read(t, filepath.Join(mnt, "new")), "the name is durable, its content was never synced")
	entries, err := os.ReadDir(backing + ".lazyfs-trash")
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestStrictNamesNeedAnFsyncOfTheirDirectory(t *testing.T) {
	strict := &lazyfs.Options{Strict: true}
	fsys, backing, mnt := mount(t, strict)
	require.NoError(t, os.Mkdir(filepath.Join(mnt, "d"), 0o755))
	write(t, filepath.Join(mnt, "d", "a"), []byte("a"), true) // content synced, name not
	fsys = cut(t, fsys, backing, mnt, strict)
	_, err := os.Stat(filepath.Join(mnt, "d", "a"))
	require.ErrorIs(t, err, os.ErrNotExist)

	write(t, filepath.Join(mnt, "d", "a"), []byte("a"), true)
	write(t, filepath.Join(mnt, "b"), []byte("b"), true)
	syncDir(t, filepath.Join(mnt, "d")) // commits d/a, not b
	_ = cut(t, fsys, backing, mnt, strict)
	require.Equal(t, "a", read(t, filepath.Join(mnt, "d", "a")))
	_, err = os.Stat(filepath.Join(mnt, "b"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestMmap: Badger writes its logs through shared memory maps and makes them durable with
// msync, which the kernel turns into writes and an fsync. The maps are made by a child
// process: a process serving a FUSE file system must not fault in pages of its own mount,
// or its garbage collector can wait forever on the fault, which waits on the server.
func TestMmap(t *testing.T) {
	if p := os.Getenv("LAZYFS_MMAP_CHILD"); p != "" {
		mmapWrites(t, p)
		return
	}
	fsys, backing, mnt := mount(t, nil)
	p := filepath.Join(mnt, "m")
	cmd := exec.Command(os.Args[0], "-test.run=^TestMmap$")
	cmd.Env = append(os.Environ(), "LAZYFS_MMAP_CHILD="+p)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	_ = cut(t, fsys, backing, mnt, nil)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Len(t, got, 1<<20)
	require.Equal(t, "synced", string(got[100:106]))
	require.Equal(t, make([]byte, 8), got[200000:200008])
}

func mmapWrites(t *testing.T, p string) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1<<20))
	require.NoError(t, f.Sync())
	mem, err := unix.Mmap(int(f.Fd()), 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	copy(mem[100:], "synced")
	require.NoError(t, unix.Msync(mem, unix.MS_SYNC))
	copy(mem[200000:], "unsynced")
	// The page reaches the file system when the file is closed, but no fsync follows.
	require.NoError(t, unix.Munmap(mem))
	require.NoError(t, f.Close())
}

// Unmounted without a cut, the backing directory keeps every change, synced or not, and
// mounts again.
func TestUnmountWithoutCutKeepsEverything(t *testing.T) {
	fsys, backing, mnt := mount(t, nil)
	write(t, filepath.Join(mnt, "a"), []byte("a"), true)
	write(t, filepath.Join(mnt, "b"), []byte("b"), false)
	require.NoError(t, os.Remove(filepath.Join(mnt, "a"))) // a durable name: kept in the trash
	require.NoError(t, fsys.Unmount())
	_, err := os.Stat(filepath.Join(backing, "a"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Equal(t, "b", read(t, filepath.Join(backing, "b")))
	_ = remount(t, backing, mnt, nil)
	require.Equal(t, "b", read(t, filepath.Join(mnt, "b")))
}

func TestUnsupportedOperationsFail(t *testing.T) {
	_, _, mnt := mount(t, nil)
	write(t, filepath.Join(mnt, "f"), []byte("f"), true)
	require.Error(t, os.Link(filepath.Join(mnt, "f"), filepath.Join(mnt, "g")))
	require.Error(t, os.Symlink("f", filepath.Join(mnt, "s")))
}

// A failing disk (Fail) answers every change with the error it is given, ENOSPC here, and
// keeps what fsync made durable, as a cut does.
func TestFailWith(t *testing.T) {
	fsys, backing, mnt := mount(t, nil)
	p := filepath.Join(mnt, "log")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = f.Write([]byte("kept"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	fsys.Fail(syscall.ENOSPC)
	_, err = f.Write([]byte("lost"))
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.ErrorIs(t, f.Sync(), syscall.ENOSPC)
	_, err = os.Create(filepath.Join(mnt, "new"))
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.NoError(t, f.Close())
	require.NoError(t, fsys.Unmount())
	fsys = remount(t, backing, mnt, nil)
	require.Equal(t, "kept", read(t, p))
	_ = fsys
}
