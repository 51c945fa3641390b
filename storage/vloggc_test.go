package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gcTestFileSize is the value-log file size of the GC tests: Badger's smallest, so that a few
// MiB of values fill several files.
const gcTestFileSize = 1 << 20

// gcTestValue is the value of key k written in round r: over the value threshold (about
// 4.8 KiB at the default budget), so it lives in the value log, and different in every round.
func gcTestValue(k, r int) []byte {
	v := make([]byte, 8<<10)
	rng := rand.New(rand.NewPCG(uint64(k), uint64(r)))
	for i := range v {
		v[i] = byte(rng.Uint32())
	}
	return v
}

func gcTestKey(k int) []byte { return fmt.Appendf(nil, "key%06d", k) }

// makeGarbage writes keys values in dir, overwrites them rounds-1 times and deletes every
// fourth, then has Badger compact its tree so that it counts the overwritten values as
// garbage; it returns what each live key holds. The store is closed when it returns.
func makeGarbage(t testing.TB, dir string, keys, rounds int) map[string][]byte {
	t.Helper()
	return makeGarbageSized(t, dir, keys, rounds, gcTestFileSize)
}

func makeGarbageSized(t testing.TB, dir string, keys, rounds int, fileSize int64) map[string][]byte {
	t.Helper()
	db, err := Open(Options{Dir: dir, vlogFileSize: fileSize})
	require.NoError(t, err)
	live := map[string][]byte{}
	for r := range rounds {
		for lo := 0; lo < keys; lo += 25 {
			require.NoError(t, db.Update(func(tx *Txn) error {
				for k := lo; k < min(lo+25, keys); k++ {
					v := gcTestValue(k, r)
					live[string(gcTestKey(k))] = v
					if err := tx.Set(gcTestKey(k), v); err != nil {
						return err
					}
				}
				return nil
			}))
		}
	}
	for lo := 0; lo < keys; lo += 4000 {
		require.NoError(t, db.Update(func(tx *Txn) error {
			for k := lo; k < min(lo+4000, keys); k += 4 {
				delete(live, string(gcTestKey(k)))
				if err := tx.Delete(gcTestKey(k)); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	require.NoError(t, db.Close())

	// Badger counts a value as garbage when a compaction drops it; a store this small never
	// compacts on its own, so a Badger instance of the same options flushes its memtable and
	// compacts level 0 as it closes.
	bo := BadgerOptions(dir, 0).WithValueLogFileSize(fileSize).WithCompactL0OnClose(true)
	bdb, err := badger.Open(bo)
	require.NoError(t, err)
	require.NoError(t, bdb.Close())
	require.True(t, gcPending(dir), "Badger's discard statistics count no file as garbage")
	return live
}

// vlogBytes is the size of the value-log files in dir, a closed store's.
func vlogBytes(t testing.TB, dir string) int64 {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	require.NoError(t, err)
	var n int64
	for _, l := range logs {
		st, err := os.Stat(l)
		require.NoError(t, err)
		n += st.Size()
	}
	return n
}

// requireLive checks that db holds exactly the keys and values of live, byte for byte.
func requireLive(t *testing.T, db *DB, live map[string][]byte) {
	t.Helper()
	var seen int
	require.NoError(t, db.View(func(tx *Txn) error {
		it := tx.Scan([]byte("key"), []byte("kez"))
		defer it.Close()
		for it.Next() {
			seen++
			want, ok := live[string(it.Key())]
			require.True(t, ok, "deleted key %s is back", it.Key())
			require.NoError(t, it.Value(func(v []byte) error {
				require.Equal(t, want, v, "value of %s", it.Key())
				return nil
			}))
		}
		return nil
	}))
	require.Equal(t, len(live), seen)
	require.NoError(t, db.View(func(tx *Txn) error {
		for k, want := range live {
			found, err := tx.Get([]byte(k), func(v []byte) error {
				require.Equal(t, want, v, "value of %s", k)
				return nil
			})
			require.NoError(t, err)
			require.True(t, found, k)
		}
		return nil
	}))
}

// Without SyncWrites, Open collects on a temporary instance with SyncWrites before it opens
// the store: the value logs shrink and every live value reads back.
func TestValueLogGCAtOpen(t *testing.T) {
	dir := t.TempDir()
	live := makeGarbage(t, dir, 100, 6)
	before := vlogBytes(t, dir)

	db, err := Open(Options{Dir: dir, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	requireLive(t, db, live)
	require.NoError(t, db.Close())

	after := vlogBytes(t, dir)
	t.Logf("value logs: %d bytes before, %d after; %d live values of 8 KiB", before, after, len(live))
	assert.Less(t, after, before-2*gcTestFileSize, "at least two files given back")

	db, err = Open(Options{Dir: dir, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	requireLive(t, db, live)
	require.NoError(t, db.Close())
}

// With SyncWrites, the store collects in the background, on the ticks it is given.
func TestValueLogGCInBackground(t *testing.T) {
	dir := t.TempDir()
	live := makeGarbage(t, dir, 100, 6)
	before := vlogBytes(t, dir)

	ticks := make(chan time.Time)
	db, err := Open(Options{Dir: dir, SyncWrites: true, gcTicks: ticks, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	// Reads and writes go on while the round runs: no read fails or sees another value,
	// though the files the values were in go away.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			for k, want := range live {
				err := db.View(func(tx *Txn) error {
					found, err := tx.Get([]byte(k), func(v []byte) error {
						if !bytes.Equal(want, v) {
							return fmt.Errorf("%s changed", k)
						}
						return nil
					})
					if err == nil && !found {
						err = fmt.Errorf("%s is gone", k)
					}
					return err
				})
				if !assert.NoError(t, err) {
					return
				}
			}
		}
	})
	wg.Go(func() {
		for r := 0; ; r++ {
			select {
			case <-done:
				return
			default:
			}
			err := db.Update(func(tx *Txn) error {
				return tx.Set([]byte("other"), gcTestValue(-1, r))
			})
			if !assert.NoError(t, err) {
				return
			}
		}
	})
	ticks <- time.Time{}
	ticks <- time.Time{} // received once the first round is over
	close(done)
	wg.Wait()
	requireLive(t, db, live)
	require.NoError(t, db.Close())

	after := vlogBytes(t, dir)
	t.Logf("value logs: %d bytes before, %d after; %d live values of 8 KiB", before, after, len(live))
	assert.Less(t, after, before-2*gcTestFileSize, "at least two files given back")

	db, err = Open(Options{Dir: dir, SyncWrites: true, gcTicks: make(chan time.Time), vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	requireLive(t, db, live)
	require.NoError(t, db.Close())
}

// Close stops a round between passes, and no round runs after it.
func TestValueLogGCStopsAtClose(t *testing.T) {
	dir := t.TempDir()
	live := makeGarbage(t, dir, 100, 6)

	ticks := make(chan time.Time)
	db, err := Open(Options{Dir: dir, SyncWrites: true, gcTicks: ticks, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	passes := make(chan struct{}, gcPasses)
	old := afterGCPass
	t.Cleanup(func() { afterGCPass = old })
	afterGCPass = func() {
		passes <- struct{}{}
		<-db.stopGC // hold the round until Close has asked it to stop
	}
	ticks <- time.Time{}
	<-passes
	require.NoError(t, db.Close())
	assert.Empty(t, passes, "a pass ran after Close asked the round to stop")
	select {
	case ticks <- time.Time{}:
		t.Fatal("a round started after Close")
	default:
	}
	assert.True(t, gcPending(dir), "the round went on after its first pass")

	db, err = Open(Options{Dir: dir, SyncWrites: true, gcTicks: make(chan time.Time), vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	requireLive(t, db, live)
	require.NoError(t, db.Close())
}

// gcPending reads Badger's discard statistics; if their format changed, Open would stop
// collecting, which this test would show.
func TestGCPendingReadsDiscardStats(t *testing.T) {
	dir := t.TempDir()
	assert.False(t, gcPending(dir), "no DISCARD file")
	db, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	assert.False(t, gcPending(dir), "an empty store")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Contains(t, strings.Join(names, " "), "DISCARD", "where gcPending looks")
}

// A commit of a large value syncs only the value logs that may hold unsynced writes: those
// from the newest at the last sync on (with small files there are many complete ones).
func TestSyncValueLogsSkipsCompleteFiles(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	for k := range 400 { // 3.2 MiB: three files or more
		require.NoError(t, db.Update(func(tx *Txn) error { return tx.Set(gcTestKey(k), gcTestValue(k, 0)) }))
	}
	logs, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	require.NoError(t, err)
	require.Greater(t, len(logs), 3)
	db.commits.Lock()
	defer db.commits.Unlock()
	assert.Equal(t, fmt.Sprintf("%06d.vlog", db.vlogSynced), filepath.Base(logs[len(logs)-1]), "synced up to the newest file")
}

// BenchmarkOpenGC is the cost of an Open without SyncWrites that collects (a store whose
// value logs, of TABULA_BENCH_VLOG_MIB MiB each, default 1, hold five files of garbage in six,
// of which it rewrites up to gcPasses) against one that finds nothing to collect (the same
// store after collecting). Each iteration opens a fresh copy of the store; only Open is timed.
func BenchmarkOpenGC(b *testing.B) {
	mib := int64(1)
	if v := os.Getenv("TABULA_BENCH_VLOG_MIB"); v != "" {
		var err error
		mib, err = strconv.ParseInt(v, 10, 64)
		require.NoError(b, err)
	}
	fileSize := mib << 20
	garbage := b.TempDir()
	makeGarbageSized(b, garbage, int(fileSize/(8<<10)), 6, fileSize)
	clean := b.TempDir()
	require.NoError(b, os.CopyFS(clean, os.DirFS(garbage)))
	for i := 0; gcPending(clean); i++ {
		require.Less(b, i, 3, "Open keeps finding garbage")
		db, err := Open(Options{Dir: clean, vlogFileSize: fileSize})
		require.NoError(b, err)
		require.NoError(b, db.Close())
	}

	for _, bc := range []struct {
		name, dir string
	}{{"collect", garbage}, {"nothing", clean}} {
		b.Run(bc.name, func(b *testing.B) {
			var freed int64
			for b.Loop() {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "db")
				require.NoError(b, os.CopyFS(dir, os.DirFS(bc.dir)))
				before := vlogBytes(b, dir)
				b.StartTimer()
				db, err := Open(Options{Dir: dir, vlogFileSize: fileSize})
				b.StopTimer()
				require.NoError(b, err)
				require.NoError(b, db.Close())
				freed += before - vlogBytes(b, dir)
				require.NoError(b, os.RemoveAll(dir))
				b.StartTimer()
			}
			b.ReportMetric(float64(freed)/float64(b.N)/(1<<20), "MiB-freed/op")
		})
	}
}

// A background round that finds nothing counted has Badger compact a small tree, which counts
// the garbage, and collects it.
func TestValueLogGCCountsInBackground(t *testing.T) {
	dir := t.TempDir()
	bo := BadgerOptions(dir, 0).WithValueLogFileSize(gcTestFileSize)
	live := map[string][]byte{}
	write := func(rounds []int, compactL0 bool) {
		bdb, err := badger.Open(bo.WithCompactL0OnClose(compactL0))
		require.NoError(t, err)
		for _, r := range rounds {
			for lo := 0; lo < 100; lo += 25 {
				require.NoError(t, bdb.Update(func(tx *badger.Txn) error {
					for k := lo; k < lo+25; k++ {
						if k%4 == 0 && r == 5 {
							delete(live, string(gcTestKey(k)))
							if err := tx.Delete(gcTestKey(k)); err != nil {
								return err
							}
							continue
						}
						live[string(gcTestKey(k))] = gcTestValue(k, r)
						if err := tx.Set(gcTestKey(k), gcTestValue(k, r)); err != nil {
							return err
						}
					}
					return nil
				}))
			}
		}
		require.NoError(t, bdb.Close())
	}
	write([]int{0}, true)              // below level 0, no garbage
	write([]int{1, 2, 3, 4, 5}, false) // in level 0, not counted
	require.False(t, gcPending(dir))
	before := vlogBytes(t, dir)

	ticks := make(chan time.Time)
	db, err := Open(Options{Dir: dir, SyncWrites: true, gcTicks: ticks, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	ticks <- time.Time{}
	ticks <- time.Time{}
	requireLive(t, db, live)
	require.NoError(t, db.Close())
	after := vlogBytes(t, dir)
	t.Logf("value logs: %d bytes before, %d after; %d live values of 8 KiB", before, after, len(live))
	assert.Less(t, after, before-2*gcTestFileSize, "at least two files given back")
}

// A store whose value log is past its first file compacts level 0 as it closes, which counts
// the garbage for the next Open to collect.
func TestCloseCountsGarbage(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	for r := range 6 {
		for k := range 100 {
			require.NoError(t, db.Update(func(tx *Txn) error { return tx.Set(gcTestKey(k), gcTestValue(k, r)) }))
		}
	}
	require.NoError(t, db.Close()) // opened with one value-log file: level 0 stays
	require.False(t, gcPending(dir))
	before := vlogBytes(t, dir)

	db, err = Open(Options{Dir: dir, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.True(t, gcPending(dir), "Close counted no garbage")

	db, err = Open(Options{Dir: dir, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	assert.Less(t, vlogBytes(t, dir), before-2*gcTestFileSize, "at least two files given back")
}
