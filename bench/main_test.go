package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tabuladb/tabula"
)

// The store and the entity shape are chosen by environment variables rather than
// sub-benchmark names, so that the names stay stable for the scripts that read them (bench/ratios):
//
//	TABULA_BENCH_STORE=disk (default) | mem
//	TABULA_BENCH_SHAPE=payload (default) | mixed
//
// In memory, the core benchmarks and BenchmarkQuery also run a btree sub-benchmark, the
// engine's in-memory peer (see btreeStore), beside badger (raw Badger in memory).
var (
	inMemory bool
	shape    Shape
)

func TestMain(m *testing.M) {
	switch s := os.Getenv("TABULA_BENCH_STORE"); s {
	case "", "disk":
	case "mem":
		inMemory = true
	default:
		fmt.Fprintf(os.Stderr, "bench: TABULA_BENCH_STORE=%q: want disk or mem\n", s)
		os.Exit(2)
	}
	var err error
	if shape, err = ParseShape(os.Getenv("TABULA_BENCH_SHAPE")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	closeReadFixture()
	os.Exit(code)
}

var ctx = context.Background()

// openEngine opens a Tabula DB in dir (ignored in memory) with the default options.
func openEngine(tb testing.TB, dir string) *tabula.DB { return openEngineWith(tb, dir, nil) }

// openBadger opens raw Badger in dir (ignored in memory) as storage.Open would.
func openBadger(tb testing.TB, dir string) *badger.DB {
	tb.Helper()
	db, err := openRaw(dir, inMemory)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Error(err)
		}
	})
	return db
}

func createTable(tb testing.TB, db *tabula.DB, name string) *tabula.Table {
	tb.Helper()
	t, err := db.CreateTable(ctx, name)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// reportRate reports n entities over the measured time as entities/s (or another unit),
// and, for a benchmark that called markCPU when its loop began, the CPU time the process
// used per entity since (cpu-ns/entity).
func reportRate(b *testing.B, n int, unit string) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(n)/s, unit)
	}
	if b == cpuBench && n > 0 {
		if now, ok := processCPU(); ok {
			b.ReportMetric(float64((now-cpuStart).Nanoseconds())/float64(n), "cpu-ns/entity")
		}
		cpuBench = nil
	}
}

// cpuBench and cpuStart are the benchmark whose loop is measured in CPU time and the
// process's CPU time when it began (markCPU). Benchmarks run one at a time.
var (
	cpuBench *testing.B
	cpuStart time.Duration
)

// markCPU starts measuring b's CPU time; call it just before the timed loop. The process's
// CPU time counts the work of every goroutine an operation sets off (Badger's writer and
// compactions, the garbage collector) and none of what other processes on the machine
// take, so engine ÷ badger in CPU per entity stays firm on a loaded machine, where wall
// time does not. Work that runs on after the loop (a compaction) is not counted.
func markCPU(b *testing.B) {
	if now, ok := processCPU(); ok {
		cpuBench, cpuStart = b, now
	}
}

// partitionLoad is the rows [from, to) of one partition, RowKey prefix + index, with the
// entity index base+row.
type partitionLoad struct {
	pk, prefix string
	from, to   int
	base       int
	etags      []tabula.ETag // when non-nil, filled with each row's ETag
	ticks      []int64       // when non-nil, filled with each row's Timestamp ticks
	tableID    uint64        // for loadBadger
}

// loadEngine inserts the partitions through SubmitTransaction in batches of 100, one
// goroutine per core, and records ETags where asked.
func loadEngine(tb testing.TB, t *tabula.Table, w *Workload, parts []partitionLoad) {
	tb.Helper()
	loadParallel(tb, parts, func() func(p *partitionLoad) error {
		actions := make([]tabula.Action, 0, tabula.MaxTransactionActions)
		return func(p *partitionLoad) error {
			for row := p.from; row < p.to; row += tabula.MaxTransactionActions {
				end := min(row+tabula.MaxTransactionActions, p.to)
				actions = actions[:0]
				for r := row; r < end; r++ {
					actions = append(actions, tabula.InsertAction(w.Entity(p.pk, RowKey(p.prefix, r), p.base+r)))
				}
				res, err := t.SubmitTransaction(ctx, actions)
				if err != nil {
					return err
				}
				if p.etags != nil {
					for i, r := range res {
						p.etags[row-p.from+i] = r.ETag
					}
				}
			}
			return nil
		}
	})
}

// loadParallel hands the partitions to one goroutine per core, each loading them with the
// function newLoader gives it (with its own buffers), and fails tb at the first error.
func loadParallel(tb testing.TB, parts []partitionLoad, newLoader func() func(p *partitionLoad) error) {
	tb.Helper()
	work := make(chan *partitionLoad)
	errs := make(chan error, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			load := newLoader()
			for p := range work {
				if err := load(p); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range parts {
		select {
		case work <- &parts[i]:
		case err := <-errs:
			close(work)
			wg.Wait()
			tb.Fatal(err)
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		tb.Fatal(err)
	default:
	}
}

// loadBadger writes the same partitions to raw Badger with a WriteBatch, recording ticks
// where asked.
func loadBadger(tb testing.TB, db *badger.DB, w *Workload, parts []partitionLoad) {
	tb.Helper()
	wb := db.NewWriteBatch()
	defer wb.Cancel()
	if err := eachRecord(w, parts, wb.Set); err != nil {
		tb.Fatal(err)
	}
	if err := wb.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// eachRecord calls set with the key and record of every row of parts, each record with a
// fresh Timestamp, recording ticks where asked; the baselines' loaders share it so that
// every store holds the same bytes.
func eachRecord(w *Workload, parts []partitionLoad, set func(key, value []byte) error) error {
	rw := newRecordWriter()
	var clock rawClock
	for i := range parts {
		p := &parts[i]
		for r := p.from; r < p.to; r++ {
			ticks := clock.next()
			if p.ticks != nil {
				p.ticks[r-p.from] = ticks
			}
			key := entityKey(nil, p.tableID, p.pk, RowKey(p.prefix, r))
			if err := set(key, rw.appendRecord(nil, ticks, w.Props(p.base+r))); err != nil {
				return err
			}
		}
	}
	return nil
}

// Sizes of the shared read fixture.
const (
	spreadPartitions = 100
	spreadRows       = 1000 // per partition: 100,000 entities in all
	deepRows         = 100_000
)

// readFixture is loaded once per process and only read: the same data in Tabula and in raw
// Badger, in two tables. Spread (table ID 1) holds 100 GUID partitions of 1,000 rows,
// entity index partition*1000 + row; Deep (table ID 2) holds one partition of 100,000 rows,
// entity index = row.
type readFixture struct {
	engine       *tabula.DB
	spread, deep *tabula.Table
	raw          *badger.DB
	bt           *btreeStore // in memory only: the google/btree baseline's copy
	dirs         []string

	w          *Workload
	spreadPKs  []string // in load order; partition p has RowKey prefix spreadPrefix(p)
	spreadPref []string
	deepPK     string
	deepPref   string
	// keys is every key of Spread in a random order, for point reads.
	keys []keyPair
}

const (
	spreadID = 1
	deepID   = 2
)

type keyPair struct {
	pk, rk string
	index  int
}

var (
	fixtureOnce sync.Once
	fixture     *readFixture
	fixtureErr  error
)

// sharedFixture loads the read fixture on first use. Loading is not timed: callers reset
// the timer afterwards (b.Loop does).
func sharedFixture(b *testing.B) *readFixture {
	b.Helper()
	fixtureOnce.Do(func() {
		fixture = &readFixture{w: NewWorkload(shape, 3)}
		fixtureErr = fixture.load()
	})
	if fixtureErr != nil {
		b.Fatal(fixtureErr)
	}
	return fixture
}

// fixtureTB adapts the loaders' testing.TB use to a plain error for the shared fixture,
// whose lifetime is the process's rather than one benchmark's.
type fixtureTB struct {
	testing.TB
	err error
}

func (f *fixtureTB) Helper() {}
func (f *fixtureTB) Fatal(args ...any) {
	f.err = fmt.Errorf("bench: loading the read fixture: %v", fmt.Sprint(args...))
	runtime.Goexit()
}

func (fx *readFixture) load() error {
	mkdir := func() (string, error) {
		d, err := os.MkdirTemp("", "tabula-bench-")
		if err == nil {
			fx.dirs = append(fx.dirs, d)
		}
		return d, err
	}
	engineDir, err := mkdir()
	if err != nil {
		return err
	}
	rawDir, err := mkdir()
	if err != nil {
		return err
	}
	if inMemory {
		fx.engine, err = tabula.OpenInMemory(nil)
	} else {
		fx.engine, err = tabula.Open(engineDir, nil)
	}
	if err != nil {
		return err
	}
	if fx.raw, err = openRaw(rawDir, inMemory); err != nil {
		return err
	}
	if fx.spread, err = fx.engine.CreateTable(ctx, "Spread"); err != nil {
		return err
	}
	if fx.deep, err = fx.engine.CreateTable(ctx, "Deep"); err != nil {
		return err
	}
	fx.spreadPKs = fx.w.GUIDs(spreadPartitions)
	var spread []partitionLoad
	for p, pk := range fx.spreadPKs {
		fx.spreadPref = append(fx.spreadPref, fx.w.RowPrefix(1, p+1))
		spread = append(spread, partitionLoad{pk: pk, prefix: fx.spreadPref[p], to: spreadRows,
			base: p * spreadRows, tableID: spreadID})
	}
	fx.deepPK, fx.deepPref = fx.w.GUID(), fx.w.RowPrefix(2, 1)
	deep := []partitionLoad{{pk: fx.deepPK, prefix: fx.deepPref, to: deepRows, tableID: deepID}}

	// The loaders report failures through testing.TB; run them on a goroutine so that
	// Fatal can end it.
	ftb := &fixtureTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		loadEngine(ftb, fx.spread, fx.w, spread)
		loadEngine(ftb, fx.deep, fx.w, deep)
		loadBadger(ftb, fx.raw, fx.w, spread)
		loadBadger(ftb, fx.raw, fx.w, deep)
		if inMemory {
			fx.bt = newBtreeStore()
			loadBtree(ftb, fx.bt, fx.w, spread)
			loadBtree(ftb, fx.bt, fx.w, deep)
		}
	}()
	<-done
	if ftb.err != nil {
		return ftb.err
	}
	// Let both stores finish compacting what was just loaded, so that neither side pays for
	// it in its timed runs (the engine, measured first, otherwise did).
	if !inMemory {
		settle(engineDir, time.Second, 30*time.Second)
		settle(rawDir, time.Second, 30*time.Second)
	}

	rng := rand.New(rand.NewPCG(7, 11))
	for p, pk := range fx.spreadPKs {
		for r := range spreadRows {
			fx.keys = append(fx.keys, keyPair{pk: pk, rk: RowKey(fx.spreadPref[p], r), index: p*spreadRows + r})
		}
	}
	rng.Shuffle(len(fx.keys), func(i, j int) { fx.keys[i], fx.keys[j] = fx.keys[j], fx.keys[i] })
	return nil
}

func closeReadFixture() {
	if fixture == nil {
		return
	}
	if fixture.engine != nil {
		_ = fixture.engine.Close()
	}
	if fixture.raw != nil {
		_ = fixture.raw.Close()
	}
	for _, d := range fixture.dirs {
		_ = os.RemoveAll(d)
	}
}
