package bench

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/storage"
)

// openKind opens a fresh database in memory or on disk, closed when b ends.
func openKind(b *testing.B, kind string) *tabula.DB {
	b.Helper()
	if kind == "memory" {
		db, err := tabula.OpenInMemory(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = db.Close() })
		return db
	}
	return openEngine(b, b.TempDir())
}

// noMatchFilter names no key and matches none of the workload's entities.
const noMatchFilter = "Payload eq 'nothing'"

// BenchmarkNoMatchScan runs a query whose filter matches nothing over a table of 10,000
// entities of 1 KiB (100 partitions of 100), to its last page: the whole table is scanned
// and nothing returned. In memory and on disk, so that their ratio can be read.
func BenchmarkNoMatchScan(b *testing.B) {
	const parts, rows = 100, 100
	for _, kind := range []string{"memory", "disk"} {
		b.Run(kind, func(b *testing.B) {
			w := NewWorkload(ShapePayload, 16)
			t := createTable(b, openKind(b, kind), "NoMatch")
			var load []partitionLoad
			for p := range parts {
				load = append(load, partitionLoad{pk: w.GUID(), prefix: w.RowPrefix(1, p+1), to: rows, base: p * rows})
			}
			loadEngine(b, t, w, load)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				q := tabula.Query{Filter: noMatchFilter}
				scanned := 0
				for {
					page, err := t.Query(ctx, q)
					if err != nil {
						b.Fatal(err)
					}
					if len(page.Entities) != 0 {
						b.Fatalf("%d entities matched", len(page.Entities))
					}
					scanned += page.Plan.Scanned
					if page.Continuation.IsZero() {
						break
					}
					q.Continuation = page.Continuation
				}
				if scanned != parts*rows {
					b.Fatalf("scanned %d entities, want %d", scanned, parts*rows)
				}
				n += scanned
			}
			reportRate(b, n, "scanned/s")
		})
	}
}

// BenchmarkMemoryFootprint loads entities of 1 KiB (partitions of 100, transactions of 100)
// into an in-memory database and reports the live heap it holds, per entity and in all, and
// the process's resident set: as loading left it (RSS-MiB, which holds the garbage
// collector's headroom), and once the runtime has returned free pages to the system
// (settled-RSS-MiB, what a long-running server settles to). TABULA_FOOTPRINT sets the number of entities (default
// 30,000; BENCHMARKS.md quotes 300,000).
func BenchmarkMemoryFootprint(b *testing.B) {
	entities := 30_000
	if s := os.Getenv("TABULA_FOOTPRINT"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			b.Fatalf("TABULA_FOOTPRINT=%q: want a number of entities, at least 100", s)
		}
		entities = n
	}
	const rows = 100
	var heap int64
	var rss, settled int64
	for b.Loop() {
		w := NewWorkload(ShapePayload, 17)
		before := liveHeap()
		db, err := tabula.OpenInMemory(nil)
		if err != nil {
			b.Fatal(err)
		}
		t := createTable(b, db, "Footprint")
		var load []partitionLoad
		for p := range entities / rows {
			load = append(load, partitionLoad{pk: w.GUID(), prefix: w.RowPrefix(1, p+1), to: rows, base: p * rows})
		}
		loadEngine(b, t, w, load)
		load = nil
		heap = liveHeap() - before
		if m, err := memory(); err == nil {
			rss = m["VmRSS"]
		}
		debug.FreeOSMemory()
		if m, err := memory(); err == nil {
			settled = m["VmRSS"]
		}
		runtime.KeepAlive(t)
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(heap)/float64(entities), "heap-B/entity")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
	if rss > 0 {
		b.ReportMetric(float64(rss)/(1<<20), "RSS-MiB")
		b.ReportMetric(float64(settled)/(1<<20), "settled-RSS-MiB")
	}
}

// BenchmarkHostHeap measures what the Go memory limit an open database holds (see
// tabula.Options.NoGoMemoryLimit) costs a host program whose own heap is larger than the
// budget: the host keeps TABULA_BENCH_HOST_HEAP MiB live (default 384, over the smallest
// budget, which the database is given) and allocates 1 MiB of garbage per op, with a
// database on disk open beside it,
// with the limit ("limit") and without ("nolimit"). The limit follows the heap GOGC aims at,
// so gc/op should be the same in both.
func BenchmarkHostHeap(b *testing.B) {
	mib := 384
	if s := os.Getenv("TABULA_BENCH_HOST_HEAP"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("TABULA_BENCH_HOST_HEAP=%q: want a number of MiB", s)
		}
		mib = n
	}
	host := make([]*[1 << 20]byte, mib)
	for i := range host {
		host[i] = new([1 << 20]byte)
	}
	for _, name := range []string{"nolimit", "limit"} {
		b.Run(name, func(b *testing.B) {
			db := openEngineWith(b, b.TempDir(), &tabula.Options{MemoryBudget: storage.MinMemoryBudget,
				NoGoMemoryLimit: name == "nolimit"})
			createTable(b, db, "Host")
			runtime.GC()
			var garbage [][]byte
			gcs := numGC()
			for b.Loop() {
				garbage = garbage[:0]
				for range 16 {
					garbage = append(garbage, make([]byte, 64<<10))
				}
			}
			b.ReportMetric(float64(numGC()-gcs)/float64(b.N), "gc/op")
			b.ReportMetric(float64(debug.SetMemoryLimit(-1))/(1<<20), "limit-MB")
			runtime.KeepAlive(garbage)
		})
	}
	runtime.KeepAlive(host)
}

func numGC() uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC
}
