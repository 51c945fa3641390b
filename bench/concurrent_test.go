package bench

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/badgertuning"
)

// BenchmarkConcurrentInsert inserts single entities, each in its own operation, from 1, 16
// and 64 goroutines at once, with and without SyncWrites (on disk). The engine shares
// commits among concurrent writers (storage's group commit); the badger baseline does what
// an application would without it, one Badger transaction (an existence check and a Set)
// per insert, from the same number of goroutines. Each reports entities/s; engine ÷ badger
// is the group commit's gain.
func BenchmarkConcurrentInsert(b *testing.B) {
	syncs := []bool{false, true}
	if inMemory {
		syncs = syncs[:1] // nothing to sync
	}
	for _, syncWrites := range syncs {
		for _, g := range []int{1, 16, 64} {
			name := fmt.Sprintf("sync=%v/goroutines=%d", syncWrites, g)
			w := NewWorkload(shape, 24)
			pk, prefix := w.GUID(), w.RowPrefix(1, 1)
			b.Run(name+"/engine", func(b *testing.B) {
				db := openEngineWith(b, b.TempDir(), &tabula.Options{SyncWrites: syncWrites})
				t := createTable(b, db, "Concurrent")
				runConcurrent(b, g, func(_, i int) error {
					_, err := t.Insert(ctx, w.Entity(pk, RowKey(prefix, i), i))
					return err
				})
			})
			b.Run(name+"/badger", func(b *testing.B) {
				db := openBadgerSync(b, b.TempDir(), syncWrites)
				rws := make([]*recordWriter, g)
				clocks := make([]rawClock, g)
				for i := range rws {
					rws[i] = newRecordWriter()
				}
				runConcurrent(b, g, func(worker, i int) error {
					key := entityKey(nil, spreadID, pk, RowKey(prefix, i))
					value := rws[worker].appendRecord(nil, clocks[worker].next(), w.Props(i))
					return db.Update(func(txn *badger.Txn) error { return rawInsert(txn, key, value) })
				})
			})
		}
	}
}

// runConcurrent calls write b.N times in all, from g goroutines, each call with its
// goroutine's number and a distinct index, and reports entities/s.
func runConcurrent(b *testing.B, g int, write func(worker, i int) error) {
	b.ReportAllocs()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	b.ResetTimer()
	markCPU(b)
	for worker := range g {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := write(worker, int(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	reportRate(b, b.N, "entities/s")
}

// openBadgerSync is openBadger with SyncWrites as asked.
func openBadgerSync(tb testing.TB, dir string, syncWrites bool) *badger.DB {
	if !syncWrites {
		return openBadger(tb, dir)
	}
	tb.Helper()
	o := badgertuning.Options(dir, 0).WithSyncWrites(true) // as openRaw, synced
	db, err := badger.Open(o)
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
