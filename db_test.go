package tabula

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A full disk refuses writes with ErrDiskFull, a 503 ServerBusy that SDKs retry, and keeps
// serving reads; the database opens again on a full disk, read-only, and writes once it has
// space. (Badger used to run into the full disk and die of SIGBUS; see also
// storage.TestFullDiskOnTmpfs, on a real small disk.)
func TestFullDiskRefusesWritesKeepsReads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var free atomic.Uint64
	free.Store(1 << 40)
	opts := &Options{freeSpace: func() (uint64, error) { return free.Load(), nil }}
	db, err := Open(dir, opts)
	require.NoError(t, err)
	tbl := createTable(t, db, "Full")
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "1"})
	require.NoError(t, err)

	free.Store(100 << 20) // below the 512 MiB reserve
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "2"})
	require.ErrorIs(t, err, ErrDiskFull)
	require.ErrorIs(t, err, ErrServerBusy)
	assert.True(t, IsRetryable(err))
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 503, te.StatusCode)
	assert.Contains(t, te.Detail, "bytes free")
	_, err = tbl.SubmitTransaction(ctx, []Action{InsertAction(Entity{PartitionKey: "p", RowKey: "3"})})
	require.ErrorIs(t, err, ErrDiskFull)
	_, err = db.CreateTable(ctx, "Other")
	require.ErrorIs(t, err, ErrDiskFull)
	got, err := tbl.Get(ctx, "p", "1")
	require.NoError(t, err, "reads go on")
	assert.Equal(t, "1", got.RowKey)
	assert.Len(t, dumpTable(t, tbl), 1)
	require.NoError(t, db.Close())

	db, err = Open(dir, opts)
	require.NoError(t, err, "opens read-only on a full disk")
	tbl = db.Table("Full")
	_, err = tbl.Get(ctx, "p", "1")
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "2"})
	require.ErrorIs(t, err, ErrDiskFull)
	assert.Contains(t, err.Error(), "read-only")
	require.NoError(t, db.Close())

	free.Store(1 << 40)
	db, err = openDir(t, dir, opts)
	require.NoError(t, err)
	_, err = db.Table("Full").Insert(ctx, Entity{PartitionKey: "p", RowKey: "2"})
	require.NoError(t, err)
}

// syncBuffer is a bytes.Buffer that a logger may write to from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A directory left by a kill -9 opens on a disk with less free space than the reserve (it
// used to fail: "opening it read-only failed: ... Log truncate required to run DB"), with
// every acknowledged write; writes are refused, the first refusal is reported once, and
// they resume as soon as there is space, without a restart.
func TestOpenAfterCrashOnFullDisk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// TestCrashChild (crash_test.go) writes transactions of 5 entities and acknowledges each.
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
	cmd.Env = append(os.Environ(), "TABULA_CRASH_CHILD="+dir, "TABULA_CRASH_FROM=0")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	acked := -1
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if s, ok := strings.CutPrefix(lines.Text(), "ack "); ok {
			acked, err = strconv.Atoi(s)
			require.NoError(t, err)
			if acked == 100 {
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			}
		}
	}
	_ = cmd.Wait()
	require.GreaterOrEqual(t, acked, 100)

	var free atomic.Uint64
	free.Store(100 << 20) // below the 512 MiB reserve
	var log syncBuffer
	opts := &Options{freeSpace: func() (uint64, error) { return free.Load(), nil },
		Logger: slog.New(slog.NewTextHandler(&log, nil))}
	db, err := Open(dir, opts)
	require.NoError(t, err, "a directory left by a crash opens on a full disk")
	require.ErrorIs(t, db.DiskFull(), ErrDiskFull)
	assert.Contains(t, log.String(), "the disk has less free space than the reserve")
	tbl := db.Table("Crash")
	rows := map[string]int{}
	for e, err := range tbl.QueryAll(ctx, Query{}) {
		require.NoError(t, err)
		rows[e.PartitionKey]++
	}
	for seq := range acked + 1 {
		require.Equal(t, 5, rows[fmt.Sprintf("w%08d", seq)], "acknowledged transaction %d", seq)
	}
	for range 2 {
		_, err = tbl.Insert(ctx, Entity{PartitionKey: "more", RowKey: "1"})
		require.ErrorIs(t, err, ErrDiskFull)
	}
	assert.Equal(t, 1, strings.Count(log.String(), "writes refused for want of disk space"),
		"the first refused write is logged, once: %s", log.String())

	// The store reopens writable when no reader holds it (see storage.DB.reopenWritable):
	// the report waits for the one the query started, the table's count of its data.
	db.HeatReport()
	free.Store(1 << 40)
	require.NoError(t, db.DiskFull())
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "more", RowKey: "1"})
	require.NoError(t, err, "writes resume once there is space, without a restart")
	_, err = db.CreateTable(ctx, "Other")
	require.NoError(t, err)
	require.NoError(t, db.Check(ctx))
	require.NoError(t, db.Close())
}

// Close does not wait for an export to read everything: closing the store waits for every
// read under way, so the export gives way, ending with an error that says why.
func TestCloseStopsExport(t *testing.T) {
	bothStores(t, func(t *testing.T) {
		ctx := context.Background()
		db := openStore(t, nil)
		tbl := createTable(t, db, "Big")
		const n = 2000
		for i := 0; i < n; i += 100 {
			actions := make([]Action, 100)
			for j := range actions {
				actions[j] = InsertAction(Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%05d", i+j)})
			}
			_, err := tbl.SubmitTransaction(ctx, actions)
			require.NoError(t, err)
		}
		var lines int
		closed := make(chan error, 1)
		err := db.Export(ctx, lineCounter{&lines}, &ExportOptions{ProgressEvery: 100, Progress: func(Progress) error {
			if db.closed() {
				return nil
			}
			go func() { closed <- db.Close() }()
			<-db.closeWatch.ended // Close has begun and ended the export's context
			return nil
		}})
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrInternal)
		assert.Contains(t, err.Error(), "the database was closed")
		assert.Less(t, lines, n, "the export stopped early")
		require.NoError(t, <-closed)
	})
}

// lineCounter counts the lines written to it.
type lineCounter struct{ n *int }

func (c lineCounter) Write(p []byte) (int, error) {
	*c.n += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}
