package tabula

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Micro-benchmarks of the typed reads in memory, next to the code, for profiling without
// bench/'s fixtures: one partition of 10,000 entities of five properties, read as structs
// (QueryAs, GetAs) and as maps (QueryAll, Get). bench/typed_test.go holds the benchmarks
// against the raw store that BENCHMARKS.md reports.

type benchRow struct {
	PartitionKey string
	RowKey       string
	Timestamp    time.Time
	ETag         ETag
	Name         string
	Count        int32
	Score        float64
	Created      time.Time
	ID           Guid `tabula:"Id"`
}

const benchRows = 10_000

func benchTable(b *testing.B) *Table {
	db, err := OpenInMemory(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	tbl, err := db.CreateTable(ctx, "Bench")
	if err != nil {
		b.Fatal(err)
	}
	for i := range benchRows / 100 {
		var actions []Action
		for j := range 100 {
			n := i*100 + j
			actions = append(actions, InsertAction(Entity{PartitionKey: "p", RowKey: fmt.Sprintf("r%06d", n),
				Properties: Properties{"Name": String(fmt.Sprintf("name %d", n)), "Count": Int32(n), "Score": Double(n) / 3,
					"Created": DateTime(time.Unix(int64(n), 0)), "Id": Guid{byte(n)}}}))
		}
		if _, err := tbl.SubmitTransaction(ctx, actions); err != nil {
			b.Fatal(err)
		}
	}
	return tbl
}

func BenchmarkTypedScanInMemory(b *testing.B) {
	tbl := benchTable(b)
	ctx := context.Background()
	q := Query{Filter: "PartitionKey eq 'p'"}
	b.Run("typed", func(b *testing.B) {
		perEntity(b, func(int) (n int, err error) {
			for _, err := range QueryAs[benchRow](ctx, tbl, q) {
				if err != nil {
					return n, err
				}
				n++
			}
			return n, nil
		})
	})
	b.Run("map", func(b *testing.B) {
		perEntity(b, func(int) (n int, err error) {
			for _, err := range tbl.QueryAll(ctx, q) {
				if err != nil {
					return n, err
				}
				n++
			}
			return n, nil
		})
	})
}

func BenchmarkTypedGetInMemory(b *testing.B) {
	tbl := benchTable(b)
	ctx := context.Background()
	b.Run("typed", func(b *testing.B) {
		perEntity(b, func(i int) (int, error) {
			_, err := GetAs[benchRow](ctx, tbl, "p", fmt.Sprintf("r%06d", i%benchRows))
			return 1, err
		})
	})
	b.Run("map", func(b *testing.B) {
		perEntity(b, func(i int) (int, error) {
			_, err := tbl.Get(ctx, "p", fmt.Sprintf("r%06d", i%benchRows))
			return 1, err
		})
	})
}

// perEntity runs read, given the number of its run, until the benchmark ends, and reports
// the CPU time per entity it read.
func perEntity(b *testing.B, read func(i int) (int, error)) {
	b.ReportAllocs()
	n, runs := 0, 0
	cpu := processCPU()
	for b.Loop() {
		got, err := read(runs)
		if err != nil {
			b.Fatal(err)
		}
		n += got
		runs++
	}
	reportPerEntity(b, n, cpu)
}

// reportPerEntity reports the CPU time per entity since cpu, when it is measured.
func reportPerEntity(b *testing.B, n int, cpu time.Duration) {
	if now := processCPU(); now > 0 && n > 0 {
		b.ReportMetric(float64((now-cpu).Nanoseconds())/float64(n), "cpu-ns/entity")
	}
}

// BenchmarkTypedEntityOf is what a typed write spends building the Properties it passes to
// the untyped write path.
func BenchmarkTypedEntityOf(b *testing.B) {
	v := benchRow{PartitionKey: "p", RowKey: "r000001", Name: "name 1", Count: 1, Score: 1.0 / 3,
		Created: time.Unix(1, 0), ID: Guid{1}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EntityOf(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTypedInsertInMemory is InsertAs (typed) against the same write through an
// Entity: entity, what InsertAs did before it encoded structs straight (EntityOf, then the
// write without building what Insert returns), and map, EntityOf then Table.Insert.
func BenchmarkTypedInsertInMemory(b *testing.B) { benchTypedInsert(b, false) }

// BenchmarkTypedInsertOnDisk is BenchmarkTypedInsertInMemory on disk.
func BenchmarkTypedInsertOnDisk(b *testing.B) { benchTypedInsert(b, true) }

func benchTypedInsert(b *testing.B, onDisk bool) {
	ctx := context.Background()
	v := benchRow{PartitionKey: "p", Name: "name 1", Count: 1, Score: 1.0 / 3, Created: time.Unix(1, 0), ID: Guid{1}}
	for _, how := range []string{"typed", "entity", "map"} {
		b.Run(how, func(b *testing.B) {
			var db *DB
			var err error
			if onDisk {
				db, err = Open(b.TempDir(), nil)
			} else {
				db, err = OpenInMemory(nil)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			tbl, err := db.CreateTable(ctx, "Bench")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				v.RowKey = fmt.Sprintf("r%08d", n)
				switch how {
				case "typed":
					_, err = InsertAs(ctx, tbl, v)
				case "entity":
					var e Entity
					if e, err = EntityOf(v); err == nil {
						var ticks int64
						if ticks, err = tbl.applyOne(ctx, InsertAction(e)); err == nil {
							v.Timestamp, v.ETag = timeOfTicks(ticks), etagOf(ticks)
						}
					}
				default:
					var e Entity
					if e, err = EntityOf(v); err == nil {
						_, err = tbl.Insert(ctx, e)
					}
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}
