package bench

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/tabulatest"
)

// snapshotEntities is the size of the fixture a snapshot is taken of: 1,000 partitions of
// 100 entities, each with a 100-byte property.
const snapshotEntities = 100_000

var (
	snapshotOnce sync.Once
	snapshotFix  *tabula.Snapshot
	snapshotErr  error
	snapshotSeed time.Duration // what building the fixture took: what a test without a copy would pay
)

// snapshotFixture returns an in-memory snapshot of a database holding one table, Fixture,
// of snapshotEntities entities, built once per process.
func snapshotFixture(b *testing.B) *tabula.Snapshot {
	b.Helper()
	snapshotOnce.Do(func() {
		began := time.Now()
		defer func() { snapshotSeed = time.Since(began) }()
		db, err := tabula.OpenInMemory(nil)
		if err != nil {
			snapshotErr = err
			return
		}
		defer db.Close()
		t, err := db.CreateTable(ctx, "Fixture")
		if err != nil {
			snapshotErr = err
			return
		}
		pad := tabula.String(strings.Repeat("x", 100))
		for p := range snapshotEntities / tabula.MaxTransactionActions {
			actions := make([]tabula.Action, 0, tabula.MaxTransactionActions)
			for r := range tabula.MaxTransactionActions {
				actions = append(actions, tabula.Action{Kind: tabula.ActionInsert, Entity: tabula.Entity{
					PartitionKey: fmt.Sprintf("p%04d", p), RowKey: fmt.Sprintf("r%03d", r),
					Properties: tabula.Properties{"Pad": pad},
				}})
			}
			if _, err := t.SubmitTransaction(ctx, actions); err != nil {
				snapshotErr = err
				return
			}
		}
		snapshotFix, snapshotErr = db.Snapshot(ctx)
	})
	if snapshotErr != nil {
		b.Fatal(snapshotErr)
	}
	return snapshotFix
}

// BenchmarkSnapshotOpen opens a database from an in-memory snapshot of 100,000 entities:
// open is Snapshot.Open alone (the databases are closed outside the timer), the cost a test
// pays for its own copy of the fixture; open-close closes it too; first-write also inserts
// an entity into the fixture's table and reads one back, the first touch of a table that
// a test's copy pays; restore puts one database back to the snapshot (DB.Restore), what a
// suite pays between tests. The peers, in the same run: empty-open-close opens and closes an
// empty database (OpenInMemory), what a test pays for a fake without the fixture, and
// seed-ms, reported by open, is what building the fixture once took, what a test pays to
// load it into a fresh database.
func BenchmarkSnapshotOpen(b *testing.B) {
	snap := snapshotFixture(b)
	b.Run("empty-open-close", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			db, err := tabula.OpenInMemory(nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		b.ReportAllocs()
		const batch = 1000
		dbs := make([]*tabula.DB, 0, batch)
		closeAll := func() {
			b.StopTimer()
			for _, db := range dbs {
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
			dbs = dbs[:0]
			b.StartTimer()
		}
		for b.Loop() {
			db, err := snap.Open(nil)
			if err != nil {
				b.Fatal(err)
			}
			if dbs = append(dbs, db); len(dbs) == batch {
				closeAll()
			}
		}
		closeAll()
		b.ReportMetric(float64(snapshotSeed.Microseconds())/1e3, "seed-ms")
	})
	b.Run("open-close", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			db, err := snap.Open(nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first-write", func(b *testing.B) {
		b.ReportAllocs()
		e := tabula.Entity{PartitionKey: "p0500", RowKey: "new", Properties: tabula.Properties{"Name": tabula.String("mine")}}
		for b.Loop() {
			db, err := snap.Open(nil)
			if err != nil {
				b.Fatal(err)
			}
			t := db.Table("Fixture")
			if _, err := t.Insert(ctx, e); err != nil {
				b.Fatal(err)
			}
			if _, err := t.Get(ctx, "p0999", "r099"); err != nil {
				b.Fatal(err)
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("restore", func(b *testing.B) {
		db, err := snap.Open(nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		t := db.Table("Fixture")
		e := tabula.Entity{PartitionKey: "p0500", RowKey: "new"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := t.Insert(ctx, e); err != nil {
				b.Fatal(err)
			}
			if err := db.Restore(ctx, snap); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// fixtureTests is how many tests BenchmarkFixtureParallel runs side by side.
const fixtureTests = 100

// BenchmarkFixtureParallel runs, per op, 100 "tests" in parallel, each on a copy of its
// own of a 10,000-entity tabulatest fixture (seeded once): start an in-process server on
// the copy, read a fixture entity and insert one of its own through the official SDK, and
// close. B/op is what the 100 tests allocate together; ms/test what one costs of the op.
func BenchmarkFixtureParallel(b *testing.B) {
	fix := tabulatest.Tables(map[string][]tabula.Entity{"Movies": func() []tabula.Entity {
		out := make([]tabula.Entity, 0, 10_000)
		for i := range 10_000 {
			out = append(out, tabula.Entity{PartitionKey: fmt.Sprintf("p%02d", i/100), RowKey: fmt.Sprintf("r%02d", i%100),
				Properties: tabula.Properties{"I": tabula.Int32(i)}})
		}
		return out
	}()})
	if _, err := fix.Snapshot(); err != nil {
		b.Fatal(err)
	}
	mine := []byte(`{"PartitionKey":"mine","RowKey":"r"}`)
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, fixtureTests)
		for range fixtureTests {
			wg.Go(func() {
				srv, err := tabulatest.Start(nil, fix, tabulatest.InProcess())
				if err != nil {
					errs <- err
					return
				}
				defer srv.Close()
				svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(),
					&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.Transport()}})
				if err != nil {
					errs <- err
					return
				}
				movies := svc.NewClient("Movies")
				if _, err := movies.GetEntity(ctx, "p42", "r07", nil); err != nil {
					errs <- err
					return
				}
				if _, err := movies.AddEntity(ctx, mine, nil); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N*fixtureTests), "ms/test")
}
