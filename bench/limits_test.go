package bench

import (
	"errors"
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
)

// openEngineWith opens a Tabula DB in dir (ignored in memory) with the given options.
func openEngineWith(tb testing.TB, dir string, opts *tabula.Options) *tabula.DB {
	tb.Helper()
	var (
		db  *tabula.DB
		err error
	)
	if inMemory {
		db, err = tabula.OpenInMemory(opts)
	} else {
		db, err = tabula.Open(dir, opts)
	}
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

var limitModes = []struct {
	name string
	mode partition.LimitMode
}{
	{"off", partition.LimitOff},
	{"observe", partition.LimitObserve},
	{"enforce", partition.LimitEnforce},
}

// unreachable are limits no benchmark can reach, so that every operation takes the
// admitting path of its mode and what is measured is the cost of the accounting alone.
func unreachable(mode partition.LimitMode) *tabula.Options {
	return &tabula.Options{Limits: partition.Limits{Mode: mode, PartitionRate: math.Inf(1), AccountRate: math.Inf(1)}}
}

// limitsWarmup operations run untimed before each mode of BenchmarkLimits, so that the mode
// measured first does not also pay for the start (a fresh store, the fixture's garbage).
const limitsWarmup = 20_000

// BenchmarkLimits measures what the rate limiter costs on the hot path: single inserts and
// point gets with the limits off, observed and enforced, always under the limits (the rates
// are out of reach, so nothing is throttled). Compare each mode with mode=off.
func BenchmarkLimits(b *testing.B) {
	b.Run("Insert", func(b *testing.B) {
		w := NewWorkload(shape, 8)
		for _, m := range limitModes {
			b.Run("mode="+m.name, func(b *testing.B) {
				b.ReportAllocs()
				t := createTable(b, openEngineWith(b, b.TempDir(), unreachable(m.mode)), "Limits")
				pk, prefix := w.GUID(), w.RowPrefix(1, 1)
				row := 0
				insert := func() {
					if _, err := t.Insert(ctx, w.Entity(pk, RowKey(prefix, row), row)); err != nil {
						b.Fatal(err)
					}
					row++
				}
				for range limitsWarmup { // not timed: b.Loop resets the timer
					insert()
				}
				n := 0
				for b.Loop() {
					insert()
					n++
				}
				reportRate(b, n, "entities/s")
			})
		}
	})
	b.Run("PointGet", func(b *testing.B) {
		w := NewWorkload(shape, 9)
		db := openEngineWith(b, b.TempDir(), unreachable(partition.LimitOff))
		t := createTable(b, db, "Limits")
		var parts []partitionLoad
		for p := range 10 {
			parts = append(parts, partitionLoad{pk: w.GUID(), prefix: w.RowPrefix(1, p+1), to: 1000, base: p * 1000})
		}
		loadEngine(b, t, w, parts)
		for _, m := range limitModes {
			b.Run("mode="+m.name, func(b *testing.B) {
				b.ReportAllocs()
				db.SetLimitMode(m.mode)
				get := func(i int) {
					p := &parts[i%len(parts)]
					if _, err := t.Get(ctx, p.pk, RowKey(p.prefix, i/len(parts)%1000)); err != nil {
						b.Fatal(err)
					}
				}
				for i := range limitsWarmup { // not timed: b.Loop resets the timer
					get(i)
				}
				n := 0
				for b.Loop() {
					get(n)
					n++
				}
				reportRate(b, n, "entities/s")
			})
		}
	})
}

// Figures 8 and 9 of the case study bench/casestudy reruns: single-entity inserts and gets from many goroutines into one
// partition or into one partition per goroutine, with the service's limits enforced
// (2,000 entities/s per PartitionKey, 20,000 per account).
const (
	// spreadParallelism × GOMAXPROCS goroutines issue requests (the study's 15 threads per VM).
	spreadParallelism = 8
	// throttledWait is how long a goroutine pauses after ServerBusy before its next request:
	// the study's clients waited 3 s, scaled down to a benchmark's second.
	throttledWait = 10 * time.Millisecond
)

// BenchmarkPartitions compares one hot partition with one partition per goroutine, limits
// enforced. entities/s counts successful operations; throttled-% the share answered
// ServerBusy.
func BenchmarkPartitions(b *testing.B) {
	for _, op := range []string{"Insert", "Get"} {
		b.Run(op, func(b *testing.B) {
			for _, layout := range []string{"single", "multi"} {
				b.Run(layout, func(b *testing.B) { benchPartitions(b, op == "Insert", layout == "multi") })
			}
		})
	}
}

func benchPartitions(b *testing.B, insert, multi bool) {
	w := NewWorkload(shape, 10)
	db := openEngineWith(b, b.TempDir(), &tabula.Options{Limits: partition.Limits{Mode: partition.LimitOff}})
	t := createTable(b, db, "Partitions")
	const rows = 1000
	parts := make([]partitionLoad, spreadParallelism*runtime.GOMAXPROCS(0)) // one per goroutine
	for g := range parts {
		parts[g] = partitionLoad{pk: w.GUID(), prefix: w.RowPrefix(1, g+1), to: rows, base: g * rows}
		if !multi && g > 0 {
			parts[g].pk = parts[0].pk
		}
	}
	if !insert {
		loadEngine(b, t, w, parts)
	}
	db.SetLimitMode(partition.LimitEnforce)
	db.ResetStats()
	var (
		ok, throttled atomic.Int64
		next          atomic.Int64
	)
	b.ReportAllocs()
	b.SetParallelism(spreadParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := int(next.Add(1)-1) % len(parts)
		p := &parts[g]
		for i := 0; pb.Next(); i++ {
			var err error
			if insert {
				_, err = t.Insert(ctx, w.Entity(p.pk, RowKey(p.prefix, rows+i), i))
			} else {
				_, err = t.Get(ctx, p.pk, RowKey(p.prefix, i%rows))
			}
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, tabula.ErrServerBusy):
				throttled.Add(1)
				time.Sleep(throttledWait)
			default:
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, int(ok.Load()), "entities/s")
	if total := ok.Load() + throttled.Load(); total > 0 {
		b.ReportMetric(100*float64(throttled.Load())/float64(total), "throttled-%")
	}
	saveHeatMap(b, db)
}
