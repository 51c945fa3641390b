package bench

import (
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula"
)

// budgetEntities is how many entities BenchmarkLoadWithinBudget loads: TABULA_BENCH_BUDGET_ENTITIES,
// else 20,000, small enough for CI's one run of every benchmark. Its target is measured at
// 1,000,000.
func budgetEntities(b *testing.B) int {
	s := os.Getenv("TABULA_BENCH_BUDGET_ENTITIES")
	if s == "" {
		return 20_000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < scaleRows {
		b.Fatalf("TABULA_BENCH_BUDGET_ENTITIES=%q: want a number of entities of at least %d", s, scaleRows)
	}
	return n
}

// BenchmarkLoadWithinBudget loads N 1 KiB entities (GUID partitions of 100 rows) in
// 100-entity transactions into a database on disk opened with the default options, one
// loader per core, then reads 10,000 of them at random. It reports the load's entities/s,
// the reads' read-entities/s, and the peak of the process's anonymous memory (RssAnon,
// sampled every 10 ms through the load and the reads: the memory the store's budget
// bounds, where the resident set also counts the mapped table files, which the kernel
// drops under pressure). Target at N = 1,000,000: under 256 MiB at ≥ 50,000 entities/s.
func BenchmarkLoadWithinBudget(b *testing.B) {
	if _, err := memory(); err != nil {
		b.Skip("no /proc/self/status here:", err)
	}
	n := budgetEntities(b)
	var loadRate, readRate, peakAnon float64
	for b.Loop() {
		dir, err := os.MkdirTemp(b.TempDir(), "budget")
		if err != nil {
			b.Fatal(err)
		}
		db, err := tabula.Open(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		stop, peak := sampleAnon(10 * time.Millisecond)
		t := createTable(b, db, "Budget")
		w := NewWorkload(shape, 24)
		pks := make([]string, n/scaleRows)
		parts := make([]partitionLoad, len(pks))
		for p := range pks {
			pks[p] = w.GUID()
			parts[p] = partitionLoad{pk: pks[p], prefix: w.RowPrefix(p/1000, p%1000), to: scaleRows, base: p * scaleRows}
		}
		began := time.Now()
		loadEngine(b, t, w, parts)
		loadRate = float64(len(pks)*scaleRows) / time.Since(began).Seconds()

		rng := rand.New(rand.NewPCG(uint64(n), 24))
		const reads = 10_000
		began = time.Now()
		for range reads {
			p := rng.IntN(len(pks))
			if _, err := t.Get(ctx, pks[p], RowKey(parts[p].prefix, rng.IntN(scaleRows))); err != nil {
				b.Fatal(err)
			}
		}
		readRate = reads / time.Since(began).Seconds()
		stop()
		peakAnon = float64(*peak) / (1 << 20)
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(loadRate, "entities/s")
	b.ReportMetric(readRate, "read-entities/s")
	b.ReportMetric(peakAnon, "peak-anon-MB")
	b.ReportMetric(float64(n), "entities")
	if m, err := memory(); err == nil {
		b.ReportMetric(float64(m["VmHWM"])/(1<<20), "peak-RSS-MB")
	}
}

// sampleAnon samples the process's RssAnon every interval until stop is called, which
// returns after a last sample; *peak is then the largest sample, in bytes.
func sampleAnon(interval time.Duration) (stop func(), peak *int64) {
	peak = new(int64)
	sample := func() {
		if m, err := memory(); err == nil {
			*peak = max(*peak, m["RssAnon"])
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				sample()
				return
			case <-tick.C:
				sample()
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }, peak
}
