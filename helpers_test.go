package tabula

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
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

// Which store a test's databases live in. A test opens its databases with openStore (or
// openTestDB, or openForTest when it wants the error); they live in memory unless
//   - the test runs under bothStores, which runs it again as subtests "memory" and "disk":
//
//	if bothStores(t, TestX) {
//		return
//	}
//
//   - or TABULA_TEST_STORE=disk is set, which puts every test's databases on disk (CI runs
//     the package both ways).
//
// Every database opened so is checked (DB.Check: its invariants) and closed when its test
// ends; reopenStore closes one the same way and opens its directory again.

// storeModes maps the name of each subtest bothStores started to whether it is on disk.
var storeModes sync.Map // string → bool

// allOnDisk puts the databases of tests outside bothStores on disk too.
var allOnDisk = os.Getenv("TABULA_TEST_STORE") == "disk"

func bothStores(t *testing.T, test func(*testing.T)) bool {
	if _, ok := storeMode(t); ok {
		return false
	}
	for _, mode := range []string{"memory", "disk"} {
		t.Run(mode, func(t *testing.T) {
			storeModes.Store(t.Name(), mode == "disk")
			test(t)
		})
	}
	return true
}

// storeMode reports whether t runs under a bothStores subtest, and if so whether on disk.
func storeMode(t *testing.T) (onDisk, ok bool) {
	name := t.Name()
	storeModes.Range(func(k, v any) bool {
		if prefix := k.(string); name == prefix || strings.HasPrefix(name, prefix+"/") {
			onDisk, ok = v.(bool), true
			return false
		}
		return true
	})
	return onDisk, ok
}

// testDirs maps each database a test opened on disk to its directory and options, for
// reopenStore.
var testDirs sync.Map // *DB → testDir

type testDir struct {
	dir  string
	opts *Options
}

// openForTest opens a database in the store the test runs on (see above), to be checked
// and closed when the test ends.
func openForTest(t *testing.T, opts *Options) (*DB, error) {
	onDisk, ok := storeMode(t)
	if !ok {
		onDisk = allOnDisk
	}
	if !onDisk {
		db, err := OpenInMemory(opts)
		if err == nil {
			t.Cleanup(func() { closeChecked(t, db) })
		}
		return db, err
	}
	return openDir(t, t.TempDir(), opts)
}

func openDir(t *testing.T, dir string, opts *Options) (*DB, error) {
	db, err := Open(dir, opts)
	if err == nil {
		testDirs.Store(db, testDir{dir, opts})
		t.Cleanup(func() { closeChecked(t, db) })
	}
	return db, err
}

// openStore is openForTest for a test that expects the open to succeed.
func openStore(t *testing.T, opts *Options) *DB {
	t.Helper()
	db, err := openForTest(t, opts)
	require.NoError(t, err)
	return db
}

// reopenStore closes a database on disk, checked, and opens its directory again with the
// same options; in memory, where closing would lose everything, it returns the same one.
func reopenStore(t *testing.T, db *DB) *DB {
	t.Helper()
	v, ok := testDirs.LoadAndDelete(db)
	if !ok {
		return db
	}
	closeChecked(t, db)
	d := v.(testDir)
	db, err := openDir(t, d.dir, d.opts)
	require.NoError(t, err)
	return db
}

// closeChecked checks a database's invariants, unless the test closed it already, and closes
// it.
func closeChecked(t *testing.T, db *DB) {
	t.Helper()
	if !db.closed() {
		assert.NoError(t, db.Check(context.Background()), "the database's invariants, when the test ends")
	}
	require.NoError(t, db.Close())
}

func openTestDB(t *testing.T, clock *fakeClock) *DB {
	t.Helper()
	opts := &Options{}
	if clock != nil {
		opts.Clock = clock.Now
	}
	return openStore(t, opts)
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

// bothStores really switches the store: under "disk" the database keeps its files in a
// directory of the test, under "memory" it keeps none.
func TestBothStoresSwitchesTheStore(t *testing.T) {
	var ran []string
	bothStores(t, func(t *testing.T) {
		openTestDB(t, nil)
		onDisk, ok := storeMode(t)
		if !ok {
			t.Fatal("not under bothStores")
		}
		// t.TempDir makes numbered directories side by side; openTestDB's is a sibling.
		files, err := filepath.Glob(filepath.Join(filepath.Dir(t.TempDir()), "*", "MANIFEST"))
		if err != nil {
			t.Fatal(err)
		}
		if onDisk != (len(files) == 1) {
			t.Fatalf("on disk: %v, but the test's directories hold %v", onDisk, files)
		}
		ran = append(ran, filepath.Base(t.Name()))
	})
	if strings.Join(ran, ",") != "memory,disk" {
		t.Fatalf("ran %v", ran)
	}
}
