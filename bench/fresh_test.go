package bench

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/tabulatest"
)

// What one test's own database costs. A test that wants a fresh fake per test (the
// t.Parallel way) pays these once per test, so they bound how many tests a suite can run
// side by side. -benchmem's B/op is the bytes allocated per database; retained-B is what
// stays live while it is open (the heap after a GC, divided by the databases held).

// BenchmarkFreshDB opens a database and closes it: open-close does nothing else;
// first-entity also creates a table, inserts an entity and reads it back. In memory is the
// kind tests use; disk is there for comparison.
func BenchmarkFreshDB(b *testing.B) {
	for _, kind := range []string{"memory", "disk"} {
		b.Run(kind, func(b *testing.B) {
			open := func(b *testing.B) *tabula.DB {
				var db *tabula.DB
				var err error
				if kind == "memory" {
					db, err = tabula.OpenInMemory(nil)
				} else {
					db, err = tabula.Open(b.TempDir(), nil)
				}
				if err != nil {
					b.Fatal(err)
				}
				return db
			}
			b.Run("open-close", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := open(b).Close(); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("first-entity", func(b *testing.B) {
				b.ReportAllocs()
				e := tabula.Entity{PartitionKey: "pk", RowKey: "rk", Properties: tabula.Properties{"Name": tabula.String("fresh")}}
				for b.Loop() {
					db := open(b)
					t, err := db.CreateTable(ctx, "Fresh")
					if err != nil {
						b.Fatal(err)
					}
					if _, err := t.Insert(ctx, e); err != nil {
						b.Fatal(err)
					}
					if _, err := t.Get(ctx, "pk", "rk"); err != nil {
						b.Fatal(err)
					}
					if err := db.Close(); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkFreshDBRetained holds 20 in-memory databases open at once, each with a table
// and an entity, and reports the live heap each one holds.
func BenchmarkFreshDBRetained(b *testing.B) {
	const held = 20
	e := tabula.Entity{PartitionKey: "pk", RowKey: "rk", Properties: tabula.Properties{"Name": tabula.String("fresh")}}
	var perDB float64
	for b.Loop() {
		before := liveHeap()
		dbs := make([]*tabula.DB, held)
		for i := range dbs {
			db, err := tabula.OpenInMemory(nil)
			if err != nil {
				b.Fatal(err)
			}
			t, err := db.CreateTable(ctx, "Fresh")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := t.Insert(ctx, e); err != nil {
				b.Fatal(err)
			}
			dbs[i] = db
		}
		perDB = float64(liveHeap()-before) / held
		for _, db := range dbs {
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(perDB, "retained-B/db")
}

// BenchmarkNewInProcess starts a tabulatest in-process server (an in-memory database behind
// the REST handler) and closes it, as each test that calls tabulatest.NewServer(t, nil, tabulatest.InProcess()) does.
func BenchmarkNewInProcess(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s, err := tabulatest.Start(nil, tabulatest.InProcess())
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewInProcessRetained holds 20 in-process servers open at once and reports the
// live heap each one holds.
func BenchmarkNewInProcessRetained(b *testing.B) {
	const held = 20
	var perServer float64
	for b.Loop() {
		before := liveHeap()
		servers := make([]*tabulatest.Server, held)
		for i := range servers {
			s, err := tabulatest.Start(nil, tabulatest.InProcess())
			if err != nil {
				b.Fatal(err)
			}
			servers[i] = s
		}
		perServer = float64(liveHeap()-before) / held
		for _, s := range servers {
			if err := s.Close(); err != nil {
				b.Fatal(fmt.Errorf("closing a server: %w", err))
			}
		}
	}
	b.ReportMetric(perServer, "retained-B/server")
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
