package bench

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tabuladb/tabula"
)

// BenchmarkFirstGetAfterOpen measures what the first request to a table costs after its
// database opens: a point Get of one of N entities (TABULA_BENCH_FIRSTUSE, else 20,000),
// against the same Get once the table is in use. The first use of a table starts the
// count of what it holds for the heat statistics, which reads every key; the request should
// not wait for it, so first-get-µs should stay near get-µs at any N. Each round reopens the
// database; only the Gets are timed.
func BenchmarkFirstGetAfterOpen(b *testing.B) {
	n := 20_000
	if s := os.Getenv("TABULA_BENCH_FIRSTUSE"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < scaleRows {
			b.Fatalf("TABULA_BENCH_FIRSTUSE=%q: want a number of entities of at least %d", s, scaleRows)
		}
	}
	dir := b.TempDir()
	db, err := tabula.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	t := createTable(b, db, "First")
	w := NewWorkload(shape, 13)
	var parts []partitionLoad
	for p := range n / scaleRows {
		parts = append(parts, partitionLoad{pk: w.GUID(), prefix: w.RowPrefix(p/1000, p%1000), to: scaleRows, base: p * scaleRows})
	}
	loadEngine(b, t, w, parts)
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	key := parts[len(parts)/2]
	get := func(db *tabula.DB) time.Duration {
		began := time.Now()
		if _, err := db.Table("First").Get(ctx, key.pk, RowKey(key.prefix, scaleRows/2)); err != nil {
			b.Fatal(err)
		}
		return time.Since(began)
	}
	var first, later time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		db, err := tabula.Open(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		first += get(db)
		later += get(db)
		b.StopTimer()
		db.HeatReport() // waits for the count, which Close would give up
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(first.Microseconds())/float64(b.N), "first-get-µs")
	b.ReportMetric(float64(later.Microseconds())/float64(b.N), "get-µs")
	b.ReportMetric(float64(n), "entities")
}
