package storage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/internal/lazyfs"
)

// diskFaultChildEnv names the directory a child of TestDiskFaults writes in.
const diskFaultChildEnv = "TABULA_DISKFAULT_CHILD"

func diskFaultKey(i int) []byte { return fmt.Appendf(nil, "k%04d", i) }

func diskFaultValue(i int) []byte {
	return []byte(strings.Repeat(strconv.Itoa(i%10), 100+i%300))
}

// TestDiskFaults runs a store on a disk that starts failing every write and fsync with EIO
// (lazyfs's cut) while a child process writes to it: no write is acknowledged after its
// write or fsync failed, none is after the first failure (the store does not retry an fsync
// and pretend), Close ends within its bound whatever the disk does, and every write
// acknowledged as durable before the fault is there when the directory is opened again.
//
// The disk fails every write and fsync with EIO (a dying device) or ENOSPC (a full one):
//
//	case                      | writes after the fault  | Close
//	SyncWrites                | refused (fsync failed)  | error, within closeWait
//	background syncs (1 s)    | refused after a sync    | error, within closeWait
//
// (Reads that fault are TestReadFaultIsAnError's.)
func TestDiskFaults(t *testing.T) {
	if os.Getenv(diskFaultChildEnv) != "" {
		t.Skip("the child's own run")
	}
	if err := lazyfs.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %v", err)
		}
		t.Skip(err)
	}
	for _, tc := range []struct {
		syncWrites bool
		errno      syscall.Errno
	}{{true, syscall.EIO}, {false, syscall.EIO}, {true, syscall.ENOSPC}, {false, syscall.ENOSPC}} {
		syncWrites := tc.syncWrites
		t.Run(fmt.Sprintf("SyncWrites=%v/%s", syncWrites, map[syscall.Errno]string{syscall.EIO: "EIO", syscall.ENOSPC: "ENOSPC"}[tc.errno]), func(t *testing.T) {
			base := t.TempDir()
			backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
			require.NoError(t, os.Mkdir(mnt, 0o755))
			require.NoError(t, os.Mkdir(backing, 0o755))
			fsys, err := lazyfs.Mount(backing, mnt, nil)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDiskFaultChild$")
			cmd.Env = append(os.Environ(), diskFaultChildEnv+"="+mnt, "TABULA_DISKFAULT_SYNC="+strconv.FormatBool(syncWrites))
			cmd.Stderr = os.Stderr
			in, err := cmd.StdinPipe()
			require.NoError(t, err)
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			lines := bufio.NewScanner(out)
			durable := map[int]bool{} // acknowledged, and synced before the fault
			afterFault, closeLine := 0, ""
			faulted, refusing := false, false
			for lines.Scan() {
				line := lines.Text()
				var i int
				switch {
				case line == "synced" && !faulted:
					// Everything acknowledged so far is durable: now the disk fails.
					fsys.Fail(tc.errno)
					faulted = true
					_, err := fmt.Fprintln(in, "go on")
					require.NoError(t, err)
				case strings.HasPrefix(line, "closed"):
					closeLine = line
				case line == "sync failed":
					// Without SyncWrites a write is acknowledged before it is durable (the
					// background sync bounds what is lost); from the failed sync on, none is.
					refusing = true
				default:
					if _, err := fmt.Sscanf(line, "ack %d", &i); err == nil {
						if refusing || faulted && syncWrites {
							afterFault++
						} else if faulted {
							continue
						} else {
							durable[i] = true
						}
					}
				}
			}
			require.NoError(t, cmd.Wait(), "the child ends by itself, Close included")
			require.NoError(t, fsys.Unmount())
			assert.Zero(t, afterFault, "writes acknowledged after the disk failed")
			assert.Contains(t, closeLine, "closed", "Close returned")
			require.NotEmpty(t, durable)

			db, err := Open(Options{Dir: filepath.Join(backing, "db")})
			require.NoError(t, err)
			defer db.Close()
			require.NoError(t, db.View(func(tx *Txn) error {
				for i := range durable {
					var got []byte
					found, err := tx.Get(diskFaultKey(i), func(v []byte) error { got = append([]byte(nil), v...); return nil })
					require.NoError(t, err)
					if assert.True(t, found, "acknowledged write %d lost", i) {
						assert.Equal(t, diskFaultValue(i), got)
					}
				}
				return nil
			}))
		})
	}
}

// TestDiskFaultChild is the writer of TestDiskFaults: it writes, syncs, says "synced" and
// waits for the disk to fail, then goes on writing (saying "ack N" for each write the store
// acknowledged), reads, and closes.
func TestDiskFaultChild(t *testing.T) {
	dir := os.Getenv(diskFaultChildEnv)
	if dir == "" {
		t.Skip("run by TestDiskFaults")
	}
	syncWrites := os.Getenv("TABULA_DISKFAULT_SYNC") == "true"
	db, err := Open(Options{Dir: filepath.Join(dir, "db"), SyncWrites: syncWrites, closeWait: 3 * time.Second})
	require.NoError(t, err)
	write := func(i int) error {
		err := db.Update(func(tx *Txn) error { return tx.Set(diskFaultKey(i), diskFaultValue(i)) })
		if err == nil {
			fmt.Printf("ack %d\n", i)
		}
		return err
	}
	for i := range 200 {
		require.NoError(t, write(i))
	}
	require.NoError(t, db.syncLogs())
	fmt.Println("synced")
	_, err = bufio.NewReader(os.Stdin).ReadString('\n')
	require.NoError(t, err)
	var firstErr error
	for i := 200; i < 400; i++ {
		if err := write(i); err != nil && firstErr == nil {
			firstErr = err
		}
		if i == 300 && !syncWrites {
			// What the background sync does every second.
			assert.Error(t, db.syncLogs())
			fmt.Println("sync failed")
		}
	}
	if syncWrites {
		assert.Error(t, firstErr, "every write needs an fsync, and they all fail")
	}
	assert.ErrorIs(t, write(400), errDiskFailed, "after a failed write or sync, no write is acknowledged")
	fmt.Printf("closed %v\n", db.Close())
	if !errors.Is(firstErr, errDiskFailed) && firstErr != nil {
		t.Logf("first refusal: %v", firstErr)
	}
}

// openWithTables writes 2,000 keys to a store in dir, closes it, so that they are in table
// files, and opens it again (closed when the test ends).
func openWithTables(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	for i := range 2000 {
		require.NoError(t, db.Update(func(tx *Txn) error { return tx.Set(diskFaultKey(i), diskFaultValue(i)) }))
	}
	require.NoError(t, db.Close())
	db, err = Open(Options{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// A table file cut short under the store's mapping (what a disk that fails to read a page
// looks like to a mapping: SIGBUS) makes reads fail with ErrDamaged; the process lives.
func TestReadFaultIsAnError(t *testing.T) {
	dir := t.TempDir()
	db := openWithTables(t, dir)
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.NotEmpty(t, ssts)
	for _, sst := range ssts {
		require.NoError(t, os.Truncate(sst, 0))
	}
	err = db.View(func(tx *Txn) error {
		it := tx.Scan(nil, nil)
		defer it.Close()
		for it.Next() {
			if err := it.Value(func([]byte) error { return nil }); err != nil {
				return err
			}
		}
		return nil
	})
	require.ErrorIs(t, err, ErrDamaged)
	assert.Contains(t, err.Error(), "reading it failed")
}

// A table a compaction deletes while Verify reads it is truncated under Verify's mapping
// (Badger truncates a table it deletes): that is not damage, since the store no longer
// reads the table. The power-loss test met it as a compaction ran after a power cut.
func TestVerifySkipsTablesDeletedMeanwhile(t *testing.T) {
	dir := t.TempDir()
	db := openWithTables(t, dir)
	require.NotEmpty(t, db.liveTables())

	var dropped sync.Once
	tableOpened = func(path string) {
		dropped.Do(func() {
			// What a compaction does to the tables it replaces, here to all of them at
			// once: Badger truncates each, then removes it. Verify met the table between the
			// two (the name kept, the bytes gone), which the empty file stands for.
			require.NoError(t, db.bdb.DropAll())
			require.NoError(t, os.WriteFile(path, nil, 0o644))
		})
	}
	t.Cleanup(func() { tableOpened = nil })
	require.NoError(t, db.Verify(context.Background()))
	assert.Empty(t, db.liveTables(), "the tables were deleted while Verify read them")
}
