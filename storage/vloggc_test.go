package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/internal/badgertuning"
	"github.com/tabuladb/tabula/internal/lazyfs"
)

// gcTestFileSize is the value-log file size of the GC tests: Badger's smallest, so that a few
// MiB of values fill several files.
const gcTestFileSize = 1 << 20

// gcTestValue is the value of key k written in round r: over the value threshold (about
// 4.8 KiB at the smallest budget, which these tests open with), so it lives in the value
// log, and different in every round.
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
	db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, vlogFileSize: fileSize})
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

	countGarbageNow(t, dir, fileSize)
	return live
}

// countGarbageNow has Badger count the garbage in dir: a compaction counts a value it drops, a
// store this small never compacts on its own, so a Badger instance of the same options
// compacts level 0 as it closes. It is opened in managed mode to set the version at or below
// which the compaction may drop: otherwise that is a watermark Badger moves asynchronously
// after Open, and an instance closed at once may drop nothing.
func countGarbageNow(t testing.TB, dir string, fileSize int64) {
	t.Helper()
	bo := badgertuning.Options(dir, MinMemoryBudget).WithValueLogFileSize(fileSize).WithCompactL0OnClose(true)
	bdb, err := badger.OpenManaged(bo)
	require.NoError(t, err)
	bdb.SetDiscardTs(math.MaxUint64)
	require.NoError(t, bdb.Close())
	require.True(t, gcPending(dir), "Badger's discard statistics count no file as garbage")
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

	db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	requireLive(t, db, live)
	require.NoError(t, db.Close())

	requireGivenBack(t, dir, before, live, Options{Dir: dir, vlogFileSize: gcTestFileSize})
}

// With SyncWrites, the store collects in the background, on the ticks it is given.
func TestValueLogGCInBackground(t *testing.T) {
	dir := t.TempDir()
	live := makeGarbage(t, dir, 100, 6)
	before := vlogBytes(t, dir)

	ticks := make(chan time.Time)
	db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, SyncWrites: true, gcTicks: ticks, vlogFileSize: gcTestFileSize})
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

	requireGivenBack(t, dir, before, live, Options{Dir: dir, SyncWrites: true, gcTicks: make(chan time.Time), vlogFileSize: gcTestFileSize})
}

// requireGivenBack checks that the value logs in dir hold at least two files fewer than
// before, and that every live value reads back from the store o opens.
func requireGivenBack(t *testing.T, dir string, before int64, live map[string][]byte, o Options) {
	t.Helper()
	after := vlogBytes(t, dir)
	t.Logf("value logs: %d bytes before, %d after; %d live values of 8 KiB", before, after, len(live))
	assert.Less(t, after, before-2*gcTestFileSize, "at least two files given back")
	db, err := Open(o)
	require.NoError(t, err)
	requireLive(t, db, live)
	require.NoError(t, db.Close())
}

// Close stops a round between passes, and no round runs after it.
func TestValueLogGCStopsAtClose(t *testing.T) {
	dir := t.TempDir()
	live := makeGarbage(t, dir, 100, 6)

	ticks := make(chan time.Time)
	db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, SyncWrites: true, gcTicks: ticks, vlogFileSize: gcTestFileSize})
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

	db, err = Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, SyncWrites: true, gcTicks: make(chan time.Time), vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	requireLive(t, db, live)
	require.NoError(t, db.Close())
}

// gcPending reads Badger's discard statistics; if their format changed, Open would stop
// collecting, which this test would show.
func TestGCPendingReadsDiscardStats(t *testing.T) {
	dir := t.TempDir()
	assert.False(t, gcPending(dir), "no DISCARD file")
	db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir})
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
	db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, vlogFileSize: gcTestFileSize})
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
		db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: clean, vlogFileSize: fileSize})
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
				db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, vlogFileSize: fileSize})
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
	bo := badgertuning.Options(dir, MinMemoryBudget).WithValueLogFileSize(gcTestFileSize)
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
	db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, SyncWrites: true, gcTicks: ticks, vlogFileSize: gcTestFileSize})
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
	db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	for r := range 6 {
		for k := range 100 {
			require.NoError(t, db.Update(func(tx *Txn) error { return tx.Set(gcTestKey(k), gcTestValue(k, r)) }))
		}
	}
	require.NoError(t, db.Close()) // opened with one value-log file: level 0 stays
	require.False(t, gcPending(dir))
	before := vlogBytes(t, dir)

	// Badger sets the version below which compactions drop old values asynchronously after
	// Open, so a Close right after an Open may find nothing to drop (about one time in ten):
	// a few reopens make that as good as impossible, while a Close that never counts fails.
	for range 5 {
		db, err = Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, vlogFileSize: gcTestFileSize})
		require.NoError(t, err)
		require.NoError(t, db.Close())
		if gcPending(dir) {
			break
		}
	}
	require.True(t, gcPending(dir), "Close counted no garbage")

	db, err = Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, vlogFileSize: gcTestFileSize})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	assert.Less(t, vlogBytes(t, dir), before-2*gcTestFileSize, "at least two files given back")
}

// The power-cut test of value-log GC: a child process collects while it overwrites values,
// on lazyfs (internal/lazyfs), and is killed at random moments with the power cut, which
// loses every write no fsync made durable. Stable values, written before the test and
// never overwritten, sit among the garbage that GC rewrites, so GC copies them and deletes
// the files they were in: after every cut each must read back byte for byte, and every
// overwritten key must hold one of the values written to it (with SyncWrites, the last
// acknowledged one or a later one). Without SyncWrites the child collects as it opens the
// store, with it in the background while it writes. TABULA_POWER_CUTS and
// TABULA_POWER_STRICT as in the root package's powerloss_test.go; 3 cuts per mode by
// default, 1 with -short.
//
// Cuts at random points rarely fall where an unsafe GC loses data: a GC at Open on an
// instance without SyncWrites passed 40 of them, and failed only when the cut came at the
// first file collected (the file gone, its copies not on disk). Stopping the child there
// for every cut made lazyfs hang in the mode with SyncWrites, so this test catches gross
// errors; the argument for safety is in vloggc.go.
const gcPowerChildEnv = "TABULA_GC_POWER_CHILD"

// gcStableKey is the key of stable value i.
func gcStableKey(i int) []byte { return fmt.Appendf(nil, "stable%03d", i) }

func TestValueLogGCPowerCut(t *testing.T) {
	if os.Getenv(gcPowerChildEnv) != "" {
		t.Skip("the child's own run")
	}
	if err := lazyfs.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %v", err)
		}
		t.Skip(err)
	}
	cuts := 3
	if testing.Short() {
		cuts = 1
	}
	if s := os.Getenv("TABULA_POWER_CUTS"); s != "" {
		var err error
		cuts, err = strconv.Atoi(s)
		require.NoError(t, err, "TABULA_POWER_CUTS")
	}
	for _, syncWrites := range []bool{false, true} {
		t.Run(fmt.Sprintf("SyncWrites=%v", syncWrites), func(t *testing.T) {
			base := t.TempDir()
			backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
			require.NoError(t, os.Mkdir(mnt, 0o755))
			// Six rounds over 100 keys with a stable value in every commit, then counted
			// as garbage (see makeGarbage).
			stable := map[string][]byte{}
			db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: backing, vlogFileSize: gcTestFileSize})
			require.NoError(t, err)
			for r := range 6 {
				for lo := 0; lo < 100; lo += 25 {
					require.NoError(t, db.Update(func(tx *Txn) error {
						i := len(stable)
						stable[string(gcStableKey(i))] = gcTestValue(-1-i, 0)
						if err := tx.Set(gcStableKey(i), gcTestValue(-1-i, 0)); err != nil {
							return err
						}
						for k := lo; k < lo+25; k++ {
							if err := tx.Set(gcTestKey(k), gcTestValue(k, r)); err != nil {
								return err
							}
						}
						return nil
					}))
				}
			}
			require.NoError(t, db.Close())
			countGarbageNow(t, backing, gcTestFileSize)

			rng := rand.New(rand.NewPCG(11, 12))
			acked := map[int]int{} // key to the round of its last acknowledged write
			round := 100           // the child's rounds start here, and go on after each cut
			var collected int
			for range cuts {
				fsys, err := lazyfs.Mount(backing, mnt, &lazyfs.Options{Strict: os.Getenv("TABULA_POWER_STRICT") == "1"})
				require.NoError(t, err)
				cmd := exec.Command(os.Args[0], "-test.run=^TestValueLogGCPowerChild$")
				cmd.Env = append(os.Environ(), gcPowerChildEnv+"="+mnt, "TABULA_GC_POWER_ROUND="+strconv.Itoa(round),
					"TABULA_GC_POWER_SYNC="+strconv.FormatBool(syncWrites))
				cmd.Stderr = os.Stderr
				out, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				lines := bufio.NewScanner(out)
				n, cut := 1+rng.IntN(40), false // the events to let by before the cut
				for lines.Scan() {
					var r, lo int
					if _, err := fmt.Sscanf(lines.Text(), "ack %d %d", &r, &lo); err == nil {
						for k := lo; k < lo+25; k++ {
							acked[k] = r
						}
						round = max(round, r+1)
					}
					if lines.Text() == "gc" {
						collected++
					}
					if n--; n == 0 {
						cut = true
						require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
						fsys.Cut()
					}
				}
				_ = cmd.Wait()
				require.True(t, cut, "the child stopped before the cut")
				require.NoError(t, fsys.Unmount())

				// What the disk held at the cut: it must open, and hold every stable value.
				db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: backing, SyncWrites: true, gcTicks: make(chan time.Time), vlogFileSize: gcTestFileSize})
				require.NoError(t, err, "the directory must open after a power cut")
				require.NoError(t, db.View(func(tx *Txn) error {
					for k, want := range stable {
						found, err := tx.Get([]byte(k), func(v []byte) error {
							require.Equal(t, want, v, "stable value %s", k)
							return nil
						})
						require.NoError(t, err, "stable value %s", k)
						require.True(t, found, "stable value %s is lost", k)
					}
					for k := range 100 {
						found, err := tx.Get(gcTestKey(k), func(v []byte) error {
							for r := round - 1; r >= 0; r-- {
								if bytes.Equal(v, gcTestValue(k, r)) {
									if syncWrites {
										require.GreaterOrEqual(t, r, acked[k], "key %d lost its acknowledged round", k)
									}
									return nil
								}
							}
							return fmt.Errorf("key %d holds a value never written to it", k)
						})
						require.NoError(t, err)
						require.True(t, found, "key %d is lost", k)
					}
					return nil
				}))
				require.NoError(t, db.Close())
			}
			t.Logf("%d cuts, %d value-log files collected before them", cuts, collected)
		})
	}
}

// TestValueLogGCPowerChild is the child of TestValueLogGCPowerCut: it opens the store,
// overwrites every key once, and closes it, forever, printing an event line after each step
// ("ack <round> <first key>" for each acknowledged write, "gc" for each file collected)
// until it is killed.
func TestValueLogGCPowerChild(t *testing.T) {
	dir := os.Getenv(gcPowerChildEnv)
	if dir == "" {
		t.Skip("run by TestValueLogGCPowerCut")
	}
	round, err := strconv.Atoi(os.Getenv("TABULA_GC_POWER_ROUND"))
	require.NoError(t, err)
	syncWrites := os.Getenv("TABULA_GC_POWER_SYNC") == "true"
	afterGCPass = func() { fmt.Println("gc") }
	for ; ; round++ {
		ticks := make(chan time.Time)
		db, err := Open(Options{MemoryBudget: MinMemoryBudget, Dir: dir, SyncWrites: syncWrites, gcTicks: ticks, vlogFileSize: gcTestFileSize})
		require.NoError(t, err)
		fmt.Println("opened")
		for lo := 0; lo < 100; lo += 25 {
			if syncWrites {
				ticks <- time.Time{} // a round runs beside the writes that follow
			}
			require.NoError(t, db.Update(func(tx *Txn) error {
				for k := lo; k < lo+25; k++ {
					if err := tx.Set(gcTestKey(k), gcTestValue(k, round)); err != nil {
						return err
					}
				}
				return nil
			}))
			fmt.Printf("ack %d %d\n", round, lo)
		}
		require.NoError(t, db.Close())
		fmt.Println("closed")
	}
}
