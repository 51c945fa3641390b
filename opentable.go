package tabula

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// Operations do not read the catalog: that would cost each of them a second storage read.
// They resolve their table once to an openTable kept in memory, and hold it read-locked
// while they run. DeleteTable takes it exclusively after committing the deletion, so it
// waits for the operations already under way (which may be ordered before the deletion,
// since they overlap it) and only then drops the data; operations that come later find the
// openTable dropped and resolve the name again.

// openTable is a table resolved from the catalog, with its state in the simulated service.
type openTable struct {
	rec     tableRecord
	service *partition.Table

	mu      sync.RWMutex
	dropped bool // set by DeleteTable while holding mu exclusively
}

// openTables maps lower-case table names to their openTable.
type openTables struct {
	m sync.Map // string → *openTable
	// mu and gen keep a resolution that raced a DeleteTable from caching the table it
	// deleted: DeleteTable bumps gen, and a resolution caches only if gen did not move.
	mu  sync.Mutex
	gen atomic.Uint64
}

// acquire returns the table called name, read-locked; release it with ot.mu.RUnlock.
func (t *Table) acquire(ctx context.Context) (*openTable, error) {
	if ot := t.open.Load(); ot != nil {
		ot.mu.RLock()
		if !ot.dropped {
			return ot, nil
		}
		ot.mu.RUnlock()
	}
	ot, err := t.db.acquire(ctx, t.name)
	if err == nil {
		t.open.Store(ot)
	}
	return ot, err
}

func (db *DB) acquire(ctx context.Context, name string) (*openTable, error) {
	if validateTableName(name) != nil {
		return nil, ErrTableNotFound.with("table %q does not exist", name)
	}
	key := strings.ToLower(name)
	for {
		if v, ok := db.open.m.Load(key); ok {
			ot := v.(*openTable)
			ot.mu.RLock()
			if !ot.dropped {
				return ot, nil
			}
			// Being dropped: DeleteTable has taken it out of the map already.
			ot.mu.RUnlock()
		}
		gen := db.open.gen.Load()
		var rec tableRecord
		err := db.view(ctx, func(tx *storage.Txn) (err error) {
			rec, err = lookupTable(tx, name)
			return err
		})
		if err != nil {
			return nil, err
		}
		db.open.mu.Lock()
		if db.open.gen.Load() == gen {
			db.open.m.LoadOrStore(key, &openTable{rec: rec, service: db.service.Table(rec.Name)})
		}
		db.open.mu.Unlock()
	}
}

// forget marks the table called name dropped, after DeleteTable committed, waiting for the
// operations that hold it.
func (db *DB) forget(name string) {
	db.open.mu.Lock()
	db.open.gen.Add(1)
	v, ok := db.open.m.LoadAndDelete(strings.ToLower(name))
	db.open.mu.Unlock()
	if ok {
		ot := v.(*openTable)
		ot.mu.Lock()
		ot.dropped = true
		ot.mu.Unlock()
	}
}
