package tabula

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// Operations do not read the catalog: that would cost each of them a second storage read.
// They resolve their table once to an openTable kept in memory. DeleteTable, after
// committing, takes it exclusively and marks it dropped before dropping the data:
//   - writes hold it read-locked while they run, so the drop waits for the writes under
//     way (they overlap the deletion, so ordering them before it is linearizable), and a
//     write can never land in data already dropped, where it would stay forever;
//   - reads take no lock: they check, after reading, that the table was not marked
//     dropped meanwhile, which means the drop had not begun while they read; if it was,
//     what they read may be torn, and they resolve the name again.

// openTable is a table resolved from the catalog, with its state in the simulated service,
// where its namespace is its storage account, with an account limit of its own.
type openTable struct {
	rec     tableRecord
	service *partition.Table
	// counted is closed once what the table held when it was resolved has been added to
	// service's statistics (see countStored), or the count was given up (Close).
	counted chan struct{}

	dropped atomic.Bool  // set by DeleteTable, holding mu
	mu      sync.RWMutex // read-locked by writes; DeleteTable waits on it before dropping data
}

// openTables maps lower-case table names (see openKey) to their openTable.
type openTables struct {
	m sync.Map // string → *openTable
	// mu and gen keep a resolution that raced a DeleteTable from caching the table it
	// deleted: DeleteTable bumps gen, and a resolution caches only if gen did not move.
	mu  sync.Mutex
	gen atomic.Uint64
}

// resolve returns the table called name, not dropped when resolve returns.
func (t *Table) resolve(ctx context.Context) (*openTable, error) {
	if ot := t.open.Load(); ot != nil && !ot.dropped.Load() {
		return ot, nil
	}
	ot, err := t.db.resolve(ctx, t.ns, t.name)
	if err == nil {
		t.open.Store(ot)
	}
	return ot, err
}

// acquire returns the table for a write, read-locked; release it with ot.mu.RUnlock.
func (t *Table) acquire(ctx context.Context) (*openTable, error) {
	for {
		ot, err := t.resolve(ctx)
		if err != nil {
			return nil, err
		}
		ot.mu.RLock()
		if !ot.dropped.Load() {
			return ot, nil
		}
		ot.mu.RUnlock()
	}
}

// read runs fn, a read of the table, until it ran with the table not dropped meanwhile.
// Effects of fn outside the read (admission, statistics) may then happen twice, rarely.
func (t *Table) read(ctx context.Context, fn func(ot *openTable) error) error {
	for {
		ot, err := t.resolve(ctx)
		if err != nil {
			return err
		}
		err = fn(ot)
		if !ot.dropped.Load() {
			return err
		}
	}
}

func (db *DB) resolve(ctx context.Context, ns, name string) (*openTable, error) {
	if validateTableName(name) != nil {
		return nil, ErrTableNotFound.WithDetail("table %q does not exist", name)
	}
	key := openKey(ns, name)
	for {
		if v, ok := db.open.m.Load(key); ok {
			if ot := v.(*openTable); !ot.dropped.Load() {
				if r := db.flavor; r != nil {
					if err := r.checkTableName(ot.rec.Name, name, ErrTableNotFound); err != nil {
						return nil, err
					}
				}
				return ot, nil
			}
			// Being dropped: DeleteTable has taken it out of the map already.
		}
		gen := db.open.gen.Load()
		var rec tableRecord
		err := db.view(ctx, func(tx *storage.Txn) (err error) {
			rec, err = lookupTableIn(tx, ns, name)
			return err
		})
		if err != nil {
			if errors.Is(err, ErrTableNotFound) {
				if berr := db.deleting.check(ns, name, db.clock()); berr != nil {
					return nil, berr
				}
			}
			return nil, err
		}
		db.open.mu.Lock()
		if _, cached := db.open.m.Load(key); !cached && db.open.gen.Load() == gen {
			ot := &openTable{rec: rec, service: db.service.Table(ns, serviceTableName(ns, rec.Name)),
				counted: make(chan struct{})}
			// The count's snapshot is taken before the table is cached, so before any write
			// reaches the table: each write is counted once, by the count or as it is made.
			db.countInBackground(ot)
			db.open.m.Store(key, ot)
		}
		db.open.mu.Unlock()
	}
}

// countInBackground adds what ot's table holds to its statistics, counted in a snapshot taken
// before it returns. The count reads every key of the table (see countStored), so it runs
// in the background: the request that first uses a table after Open costs what its own
// work costs, not a read of the whole table. What reports the statistics (HeatReport,
// Check) waits for it (see openTable.waitCounted); Close gives it up.
//
// The caller holds db.open.mu, which Restore holds while it replaces backgroundCtx.
func (db *DB) countInBackground(ot *openTable) {
	ctx := db.backgroundCtx
	taken := make(chan struct{})
	snapshotTaken := sync.OnceFunc(func() { close(taken) })
	db.background.Go(func() {
		defer close(ot.counted)
		defer snapshotTaken() // also when the snapshot could not be had
		_ = db.store.View(func(tx *storage.Txn) error {
			snapshotTaken()
			stored, err := db.storedStats(ctx, tx, ot.rec.ID)
			if err != nil {
				return err // left uncounted, as when HeatReport could not count it
			}
			for _, p := range stored {
				ot.service.RecordWrite(p.pk, p.entities, p.bytes)
			}
			return nil
		})
	})
	<-taken
}

// waitCounted waits until the table's count has been added to its statistics, or ctx ends.
func (ot *openTable) waitCounted(ctx context.Context) error {
	select {
	case <-ot.counted:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// forget marks the table called name dropped, after DeleteTable committed, and waits for
// the writes that hold it.
func (db *DB) forget(ns, name string) {
	db.open.mu.Lock()
	db.open.gen.Add(1)
	v, ok := db.open.m.LoadAndDelete(openKey(ns, name))
	db.open.mu.Unlock()
	if ok {
		ot := v.(*openTable)
		// Taking the lock waits for the writes under way; reads see the mark at once.
		ot.mu.Lock()
		ot.dropped.Store(true)
		ot.mu.Unlock()
	}
}

// openKey is a table's key in openTables: its lower-case name, after its namespace's name
// and a NUL (which table names never hold) outside the root namespace.
func openKey(ns, name string) string {
	if ns == "" {
		return strings.ToLower(name)
	}
	return ns + "\x00" + strings.ToLower(name)
}

// forgetAll forgets every open table, as forget does one, and their statistics: for
// Restore, which holds db.open.mu.
func (db *DB) forgetAll() {
	db.open.gen.Add(1)
	var keys []string
	db.open.m.Range(func(k, _ any) bool {
		keys = append(keys, k.(string))
		return true
	})
	for _, k := range keys {
		v, ok := db.open.m.LoadAndDelete(k)
		if !ok {
			continue
		}
		ot := v.(*openTable)
		ot.mu.Lock()
		ot.dropped.Store(true)
		ot.mu.Unlock()
		ns, _, found := strings.Cut(k, "\x00")
		if !found {
			ns = ""
		}
		db.service.DropTable(ns, serviceTableName(ns, ot.rec.Name))
	}
}

// replaced forgets ot, the open table called name, whose catalog entry now names other
// data (an import published it): the caller holds ot.mu locked, so no write holds it. Its
// statistics go with it, and the table's next resolution counts the new data.
func (db *DB) replaced(ns, name string, ot *openTable) {
	db.open.mu.Lock()
	db.open.gen.Add(1)
	db.open.m.CompareAndDelete(openKey(ns, name), ot)
	ot.dropped.Store(true)
	db.service.DropTable(ns, serviceTableName(ns, ot.rec.Name))
	db.open.mu.Unlock()
}
