package tabula

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/storage"
)

// rawStore returns every key and value a database stores, but the clock record, whose
// reservation may differ between databases holding the same data.
func rawStore(t *testing.T, db *DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, db.view(context.Background(), func(tx *storage.Txn) error {
		it := tx.Scan(nil, nil)
		defer it.Close()
		for it.Next() {
			key := string(it.Key())
			if err := it.Value(func(v []byte) error { out[key] = string(v); return nil }); err != nil {
				return err
			}
		}
		return nil
	}))
	delete(out, string(clockKey))
	return out
}

// seedForSnapshot fills db with something of every kind a database holds: tables in two
// namespaces, entities, access policies, service properties, a deleted table.
func seedForSnapshot(t *testing.T, db *DB) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range []string{"", "alice"} {
		n := db.Namespace(ns)
		for _, name := range []string{"Movies", "books"} {
			tbl, err := n.CreateTable(ctx, name)
			require.NoError(t, err)
			for i := range 5 {
				_, err := tbl.Insert(ctx, Entity{PartitionKey: fmt.Sprintf("p%d", i%2), RowKey: fmt.Sprintf("r%d", i),
					Properties: Properties{"N": Int64(i), "S": String(ns + name)}})
				require.NoError(t, err)
			}
		}
		require.NoError(t, n.Table("Movies").SetAccessPolicies(ctx, []AccessPolicy{{ID: "read", Permission: "r",
			Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}}))
		require.NoError(t, n.SetServiceProperties(ctx, []byte("<StorageServiceProperties>"+ns+"</StorageServiceProperties>")))
	}
	_, err := db.CreateTable(ctx, "Gone")
	require.NoError(t, err)
	require.NoError(t, db.DeleteTable(ctx, "Gone"))
	db.background.Wait() // its data dropped, not still dropping
}

func TestSnapshotOpenCopiesEverything(t *testing.T) {
	if bothStores(t, TestSnapshotOpenCopiesEverything) {
		return
	}
	ctx := context.Background()
	clock := newFakeClock()
	src := openTestDB(t, clock)
	seedForSnapshot(t, src)
	want := rawStore(t, src)
	snap, err := src.Snapshot(ctx)
	require.NoError(t, err)
	defer snap.Close()
	newest := src.lastTicksForTest()

	// The source goes on changing; the snapshot does not.
	_, err = src.Table("Movies").Insert(ctx, Entity{PartitionKey: "later", RowKey: "x"})
	require.NoError(t, err)
	require.NoError(t, src.DeleteTable(ctx, "books"))
	require.NoError(t, src.Namespace("alice").SetServiceProperties(ctx, []byte("changed")))

	// A clock stepped back: the clones' Timestamps must still come after the snapshot's.
	clock.Advance(-time.Hour)
	var clones []*DB
	for range 2 {
		c, err := snap.Open(&Options{Clock: clock.Now})
		require.NoError(t, err)
		t.Cleanup(func() { closeChecked(t, c) })
		require.NoError(t, c.Check(ctx))
		assert.Equal(t, want, rawStore(t, c), "a clone holds exactly the snapshot's keys and values")
		clones = append(clones, c)
	}

	// Each clone is its own: writes to one reach neither the other, nor the snapshot.
	a, b := clones[0], clones[1]
	e, err := a.Table("Movies").Insert(ctx, Entity{PartitionKey: "clone", RowKey: "a"})
	require.NoError(t, err)
	assert.Greater(t, ticksOf(e.Timestamp), newest, "a clone's Timestamps come after the snapshot's")
	tbl, err := a.Namespace("alice").CreateTable(ctx, "Fresh")
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "r"})
	require.NoError(t, err)
	require.NoError(t, a.Namespace("alice").DeleteTable(ctx, "books"))
	require.NoError(t, a.Table("Movies").SetAccessPolicies(ctx, nil))
	require.NoError(t, a.Check(ctx))

	assert.Equal(t, want, rawStore(t, b))
	_, err = b.Table("Movies").Get(ctx, "clone", "a")
	assert.ErrorIs(t, err, ErrResourceNotFound)
	_, err = src.Table("Movies").Get(ctx, "clone", "a")
	assert.ErrorIs(t, err, ErrResourceNotFound)
	c, err := snap.Open(nil)
	require.NoError(t, err)
	t.Cleanup(func() { closeChecked(t, c) })
	assert.Equal(t, want, rawStore(t, c), "the snapshot is unchanged by its clones' writes")

	// The table-ID counter came along: b's new table does not reuse an ID of a's or of the
	// deleted table's.
	_, err = b.CreateTable(ctx, "Another")
	require.NoError(t, err)
	require.NoError(t, b.Check(ctx))
	policies, err := b.Table("Movies").AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Len(t, policies, 1)
	props, err := b.Namespace("alice").ServiceProperties(ctx)
	require.NoError(t, err)
	assert.Equal(t, "<StorageServiceProperties>alice</StorageServiceProperties>", string(props))
}

// lastTicksForTest is the last Timestamp db handed out.
func (db *DB) lastTicksForTest() int64 {
	db.stampMu.Lock()
	defer db.stampMu.Unlock()
	return db.lastTicks
}

func TestSnapshotReadsOneInstant(t *testing.T) {
	if bothStores(t, TestSnapshotReadsOneInstant) {
		return
	}
	ctx := context.Background()
	db := openTestDB(t, nil)
	seedForSnapshot(t, db)
	// More than a chunk, so the iterator resumes across reads.
	big, err := db.CreateTable(ctx, "Big")
	require.NoError(t, err)
	for i := range 2*snapshotChunk + 3 {
		_, err := big.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%04d", i), Properties: Properties{"I": Int32(i)}})
		require.NoError(t, err)
	}
	wantBig := dumpTable(t, big)
	snap, err := db.Snapshot(ctx)
	require.NoError(t, err)
	defer snap.Close()

	// Everything changes after the snapshot.
	require.NoError(t, db.DeleteTable(ctx, "Big"))
	require.NoError(t, db.Namespace("alice").DeleteTable(ctx, "Movies"))
	require.NoError(t, db.Namespace("").SetServiceProperties(ctx, []byte("later")))
	require.NoError(t, db.Table("Movies").SetAccessPolicies(ctx, nil))
	_, err = db.Namespace("bob").CreateTable(ctx, "Later")
	require.NoError(t, err)

	var names []string
	byName := map[string]SnapshotTable{}
	for tbl, err := range snap.Tables(ctx) {
		require.NoError(t, err)
		names = append(names, tbl.Namespace+"/"+tbl.Name)
		byName[tbl.Namespace+"/"+tbl.Name] = tbl
		assert.False(t, tbl.Created.IsZero())
	}
	assert.Equal(t, []string{"/Big", "/books", "/Movies", "alice/books", "alice/Movies"}, names)

	var got []Entity
	for e, err := range snap.Entities(ctx, byName["/Big"]) {
		require.NoError(t, err)
		got = append(got, e)
	}
	assert.Equal(t, wantBig, got)
	n := 0
	for _, err := range snap.Entities(ctx, byName["/Big"]) {
		require.NoError(t, err)
		if n++; n == 3 {
			break
		}
	}
	assert.Equal(t, 3, n, "an iterator stops when the loop does")

	policies, err := snap.AccessPolicies(ctx, byName["/Movies"])
	require.NoError(t, err)
	assert.Equal(t, []AccessPolicy{{ID: "read", Permission: "r", Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}}, policies)
	policies, err = snap.AccessPolicies(ctx, byName["/books"])
	require.NoError(t, err)
	assert.Empty(t, policies)
	props, err := snap.ServiceProperties(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, "<StorageServiceProperties></StorageServiceProperties>", string(props))
	props, err = snap.ServiceProperties(ctx, "bob")
	require.NoError(t, err)
	assert.Nil(t, props)
	namespaces, err := snap.Namespaces(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"", "alice"}, namespaces)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, err := range snap.Entities(canceled, byName["/Big"]) {
		assert.ErrorIs(t, err, context.Canceled)
	}
}

// A snapshot on disk is readable until it or its database closes; Close does not wait for
// the caller to close it first.
func TestSnapshotOnDiskClosesWithItsDB(t *testing.T) {
	ctx := context.Background()
	db, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	seedForSnapshot(t, db)
	snap, err := db.Snapshot(ctx)
	require.NoError(t, err)
	other, err := db.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, other.Close())
	require.NoError(t, other.Close(), "closing twice is harmless")

	// A snapshot on disk opens as an in-memory copy.
	c, err := snap.Open(nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	require.NoError(t, c.Check(ctx))
	assert.Equal(t, rawStore(t, db), rawStore(t, c))
	err = c.Restore(ctx, snap)
	assert.ErrorIs(t, err, ErrRestoreOnDisk)
	err = db.Restore(ctx, snap)
	assert.ErrorIs(t, err, ErrRestoreOnDisk)

	require.NoError(t, db.Check(ctx))
	require.NoError(t, db.Close())
	for _, err := range snap.Tables(ctx) {
		assert.ErrorIs(t, err, ErrInternal, "a snapshot of a closed database")
	}
	require.NoError(t, snap.Close())
	_, err = db.Snapshot(ctx)
	assert.ErrorIs(t, err, ErrInternal)
}

func TestRestore(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	db := openTestDB(t, clock)
	if _, onDisk := testDirs.Load(db); onDisk {
		t.Skip("only an in-memory database restores; TestSnapshotOnDiskClosesWithItsDB covers the refusal")
	}
	seedForSnapshot(t, db)
	want := rawStore(t, db)
	snap, err := db.Snapshot(ctx)
	require.NoError(t, err)

	// Use every table, so each is open with its statistics, then change everything.
	movies := db.Table("Movies")
	_, err = movies.Insert(ctx, Entity{PartitionKey: "later", RowKey: "x"})
	require.NoError(t, err)
	require.NoError(t, db.DeleteTable(ctx, "books"))
	_, err = db.CreateTable(ctx, "books") // same name, new ID
	require.NoError(t, err)
	_, err = db.Namespace("carol").CreateTable(ctx, "New")
	require.NoError(t, err)
	require.NoError(t, db.Namespace("alice").SetServiceProperties(ctx, []byte("changed")))
	clock.Advance(-time.Hour)
	before := db.lastTicksForTest()

	require.NoError(t, db.Restore(ctx, snap))
	assert.Equal(t, want, rawStore(t, db))
	require.NoError(t, db.Check(ctx), "statistics, clock and counter hold after a restore")
	// Handles taken before the restore work on the restored data.
	_, err = movies.Get(ctx, "later", "x")
	assert.ErrorIs(t, err, ErrResourceNotFound)
	e, err := movies.Insert(ctx, Entity{PartitionKey: "after", RowKey: "x"})
	require.NoError(t, err)
	assert.Greater(t, ticksOf(e.Timestamp), before, "Timestamps go on after every one handed out")
	got := dumpTable(t, db.Table("books"))
	assert.Len(t, got, 5, "the restored books is the snapshot's, not the one created since")
	_, err = db.CreateTable(ctx, "Fresh")
	require.NoError(t, err)
	require.NoError(t, db.Check(ctx))

	// Restoring again undoes the writes since, as often as asked.
	require.NoError(t, db.Restore(ctx, snap))
	assert.Equal(t, want, rawStore(t, db))
	require.NoError(t, db.Check(ctx))

	// From a clone's snapshot into another database.
	other, err := OpenInMemory(nil)
	require.NoError(t, err)
	t.Cleanup(func() { closeChecked(t, other) })
	require.NoError(t, other.Restore(ctx, snap))
	assert.Equal(t, want, rawStore(t, other))
}

// Clones written to concurrently stay independent, and a restore under concurrent writers
// leaves each write either undone or on the restored data.
func TestSnapshotConcurrentClones(t *testing.T) {
	ctx := context.Background()
	src, err := OpenInMemory(nil)
	require.NoError(t, err)
	t.Cleanup(func() { closeChecked(t, src) })
	seedForSnapshot(t, src)
	want := rawStore(t, src)
	snap, err := src.Snapshot(ctx)
	require.NoError(t, err)

	const clones, writes = 8, 50
	var wg sync.WaitGroup
	for i := range clones {
		wg.Go(func() {
			c, err := snap.Open(nil)
			if !assert.NoError(t, err) {
				return
			}
			defer c.Close()
			tbl := c.Table("Movies")
			for j := range writes {
				_, err := tbl.Insert(ctx, Entity{PartitionKey: fmt.Sprintf("c%d", i), RowKey: fmt.Sprint(j)})
				assert.NoError(t, err)
			}
			_, err = c.CreateTable(ctx, fmt.Sprintf("Clone%d", i))
			assert.NoError(t, err)
			n := 0
			for _, err := range tbl.QueryAll(ctx, Query{}) {
				assert.NoError(t, err)
				n++
			}
			assert.Equal(t, 5+writes, n, "a clone sees its own writes and no other's")
			assert.NoError(t, c.Check(ctx))
		})
	}
	// Meanwhile the source is written to and restored.
	wg.Go(func() {
		for j := range writes {
			_, err := src.Table("Movies").Upsert(ctx, Entity{PartitionKey: "src", RowKey: fmt.Sprint(j)}, Replace)
			assert.NoError(t, err)
		}
	})
	// And tables come and go, in the snapshot's catalog and outside it: a restore may
	// undo any step, but never leaves the catalog, the data and the statistics apart.
	wg.Go(func() {
		for j := range writes {
			for _, name := range []string{"Churn", "books"} {
				tbl, err := src.CreateTable(ctx, name)
				if err != nil {
					assert.ErrorIs(t, err, ErrTableAlreadyExists)
					tbl = src.Table(name)
				}
				_, err = tbl.Insert(ctx, Entity{PartitionKey: "churn", RowKey: fmt.Sprint(j)})
				if err != nil && !errors.Is(err, ErrTableNotFound) {
					assert.ErrorIs(t, err, ErrEntityAlreadyExists)
				}
				if err := src.DeleteTable(ctx, name); err != nil {
					assert.ErrorIs(t, err, ErrResourceNotFound)
				}
			}
		}
	})
	wg.Go(func() {
		for range 20 {
			assert.NoError(t, src.Restore(ctx, snap))
		}
	})
	wg.Wait()
	src.background.Wait()
	require.NoError(t, src.Check(ctx))
	require.NoError(t, src.Restore(ctx, snap))
	assert.Equal(t, want, rawStore(t, src))
}

// A snapshot taken while writers run sees each of their transactions whole or not at all,
// and reads the same however often it is read.
func TestSnapshotWhileWriting(t *testing.T) {
	if bothStores(t, TestSnapshotWhileWriting) {
		return
	}
	ctx := context.Background()
	db := openTestDB(t, nil)
	tbl := createTable(t, db, "Pairs")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				pk := fmt.Sprintf("w%d-%d", w, i)
				_, err := tbl.SubmitTransaction(ctx, []Action{
					{Kind: ActionInsert, Entity: Entity{PartitionKey: pk, RowKey: "a"}},
					{Kind: ActionInsert, Entity: Entity{PartitionKey: pk, RowKey: "b"}},
				})
				assert.NoError(t, err)
			}
		})
	}
	read := func(s *Snapshot) []string {
		var out []string
		for st, err := range s.Tables(ctx) {
			require.NoError(t, err)
			for e, err := range s.Entities(ctx, st) {
				require.NoError(t, err)
				out = append(out, e.PartitionKey+"/"+e.RowKey)
			}
		}
		return out
	}
	for range 5 {
		snap, err := db.Snapshot(ctx)
		require.NoError(t, err)
		first := read(snap)
		require.Equal(t, 0, len(first)%2, "pairs are whole")
		for i := 0; i < len(first); i += 2 {
			assert.Equal(t, first[i][:len(first[i])-1]+"b", first[i+1])
		}
		assert.Equal(t, first, read(snap), "a snapshot reads the same every time")
		require.NoError(t, snap.Close())
	}
	close(stop)
	wg.Wait()
}

// A snapshot is read from many goroutines at once, on both stores.
func TestSnapshotConcurrentReads(t *testing.T) {
	if bothStores(t, TestSnapshotConcurrentReads) {
		return
	}
	ctx := context.Background()
	db := openTestDB(t, nil)
	seedForSnapshot(t, db)
	snap, err := db.Snapshot(ctx)
	require.NoError(t, err)
	defer snap.Close()
	count := func() int {
		n := 0
		for st, err := range snap.Tables(ctx) {
			if !assert.NoError(t, err) {
				return n
			}
			for _, err := range snap.Entities(ctx, st) {
				assert.NoError(t, err)
				n++
			}
			_, err := snap.AccessPolicies(ctx, st)
			assert.NoError(t, err)
		}
		return n
	}
	want := count()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5 {
				assert.Equal(t, want, count())
			}
		})
	}
	wg.Wait()
}

// An import into a copy of a snapshot, or into a restored database, publishes tables the
// snapshot never had: their statistics count what the import wrote, not what the snapshot
// held under that ID (nothing).
func TestSnapshotCopyImports(t *testing.T) {
	ctx := context.Background()
	src, err := OpenInMemory(nil)
	require.NoError(t, err)
	t.Cleanup(func() { closeChecked(t, src) })
	seedForSnapshot(t, src)
	var file bytes.Buffer
	require.NoError(t, src.Export(ctx, &file, nil))
	snap, err := src.Snapshot(ctx)
	require.NoError(t, err)

	c, err := snap.Open(nil)
	require.NoError(t, err)
	t.Cleanup(func() { closeChecked(t, c) })
	_, err = c.Import(ctx, bytes.NewReader(file.Bytes()), &ImportOptions{Namespaces: map[string]string{"": "copied", "alice": "copied2"}})
	require.NoError(t, err)
	n, err := Count(ctx, c.Namespace("copied").Table("Movies"), "")
	require.NoError(t, err)
	assert.EqualValues(t, 5, n)
	require.NoError(t, c.Check(ctx), "the imported table's statistics")

	require.NoError(t, c.Restore(ctx, snap))
	_, err = c.Import(ctx, bytes.NewReader(file.Bytes()), &ImportOptions{Namespaces: map[string]string{"": "again", "alice": "again2"}})
	require.NoError(t, err)
	n, err = Count(ctx, c.Namespace("again2").Table("books"), "")
	require.NoError(t, err)
	assert.EqualValues(t, 5, n)
	require.NoError(t, c.Check(ctx))
}
