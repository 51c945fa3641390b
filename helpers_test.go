package tabula

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/storage"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// storageKinds runs a test on disk and in memory. reopen closes a DB and opens it again on
// disk; in memory, where closing would lose everything, it returns the same DB.
func storageKinds(t *testing.T, test func(t *testing.T, open func(opts *Options) *DB, reopen func(*DB) *DB)) {
	t.Run("memory", func(t *testing.T) {
		test(t, func(opts *Options) *DB {
			db, err := OpenInMemory(opts)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, db.Close()) })
			return db
		}, func(db *DB) *DB { return db })
	})
	t.Run("disk", func(t *testing.T) {
		dir := t.TempDir()
		var opts *Options
		open := func(o *Options) *DB {
			opts = o
			db, err := Open(dir, o)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, db.Close()) })
			return db
		}
		test(t, open, func(db *DB) *DB {
			require.NoError(t, db.Close())
			return open(opts)
		})
	})
}

func openTestDB(t *testing.T, clock *fakeClock) *DB {
	t.Helper()
	opts := &Options{}
	if clock != nil {
		opts.Clock = clock.Now
	}
	db, err := openForTest(t, opts) // in memory unless bothStores says disk
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func createTable(t *testing.T, db *DB, name string) *Table {
	t.Helper()
	tbl, err := db.CreateTable(context.Background(), name)
	require.NoError(t, err)
	return tbl
}

// compareUTF16 is the service's string order, computed the slow and obvious way.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func compareEntityKeys(a, b Entity) int {
	return cmp.Or(compareUTF16(a.PartitionKey, b.PartitionKey), compareUTF16(a.RowKey, b.RowKey))
}

// eachStored calls fn with every stored key and value of a table, in key order, from one
// snapshot, straight from storage: for tests that must not depend on the query engine.
func eachStored(tbl *Table, fn func(key, value []byte) error) error {
	return tbl.db.view(context.Background(), func(tx *storage.Txn) error {
		rec, err := lookupTable(tx, tbl.name)
		if err != nil {
			return err
		}
		it := tx.Scan(tableBounds(rec.ID))
		defer it.Close()
		for it.Next() {
			key := it.Key()
			if err := it.Value(func(v []byte) error { return fn(key, v) }); err != nil {
				return err
			}
		}
		return nil
	})
}

// dumpTable reads every entity of a table in key order.
func dumpTable(t *testing.T, tbl *Table) []Entity {
	t.Helper()
	var out []Entity
	d := newRecordDecoder()
	require.NoError(t, eachStored(tbl, func(key, value []byte) error {
		pk, rk, err := decodeEntityKey(key)
		if err != nil {
			return err
		}
		e := Entity{PartitionKey: pk, RowKey: rk, Properties: Properties{}}
		ticks, err := d.decode(value, nil, e.Properties)
		e.Timestamp, e.ETag = timeOfTicks(ticks), etagOf(ticks)
		out = append(out, e)
		return err
	}))
	return out
}

// rawTable returns a table's stored bytes, key and value, for byte-for-byte comparisons.
func rawTable(t *testing.T, tbl *Table) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, eachStored(tbl, func(key, value []byte) error {
		out[string(key)] = string(value)
		return nil
	}))
	return out
}
