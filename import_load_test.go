package tabula

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tabuladb/tabula/storage"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SetImportLoadFrom sets how many entities of a table in key order an exclusive import
// writes before it loads the rest directly, for the tests outside the package (the crash
// test); it returns the undo.
func SetImportLoadFrom(n int64) func() {
	old := loadFrom
	loadFrom = n
	return func() { loadFrom = old }
}

// countLoads counts the direct loads started until the test ends.
func countLoads(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	loadStarted = func() { n.Add(1) }
	t.Cleanup(func() { loadStarted = nil })
	return &n
}

// An exclusive import of a table in key order loads it directly, with every entity, each
// with a Timestamp of its own; it is all there after the database is opened again.
func TestImportExclusiveLoadsDirectly(t *testing.T) {
	defer SetImportLoadFrom(500)()
	loads := countLoads(t)
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	const n = 2400
	p, err := db.Import(ctx, strings.NewReader(bulkFile(n, inOrder)), &ImportOptions{Exclusive: true})
	require.NoError(t, err)
	assert.Equal(t, int64(n), p.Entities)
	assert.Equal(t, int64(1), loads.Load())
	check := func(db *DB) {
		seen := map[ETag]bool{}
		i := 0
		for e, err := range db.Table("Bulk").QueryAll(ctx, Query{}) {
			require.NoError(t, err)
			assert.Equal(t, inOrder(i), e.RowKey)
			assert.False(t, seen[e.ETag], "ETag %s twice", e.ETag)
			seen[e.ETag] = true
			i++
		}
		assert.Equal(t, n, i)
	}
	check(db)
	// The store takes writes after the load.
	_, err = db.Table("Bulk").Insert(ctx, Entity{PartitionKey: "z", RowKey: "z"})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	db, err = Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Check(ctx))
	_, err = db.Table("Bulk").Get(ctx, "z", "z")
	require.NoError(t, err)
	require.NoError(t, db.Table("Bulk").Delete(ctx, "z", "z", AnyETag))
	check(db)
}

// Once a direct load has begun, an entity out of key order ends it and the rest goes the
// ordinary way: a repeat of an entity loaded is found (and the import fails, leaving
// nothing), one merely out of order is imported.
func TestImportExclusiveOutOfOrder(t *testing.T) {
	if bothStores(t, TestImportExclusiveOutOfOrder) {
		return
	}
	defer SetImportLoadFrom(500)()
	loads := countLoads(t)
	ctx := context.Background()
	db := openStore(t, nil)
	const n = 2400
	lines := strings.SplitAfter(bulkFile(n, inOrder), "\n")
	lines[2+n-1] = lines[2+10] // the last entity is the eleventh again
	_, err := db.Import(ctx, strings.NewReader(strings.Join(lines, "")), &ImportOptions{Exclusive: true})
	var ie *ImportError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 2+n, ie.Line)
	assert.Contains(t, err.Error(), "is in the table twice")
	assert.Equal(t, 0, entityKeys(t, db))

	lines = strings.SplitAfter(bulkFile(n, func(i int) string {
		if i == n-100 {
			return "a" // before every other RowKey of the last partition
		}
		return inOrder(i)
	}), "\n")
	p, err := db.Import(ctx, strings.NewReader(strings.Join(lines, "")), &ImportOptions{Exclusive: true})
	require.NoError(t, err)
	assert.Equal(t, int64(n), p.Entities)
	assert.Equal(t, n, entityKeys(t, db))
	_, err = db.Table("Bulk").Get(ctx, "p023", "a")
	require.NoError(t, err)
	if onDisk, _ := storeMode(t); onDisk {
		assert.Positive(t, loads.Load())
	}
}

// A bad line after a direct load has begun, and a cancelled import, leave nothing.
func TestImportExclusiveFailureLeavesNothing(t *testing.T) {
	if bothStores(t, TestImportExclusiveFailureLeavesNothing) {
		return
	}
	defer SetImportLoadFrom(500)()
	ctx := context.Background()
	db := openStore(t, nil)
	const n = 2400
	lines := strings.SplitAfter(bulkFile(n, inOrder), "\n")
	lines[2+2000] = strings.Replace(lines[2+2000], `"RowKey"`, `"Bad@odata.type":"Edm.Int64","Bad":"x","RowKey"`, 1)
	_, err := db.Import(ctx, strings.NewReader(strings.Join(lines, "")), &ImportOptions{Exclusive: true})
	var ie *ImportError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 3+2000, ie.Line)

	cctx, cancel := context.WithCancel(ctx)
	_, err = db.Import(cctx, strings.NewReader(bulkFile(n, inOrder)), &ImportOptions{Exclusive: true, ProgressEvery: 1500,
		Progress: func(Progress) error { cancel(); return nil }})
	require.ErrorIs(t, err, context.Canceled)
	_, err = db.Table("Bulk").Get(ctx, "p000", inOrder(0))
	assert.ErrorIs(t, err, ErrTableNotFound)
	assert.Equal(t, 0, entityKeys(t, db))

	// And the database goes on: the whole file goes in.
	p, err := db.Import(ctx, strings.NewReader(bulkFile(n, inOrder)), &ImportOptions{Exclusive: true})
	require.NoError(t, err)
	assert.Equal(t, int64(n), p.Entities)
	assert.Equal(t, n, entityKeys(t, db))
}

// ExistingReplace into a table that exists loads the file directly too, and the table is
// the file's entities and the stored ones it does not have.
func TestImportExclusiveReplace(t *testing.T) {
	if bothStores(t, TestImportExclusiveReplace) {
		return
	}
	defer SetImportLoadFrom(500)()
	loads := countLoads(t)
	ctx := context.Background()
	db := openStore(t, nil)
	tbl := createTable(t, db, "Bulk")
	_, err := tbl.Insert(ctx, Entity{PartitionKey: "p000", RowKey: inOrder(5), Properties: Properties{"Old": Int32(1)}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "zz", RowKey: "kept"})
	require.NoError(t, err)
	const n = 2400
	p, err := db.Import(ctx, strings.NewReader(bulkFile(n, inOrder)), &ImportOptions{Exclusive: true, Existing: ExistingReplace})
	require.NoError(t, err)
	assert.Equal(t, int64(n), p.Entities)
	e, err := tbl.Get(ctx, "p000", inOrder(5))
	require.NoError(t, err)
	assert.NotContains(t, e.Properties, "Old")
	_, err = tbl.Get(ctx, "zz", "kept")
	require.NoError(t, err)
	assert.Equal(t, n+1, entityKeys(t, db))
	if onDisk, _ := storeMode(t); onDisk {
		assert.Equal(t, int64(1), loads.Load())
	}
}

// Filter keeps the entities it matches, as the file has them, in DB.Import, ImportService
// and CheckImport alike; a Filter that does not parse is refused before anything is read.
func TestImportFilter(t *testing.T) {
	ctx := context.Background()
	file := remoteFile(1200) // N is i, PartitionKey p0 to p2
	opts := &ImportOptions{Filter: "N lt 100 or PartitionKey eq 'p2' and Timestamp lt datetime'2024-01-03T00:00:00Z'"}
	const want = 100 + 200
	p, err := CheckImport(ctx, strings.NewReader(file), opts)
	require.NoError(t, err)
	assert.Equal(t, int64(want), p.Entities)

	db := openStore(t, nil)
	p, err = db.Import(ctx, strings.NewReader(file), opts)
	require.NoError(t, err)
	assert.Equal(t, int64(want), p.Entities)
	assert.Equal(t, want, countAll(t, db.Table("Things")))
	_, err = db.Table("Things").Get(ctx, "p0", "00100")
	assert.ErrorIs(t, err, ErrResourceNotFound)

	other := openStore(t, nil)
	p, err = ImportService(ctx, asRemote{ServiceAPI: Embedded(other)}, strings.NewReader(file), opts)
	require.NoError(t, err)
	assert.Equal(t, int64(want), p.Entities)
	assert.Equal(t, want, countAll(t, other.Table("Things")))

	_, err = db.Import(ctx, strings.NewReader("not read"), &ImportOptions{Filter: "N lt"})
	assert.ErrorIs(t, err, ErrInvalidInput)
}

// Every table of an exclusive import large enough loads directly, not only the first: the
// second starts on a tree past what a load's start may rewrite (storage.NewLoad), which
// the writes between the two leave alone. The database checks out afterwards.
func TestImportExclusiveLoadsEveryTable(t *testing.T) {
	defer SetImportLoadFrom(500)()
	loads := countLoads(t)
	ctx := context.Background()
	dir := t.TempDir()
	opts := smallBudget() // the smallest: a load's start may rewrite 32 MiB
	db, err := Open(dir, opts)
	require.NoError(t, err)
	const n = 10_000 // of 4 KB: 40 MB a table
	pad := strings.Repeat("x", 4000)
	var b strings.Builder
	b.WriteString(`{"@tabula":"export","version":1}` + "\n")
	for _, name := range []string{"One", "Two"} {
		fmt.Fprintf(&b, `{"@tabula":"table","account":"","table":%q}`+"\n", name)
		for i := range n {
			fmt.Fprintf(&b, `{"PartitionKey":"p%03d","RowKey":%q,"Timestamp":"2024-01-02T03:04:05Z","Payload":%q}`+"\n", i/100, inOrder(i), pad)
		}
		fmt.Fprintf(&b, `{"@tabula":"end","account":"","table":%q,"entities":%d}`+"\n", name, n)
	}
	fmt.Fprintf(&b, `{"@tabula":"eof","tables":2,"entities":%d}`+"\n", 2*n)
	p, err := db.Import(ctx, strings.NewReader(b.String()), &ImportOptions{Exclusive: true})
	require.NoError(t, err)
	assert.Equal(t, int64(2*n), p.Entities)
	assert.Equal(t, int64(2), loads.Load())
	require.NoError(t, db.Close())
	db, err = Open(dir, opts)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Check(ctx))
	assert.Equal(t, 2*n, entityKeys(t, db))
	for _, name := range []string{"One", "Two"} {
		e, err := db.Table(name).Get(ctx, "p099", inOrder(n-1))
		require.NoError(t, err)
		assert.Equal(t, String(pad), e.Properties["Payload"])
	}
	// No drop marker is left of the IDs the import reserved and did not use.
	require.NoError(t, db.store.View(func(tx *storage.Txn) error {
		it := tx.Scan([]byte{prefixDrop}, []byte{prefixDrop + 1})
		defer it.Close()
		assert.False(t, it.Next())
		return nil
	}))
}
