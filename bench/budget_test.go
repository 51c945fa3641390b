//go:build linux

package bench

import (
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/badgertuning"
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
// 100-entity transactions into a database on disk opened with the default options (the
// memory budget TABULA_BENCH_BUDGET sets in bytes, else the default), one loader per
// core, then reads 10,000 of them at random. It reports the load's entities/s,
// the reads' read-entities/s, and the peaks of the process's anonymous memory (RssAnon,
// sampled every 10 ms through the load and the reads: the memory the store's budget
// bounds) and of its resident set (RSS, which also counts the pages of the memory-mapped
// table files that the kernel drops under pressure), beside the budget (budget-MB). Target
// at N = 1,000,000: RssAnon under the budget.
//
// The process's CPU time per entity loaded (cpu-µs/entity: the loaders' and Badger's
// flushes and compactions meanwhile) depends less than the rate on what else the machine
// runs.
//
// Its peers load the same entities the same way in the same process: raw Badger given the
// same budget (badgertuning.Options and the Go memory limit the engine holds, one Badger
// transaction of 100 existence checks and Sets each), which the engine's rate is a ratio
// to; and raw Badger with its own defaults and no limit, what the budget costs Badger.
func BenchmarkLoadWithinBudget(b *testing.B) {
	if _, err := memory(); err != nil {
		b.Skip("no /proc/self/status here:", err)
	}
	n := budgetEntities(b)
	budget := benchBudget(b)
	b.Run("engine", func(b *testing.B) {
		measureBudgetLoad(b, n, func(dir string) budgetStore {
			db, err := tabula.Open(dir, &tabula.Options{MemoryBudget: budget})
			if err != nil {
				b.Fatal(err)
			}
			return engineBudgetStore{db: db, t: createTable(b, db, "Budget")}
		})
	})
	b.Run("badger", func(b *testing.B) {
		measureBudgetLoad(b, n, func(dir string) budgetStore {
			release := badgertuning.HoldGoLimit(budget)
			db, err := badger.Open(badgertuning.Options(dir, budget))
			if err != nil {
				release()
				b.Fatal(err)
			}
			return rawBudgetStore{db: db, release: release}
		})
	})
	b.Run("badger-defaults", func(b *testing.B) {
		measureBudgetLoad(b, n, func(dir string) budgetStore {
			db, err := badger.Open(badger.DefaultOptions(dir).WithLoggingLevel(badger.WARNING).WithMetricsEnabled(false))
			if err != nil {
				b.Fatal(err)
			}
			return rawBudgetStore{db: db, release: func() {}}
		})
	})
}

// budgetStore is what BenchmarkLoadWithinBudget loads and reads.
type budgetStore interface {
	load(w *Workload, p *partitionLoad, rw *recordWriter) error
	get(pk, rk string) error
	close() error
}

type engineBudgetStore struct {
	db *tabula.DB
	t  *tabula.Table
}

func (s engineBudgetStore) load(w *Workload, p *partitionLoad, _ *recordWriter) error {
	actions := make([]tabula.Action, 0, p.to-p.from)
	for r := p.from; r < p.to; r++ {
		actions = append(actions, tabula.InsertAction(w.Entity(p.pk, RowKey(p.prefix, r), p.base+r)))
	}
	_, err := s.t.SubmitTransaction(ctx, actions)
	return err
}

func (s engineBudgetStore) get(pk, rk string) error {
	_, err := s.t.Get(ctx, pk, rk)
	return err
}

func (s engineBudgetStore) close() error { return s.db.Close() }

type rawBudgetStore struct {
	db      *badger.DB
	release func()
}

// budgetTableID is the table ID the raw stores write under, the engine's first table's.
const budgetTableID = 1

func (s rawBudgetStore) load(w *Workload, p *partitionLoad, rw *recordWriter) error {
	var clock rawClock
	return s.db.Update(func(txn *badger.Txn) error {
		for r := p.from; r < p.to; r++ {
			key := entityKey(nil, budgetTableID, p.pk, RowKey(p.prefix, r))
			if _, err := txn.Get(key); err != badger.ErrKeyNotFound {
				return err
			}
			if err := txn.Set(key, rw.appendRecord(nil, clock.next(), w.Props(p.base+r))); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s rawBudgetStore) get(pk, rk string) error {
	return s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(entityKey(nil, budgetTableID, pk, rk))
		if err != nil {
			return err
		}
		return item.Value(func([]byte) error { return nil })
	})
}

func (s rawBudgetStore) close() error {
	defer s.release()
	return s.db.Close()
}

// measureBudgetLoad runs BenchmarkLoadWithinBudget on the store open returns.
func measureBudgetLoad(b *testing.B, n int, open func(dir string) budgetStore) {
	var loadRate, loadCPU, readRate float64
	var peakAnon, peakRSS int64
	for b.Loop() {
		// What an earlier run left in the heap is not this run's.
		runtime.GC()
		debug.FreeOSMemory()
		dir, err := os.MkdirTemp(b.TempDir(), "budget")
		if err != nil {
			b.Fatal(err)
		}
		stop, peak := sampleMemory(10 * time.Millisecond)
		s := open(dir)
		w := NewWorkload(shape, 24)
		pks := make([]string, n/scaleRows)
		parts := make([]partitionLoad, len(pks))
		for p := range pks {
			pks[p] = w.GUID()
			parts[p] = partitionLoad{pk: pks[p], prefix: w.RowPrefix(p/1000, p%1000), to: scaleRows, base: p * scaleRows}
		}
		began, cpu := time.Now(), cpuNow()
		loadBudgetStore(b, s, w, parts)
		loadRate = float64(len(pks)*scaleRows) / time.Since(began).Seconds()
		loadCPU = float64((cpuNow() - cpu).Microseconds()) / float64(len(pks)*scaleRows)

		rng := rand.New(rand.NewPCG(uint64(n), 24))
		const reads = 10_000
		began = time.Now()
		for range reads {
			p := rng.IntN(len(pks))
			if err := s.get(pks[p], RowKey(parts[p].prefix, rng.IntN(scaleRows))); err != nil {
				b.Fatal(err)
			}
		}
		readRate = reads / time.Since(began).Seconds()
		stop()
		peakAnon, peakRSS = peak["RssAnon"], peak["VmRSS"]
		if err := s.close(); err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(loadRate, "entities/s")
	b.ReportMetric(loadCPU, "cpu-µs/entity")
	b.ReportMetric(readRate, "read-entities/s")
	b.ReportMetric(float64(peakAnon)/(1<<20), "peak-anon-MB")
	b.ReportMetric(float64(peakRSS)/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(n), "entities")
	b.ReportMetric(float64(badgertuning.EffectiveBudget(benchBudget(b)))/(1<<20), "budget-MB")
}

// loadBudgetStore loads parts into s, one partition (one transaction) at a time from one
// loader per core.
func loadBudgetStore(b *testing.B, s budgetStore, w *Workload, parts []partitionLoad) {
	loadParallel(b, parts, func() func(p *partitionLoad) error {
		rw := newRecordWriter()
		return func(p *partitionLoad) error { return s.load(w, p, rw) }
	})
}
