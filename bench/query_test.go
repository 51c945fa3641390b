package bench

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tabuladb/tabula"
)

// BenchmarkQuery measures the four plan kinds (tabula.PlanKind) on the read fixture, each against
// raw Badger scanning the same key range. Each reports scanned/s: the entities a query
// examined (Page.Plan.Scanned) per second, returned or not.
func BenchmarkQuery(b *testing.B) {
	fx := sharedFixture(b)
	b.Run("Point", func(b *testing.B) { benchQueryPoint(b, fx) })
	b.Run("RowRange", func(b *testing.B) { benchQueryRowRange(b, fx) })
	b.Run("PartitionRange", func(b *testing.B) { benchQueryPartitionRange(b, fx) })
	b.Run("FullScan", func(b *testing.B) { benchQueryFullScan(b, fx) })
}

// quote writes s as an OData string literal.
func quote(s string) string { return "'" + s + "'" }

// runPages runs q to its last page, checking its plan, and returns the entities scanned and
// returned.
func runPages(b *testing.B, t *tabula.Table, q tabula.Query, kind tabula.PlanKind) (scanned, returned int) {
	for {
		page, err := t.Query(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		if page.Plan.Kind != kind {
			b.Fatalf("%q runs as %v, want %v", q.Filter, page.Plan.Kind, kind)
		}
		scanned += page.Plan.Scanned
		returned += len(page.Entities)
		if page.Continuation.IsZero() {
			return scanned, returned
		}
		q.Continuation = page.Continuation
	}
}

// basePages runs the baseline's scan over [lower, upper) to the last page and returns the
// entities scanned and kept.
func basePages(b *testing.B, base baseline, prefix, lower, upper []byte, page []rawEntity, rr *recordReader,
	match func([]byte, *rawRecord) bool) (scanned, kept int) {
	for start := lower; start != nil; {
		s, k, err := base.scan(prefix, start, upper, page, rr, match, &start)
		if err != nil {
			b.Fatal(err)
		}
		scanned, kept = scanned+s, kept+k
	}
	return scanned, kept
}

// benchQueryPoint: PartitionKey and RowKey equal to literals, a Point plan.
func benchQueryPoint(b *testing.B, fx *readFixture) {
	filters := make([]string, 4096)
	for i := range filters {
		k := fx.keys[i]
		filters[i] = "PartitionKey eq " + quote(k.pk) + " and RowKey eq " + quote(k.rk)
	}
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		n, scanned := 0, 0
		markCPU(b)
		for b.Loop() {
			s, r := runPages(b, fx.spread, tabula.Query{Filter: filters[n%len(filters)]}, tabula.PlanPoint)
			if r != 1 {
				b.Fatalf("point query returned %d entities", r)
			}
			scanned += s
			n++
		}
		reportRate(b, scanned, "scanned/s")
	})
	for _, base := range baselines(fx) {
		b.Run(base.name, func(b *testing.B) {
			// Mirrors a Point plan: one Get in a read-only transaction (on the committed tree,
			// in memory), the record decoded.
			baseGets(b, base, fx.keys[:len(filters)], "scanned/s")
		})
	}
}

// rowWindow is the width of the RowRange query: one full page.
const rowWindow = tabula.MaxEntitiesPerPage

// benchQueryRowRange: 1,000 consecutive RowKeys of the 100,000-row partition, a RowRange
// plan bounded on both sides; windows are taken in a random order.
func benchQueryRowRange(b *testing.B, fx *readFixture) {
	windows := rand.New(rand.NewPCG(3, 3)).Perm(deepRows / rowWindow)
	bounds := func(w int) (lo, hi string) {
		return RowKey(fx.deepPref, w*rowWindow), RowKey(fx.deepPref, (w+1)*rowWindow)
	}
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		filters := make([]string, len(windows))
		for i, w := range windows {
			lo, hi := bounds(w)
			filters[i] = "PartitionKey eq " + quote(fx.deepPK) + " and RowKey ge " + quote(lo) + " and RowKey lt " + quote(hi)
		}
		n, scanned := 0, 0
		markCPU(b)
		for b.Loop() {
			s, r := runPages(b, fx.deep, tabula.Query{Filter: filters[n%len(filters)]}, tabula.PlanRowRange)
			if s != rowWindow || r != rowWindow {
				b.Fatalf("scanned %d and returned %d, want %d", s, r, rowWindow)
			}
			scanned += s
			n++
		}
		reportRate(b, scanned, "scanned/s")
	})
	for _, base := range baselines(fx) {
		b.Run(base.name, func(b *testing.B) {
			// Mirrors a bounded RowRange: iterate [lower, upper) of one partition with values,
			// decode every key and record into the page.
			b.ReportAllocs()
			prefix := partitionPrefix(nil, deepID, fx.deepPK)
			page := make([]rawEntity, tabula.MaxEntitiesPerPage)
			rr := newRecordReader()
			n, scanned := 0, 0
			markCPU(b)
			for b.Loop() {
				lo, hi := bounds(windows[n%len(windows)])
				lower := appendPart(slices.Clip(prefix), lo)
				upper := appendPart(slices.Clip(prefix), hi)
				s, k := basePages(b, base, prefix, lower, upper, page, rr, nil)
				if s != rowWindow || k != rowWindow {
					b.Fatalf("scanned %d and kept %d, want %d", s, k, rowWindow)
				}
				scanned += s
				n++
			}
			reportRate(b, scanned, "scanned/s")
		})
	}
}

// benchQueryPartitionRange: PartitionKeys from one GUID up to (excluding) the GUID two
// partitions later in key order, 2,000 entities over two pages; ranges in a random order.
func benchQueryPartitionRange(b *testing.B, fx *readFixture) {
	const span = 2
	sorted := slices.Sorted(slices.Values(fx.spreadPKs)) // GUIDs are ASCII: byte order is key order
	starts := rand.New(rand.NewPCG(4, 4)).Perm(len(sorted) - span)
	want := span * spreadRows
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		filters := make([]string, len(starts))
		for i, s := range starts {
			filters[i] = "PartitionKey ge " + quote(sorted[s]) + " and PartitionKey lt " + quote(sorted[s+span])
		}
		n, scanned := 0, 0
		markCPU(b)
		for b.Loop() {
			s, r := runPages(b, fx.spread, tabula.Query{Filter: filters[n%len(filters)]}, tabula.PlanPartitionRange)
			if s != want || r != want {
				b.Fatalf("scanned %d and returned %d, want %d", s, r, want)
			}
			scanned += s
			n++
		}
		reportRate(b, scanned, "scanned/s")
	})
	for _, base := range baselines(fx) {
		b.Run(base.name, func(b *testing.B) {
			// Mirrors a PartitionRange: iterate [lower, upper) of the table page by page, the
			// next page resuming at the key after the last one examined; decode every key and
			// record into the page.
			b.ReportAllocs()
			prefix := tablePrefix(nil, spreadID)
			page := make([]rawEntity, tabula.MaxEntitiesPerPage)
			rr := newRecordReader()
			n, scanned := 0, 0
			markCPU(b)
			for b.Loop() {
				s := starts[n%len(starts)]
				lower := appendPart(slices.Clip(prefix), sorted[s])
				upper := appendPart(slices.Clip(prefix), sorted[s+span])
				sc, k := basePages(b, base, prefix, lower, upper, page, rr, nil)
				if sc != want || k != want {
					b.Fatalf("scanned %d and kept %d, want %d", sc, k, want)
				}
				scanned += sc
				n++
			}
			reportRate(b, scanned, "scanned/s")
		})
	}
}

// benchQueryFullScan: a RowKey range with no PartitionKey, as the case study's fifth example query has it (bench/casestudy):
// a FullScan of the 100,000 entities whose residual matches 10 of them.
func benchQueryFullScan(b *testing.B, fx *readFixture) {
	const matches = 10
	lo, hi := RowKey(fx.spreadPref[7], 0), RowKey(fx.spreadPref[7], matches)
	total := spreadPartitions * spreadRows
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		q := tabula.Query{Filter: "RowKey ge " + quote(lo) + " and RowKey lt " + quote(hi)}
		scanned := 0
		markCPU(b)
		for b.Loop() {
			s, r := runPages(b, fx.spread, q, tabula.PlanFullScan)
			if s != total || r != matches {
				b.Fatalf("scanned %d and returned %d, want %d and %d", s, r, total, matches)
			}
			scanned += s
		}
		reportRate(b, scanned, "scanned/s")
	})
	for _, base := range baselines(fx) {
		b.Run(base.name, func(b *testing.B) {
			// Mirrors the FullScan: iterate the whole table with values, decode every record
			// (the engine decodes records before evaluating any filter), decode the RowKey of
			// every key and compare it with the bounds, and keep the matches.
			b.ReportAllocs()
			prefix := tablePrefix(nil, spreadID)
			page := make([]rawEntity, tabula.MaxEntitiesPerPage)
			rr := newRecordReader()
			match := func(key []byte, _ *rawRecord) bool {
				_, rk, err := splitKey(key)
				return err == nil && rk >= lo && rk < hi
			}
			scanned := 0
			markCPU(b)
			for b.Loop() {
				s, k := basePages(b, base, prefix, prefix, nil, page, rr, match)
				if s != total || k != matches {
					b.Fatalf("scanned %d and kept %d, want %d and %d", s, k, total, matches)
				}
				scanned += s
			}
			reportRate(b, scanned, "scanned/s")
		})
	}
}
