package tabula

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/storage"
)

func tableNames(t *testing.T, db *DB) []string {
	t.Helper()
	var names []string
	for info, err := range db.Tables(context.Background(), "") {
		require.NoError(t, err)
		names = append(names, info.Name)
	}
	return names
}

func TestTableNames(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, nil)
	cases := []struct {
		name string
		code string
	}{
		{"abc", ""},
		{"A23", ""},
		{"a" + strings.Repeat("1", 62), ""},
		{"ab", "OutOfRangeInput"},
		{"a" + strings.Repeat("1", 63), "OutOfRangeInput"},
		{"", "OutOfRangeInput"},
		{"1abc", "InvalidResourceName"},
		{"ab-c", "InvalidResourceName"},
		{"ab_c", "InvalidResourceName"},
		{"Täble", "InvalidResourceName"},
		{"tables", "InvalidResourceName"},
		{"TABLES", "InvalidResourceName"},
		{"tables1", ""},
	}
	for _, c := range cases {
		_, err := db.CreateTable(ctx, c.name)
		if c.code == "" {
			assert.NoError(t, err, c.name)
			continue
		}
		var te *Error
		if assert.ErrorAs(t, err, &te, c.name) {
			assert.Equal(t, c.code, te.Code, c.name)
			assert.Equal(t, 400, te.StatusCode, c.name)
		}
	}
	var te *Error
	_, err := db.CreateTable(ctx, "1abc")
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "The specifed resource name contains invalid characters.", te.Message, "the service's spelling")
}

func TestTableCatalog(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, nil)
	for _, name := range []string{"Movies", "actors", "Zebra", "Beta"} {
		createTable(t, db, name)
	}
	_, err := db.CreateTable(ctx, "MOVIES")
	assert.ErrorIs(t, err, ErrTableAlreadyExists, "names are case-insensitive")
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 409, te.StatusCode)

	assert.Equal(t, []string{"actors", "Beta", "Movies", "Zebra"}, tableNames(t, db), "name order, case-preserving")

	// Any case reaches the same table.
	_, err = db.Table("movies").Insert(ctx, Entity{PartitionKey: "Action", RowKey: "Heat"})
	require.NoError(t, err)
	_, err = db.Table("MoViEs").Get(ctx, "Action", "Heat")
	require.NoError(t, err)

	require.NoError(t, db.DeleteTable(ctx, "MOVIES"))
	err = db.DeleteTable(ctx, "Movies")
	assert.ErrorIs(t, err, ErrResourceNotFound, "deleting a missing table is ResourceNotFound, not TableNotFound")
	_, err = db.Table("Movies").Get(ctx, "Action", "Heat")
	assert.ErrorIs(t, err, ErrTableNotFound)

	// A re-created table starts empty.
	tbl := createTable(t, db, "Movies")
	_, err = tbl.Get(ctx, "Action", "Heat")
	assert.ErrorIs(t, err, ErrResourceNotFound)
	assert.Empty(t, dumpTable(t, tbl))
}

func TestListTablesPages(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, nil)
	for i := range 7 {
		createTable(t, db, fmt.Sprintf("T%02d", i))
	}
	page, err := db.ListTables(ctx, TableQuery{Top: 3})
	require.NoError(t, err)
	assert.Len(t, page.Tables, 3)
	assert.Equal(t, "T03", page.NextTableName)
	page, err = db.ListTables(ctx, TableQuery{Top: 3, NextTableName: page.NextTableName})
	require.NoError(t, err)
	assert.Equal(t, "T03", page.Tables[0].Name)
	page, err = db.ListTables(ctx, TableQuery{Top: 3, NextTableName: "T06"})
	require.NoError(t, err)
	assert.Len(t, page.Tables, 1)
	assert.Empty(t, page.NextTableName)
	_, err = db.ListTables(ctx, TableQuery{Top: 1001})
	assert.ErrorIs(t, err, ErrInvalidInput)

	// A filtered listing's token names the next table the filter selects; after the last
	// one there is none, though other tables follow.
	filter := "TableName ge 'T02' and TableName lt 'T05'"
	page, err = db.ListTables(ctx, TableQuery{Filter: "TableName eq 'T01' or TableName eq 'T04'", Top: 1})
	require.NoError(t, err)
	assert.Equal(t, "T04", page.NextTableName)
	page, err = db.ListTables(ctx, TableQuery{Filter: filter, Top: 2, NextTableName: "T03"})
	require.NoError(t, err)
	assert.Len(t, page.Tables, 2)
	assert.Empty(t, page.NextTableName)
}

func TestOperationsOnMissingTable(t *testing.T) {
	ctx := context.Background()
	tbl := openTestDB(t, nil).Table("Nope")
	e := Entity{PartitionKey: "p", RowKey: "r"}
	_, err := tbl.Insert(ctx, e)
	assert.ErrorIs(t, err, ErrTableNotFound)
	_, err = tbl.Get(ctx, "p", "r")
	assert.ErrorIs(t, err, ErrTableNotFound)
	_, err = tbl.Update(ctx, e, Merge, AnyETag)
	assert.ErrorIs(t, err, ErrTableNotFound)
	_, err = tbl.Upsert(ctx, e, Replace)
	assert.ErrorIs(t, err, ErrTableNotFound)
	err = tbl.Delete(ctx, "p", "r", AnyETag)
	assert.ErrorIs(t, err, ErrTableNotFound)
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 404, te.StatusCode)
}

func TestEntityOperations(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	tbl := createTable(t, openTestDB(t, clock), "Movies")

	inserted, err := tbl.Insert(ctx, Entity{PartitionKey: "Action", RowKey: "Cop Out",
		Timestamp: time.Unix(1, 0), ETag: "ignored",
		Properties: Properties{"Rating": Double(4.5), "Year": Int32(2010), "Gone": nil}})
	require.NoError(t, err)
	assert.Equal(t, Properties{"Rating": Double(4.5), "Year": Int32(2010)}, inserted.Properties)
	assert.True(t, inserted.Timestamp.After(clock.Now().Add(-time.Second)), "the engine stamps the Timestamp")
	assert.Equal(t, etagOf(ticksOf(inserted.Timestamp)), inserted.ETag)

	_, err = tbl.Insert(ctx, Entity{PartitionKey: "Action", RowKey: "Cop Out"})
	assert.ErrorIs(t, err, ErrEntityAlreadyExists)

	got, err := tbl.Get(ctx, "Action", "Cop Out")
	require.NoError(t, err)
	assert.Equal(t, inserted, got)

	sel, err := tbl.Get(ctx, "Action", "Cop Out", "Year", "Missing")
	require.NoError(t, err)
	assert.Equal(t, Properties{"Year": Int32(2010)}, sel.Properties)
	assert.Equal(t, inserted.ETag, sel.ETag)

	_, err = tbl.Get(ctx, "Action", "Heat")
	assert.ErrorIs(t, err, ErrResourceNotFound)

	// Merge keeps what it does not mention; a nil value does not delete.
	etag, err := tbl.Update(ctx, Entity{PartitionKey: "Action", RowKey: "Cop Out",
		Properties: Properties{"Rating": Double(3.5), "Year": nil, "Seen": Boolean(true)}}, Merge, got.ETag)
	require.NoError(t, err)
	got, err = tbl.Get(ctx, "Action", "Cop Out")
	require.NoError(t, err)
	assert.Equal(t, Properties{"Rating": Double(3.5), "Year": Int32(2010), "Seen": Boolean(true)}, got.Properties)
	assert.Equal(t, etag, got.ETag)

	// Replace drops what it does not carry; a property may change type.
	etag, err = tbl.Update(ctx, Entity{PartitionKey: "Action", RowKey: "Cop Out",
		Properties: Properties{"Rating": Int64(4)}}, Replace, AnyETag)
	require.NoError(t, err)
	got, err = tbl.Get(ctx, "Action", "Cop Out")
	require.NoError(t, err)
	assert.Equal(t, Properties{"Rating": Int64(4)}, got.Properties)
	assert.Equal(t, etag, got.ETag)

	// Upserts create and overwrite.
	_, err = tbl.Upsert(ctx, Entity{PartitionKey: "Comedy", RowKey: "Up", Properties: Properties{"A": Int32(1)}}, Merge)
	require.NoError(t, err)
	_, err = tbl.Upsert(ctx, Entity{PartitionKey: "Comedy", RowKey: "Up", Properties: Properties{"B": Int32(2)}}, Merge)
	require.NoError(t, err)
	got, err = tbl.Get(ctx, "Comedy", "Up")
	require.NoError(t, err)
	assert.Equal(t, Properties{"A": Int32(1), "B": Int32(2)}, got.Properties)
	_, err = tbl.Upsert(ctx, Entity{PartitionKey: "Comedy", RowKey: "Up", Properties: Properties{"C": Int32(3)}}, Replace)
	require.NoError(t, err)
	got, err = tbl.Get(ctx, "Comedy", "Up")
	require.NoError(t, err)
	assert.Equal(t, Properties{"C": Int32(3)}, got.Properties)
	_, err = tbl.Upsert(ctx, Entity{PartitionKey: "Comedy", RowKey: "New"}, Replace)
	require.NoError(t, err)

	_, err = tbl.Upsert(ctx, Entity{PartitionKey: "Comedy", RowKey: "Up"}, UpdateMode(7))
	assert.ErrorIs(t, err, ErrInvalidInput, "a mode that is neither Replace nor Merge")

	require.NoError(t, tbl.Delete(ctx, "Comedy", "Up", got.ETag))
	assert.ErrorIs(t, tbl.Delete(ctx, "Comedy", "Up", AnyETag), ErrResourceNotFound)
	_, err = tbl.Get(ctx, "Comedy", "Up")
	assert.ErrorIs(t, err, ErrResourceNotFound)
}

func TestETagConditions(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	tbl := createTable(t, openTestDB(t, clock), "ETags")
	e := Entity{PartitionKey: "p", RowKey: "r", Properties: Properties{"N": Int32(0)}}

	// AnyETag (and the empty ETag) require an existing entity and never create one.
	for _, cond := range []ETag{AnyETag, ""} {
		_, err := tbl.Update(ctx, e, Replace, cond)
		assert.ErrorIs(t, err, ErrResourceNotFound)
		_, err = tbl.Update(ctx, e, Merge, cond)
		assert.ErrorIs(t, err, ErrResourceNotFound)
		assert.ErrorIs(t, tbl.Delete(ctx, "p", "r", cond), ErrResourceNotFound)
	}
	assert.Empty(t, dumpTable(t, tbl))

	// Every write changes the ETag, even when the clock does not move.
	first, err := tbl.Insert(ctx, e)
	require.NoError(t, err)
	seen := map[ETag]bool{first.ETag: true}
	current := first.ETag
	for i := range 5 {
		var etag ETag
		if i%2 == 0 {
			etag, err = tbl.Update(ctx, e, Merge, current)
		} else {
			etag, err = tbl.Upsert(ctx, e, Replace)
		}
		require.NoError(t, err)
		assert.False(t, seen[etag], "ETag %s repeated", etag)
		seen[etag] = true
		current = etag
	}
	got, err := tbl.Get(ctx, "p", "r")
	require.NoError(t, err)
	assert.Equal(t, current, got.ETag)
	assert.Equal(t, ticksOf(first.Timestamp)+5, ticksOf(got.Timestamp), "a stuck clock advances one tick per write")

	// A stale ETag fails and changes nothing; the current one and AnyETag succeed.
	before := rawTable(t, tbl)
	_, err = tbl.Update(ctx, e, Replace, first.ETag)
	assert.ErrorIs(t, err, ErrUpdateConditionNotSatisfied)
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 412, te.StatusCode)
	assert.ErrorIs(t, tbl.Delete(ctx, "p", "r", first.ETag), ErrUpdateConditionNotSatisfied)
	assert.Equal(t, before, rawTable(t, tbl))

	// An ETag written with ':' instead of "%3A" means the same version.
	colons := ETag(strings.ReplaceAll(string(current), "%3A", ":"))
	current, err = tbl.Update(ctx, e, Merge, colons)
	require.NoError(t, err)

	_, err = tbl.Update(ctx, e, Merge, "not an etag")
	assert.ErrorIs(t, err, ErrInvalidInput)
	// A well-formed entity tag that names no version of the entity is a failed condition.
	assert.ErrorIs(t, tbl.Delete(ctx, "p", "r", `W/"nonsense"`), ErrUpdateConditionNotSatisfied)

	require.NoError(t, tbl.Delete(ctx, "p", "r", current))
}

// The Timestamp clock is strictly increasing across the whole DB, and across a restart even
// when the clock goes back.
func TestTimestampsIncreaseAcrossRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := newFakeClock()
	db, err := Open(dir, &Options{Clock: clock.Now})
	require.NoError(t, err)
	tbl := createTable(t, db, "Clock")
	var last time.Time
	for i := range 3 {
		e, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)})
		require.NoError(t, err)
		assert.True(t, e.Timestamp.After(last))
		last = e.Timestamp
	}
	require.NoError(t, db.Close())

	clock.Advance(-time.Hour)
	db, err = openDir(t, dir, &Options{Clock: clock.Now})
	require.NoError(t, err)
	e, err := db.Table("Clock").Insert(ctx, Entity{PartitionKey: "p", RowKey: "after restart"})
	require.NoError(t, err)
	assert.True(t, e.Timestamp.After(last), "%v is not after %v", e.Timestamp, last)
}

// 16 goroutines each add 500 to a counter with read, then update If-Match, retrying when
// another got there first. Nothing is lost and nothing counted twice.
func TestConcurrentConditionalIncrements(t *testing.T) {
	if bothStores(t, TestConcurrentConditionalIncrements) {
		return
	}
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Counter")
	_, err := tbl.Insert(ctx, Entity{PartitionKey: "c", RowKey: "c", Properties: Properties{"N": Int64(0)}})
	require.NoError(t, err)

	const workers, each = 16, 500
	var wg sync.WaitGroup
	var conflicts sync.Map
	for w := range workers {
		wg.Go(func() {
			retries := 0
			for range each {
				for {
					e, err := tbl.Get(ctx, "c", "c")
					if !assert.NoError(t, err) {
						return
					}
					e.Properties["N"] = e.Properties["N"].(Int64) + 1
					_, err = tbl.Update(ctx, e, Replace, e.ETag)
					if err == nil {
						break
					}
					if !assert.ErrorIs(t, err, ErrUpdateConditionNotSatisfied) {
						return
					}
					retries++
				}
			}
			conflicts.Store(w, retries)
		})
	}
	wg.Wait()
	got, err := tbl.Get(ctx, "c", "c")
	require.NoError(t, err)
	assert.Equal(t, Int64(workers*each), got.Properties["N"])
}

func TestPersistenceOfEveryType(t *testing.T) {
	ctx := context.Background()
	props := Properties{
		"S":        String("héllo \U0001F600"),
		"Empty":    String(""),
		"B":        Binary{0, 1, 2, 255},
		"NoBytes":  Binary{},
		"T":        Boolean(true),
		"F":        Boolean(false),
		"D":        DateTime(time.Date(2021, 7, 13, 1, 2, 3, 123456700, time.UTC)),
		"DMin":     DateTime(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)),
		"DMax":     DateTime(time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)),
		"X":        Double(math.Pi),
		"NaN":      Double(math.NaN()),
		"Inf":      Double(math.Inf(-1)),
		"G":        Guid{0xc9, 0xda, 0x64, 0x55, 0x21, 0x3d, 0x42, 0xc9, 0x9a, 0x79, 0x3e, 0x91, 0x49, 0xa5, 0x78, 0x33},
		"I":        Int32(math.MinInt32),
		"IMax":     Int32(math.MaxInt32),
		"L":        Int64(math.MinInt64),
		"LMax":     Int64(math.MaxInt64),
		"Ünïcödé_": String("名前"),
	}
	keys := [][2]string{{"", ""}, {"\U0001F600", "\uff5e"}, {"a b", "~!@$%^&*()"}, {strings.Repeat("k", 1024), "r"}}
	bothStores(t, func(t *testing.T) {
		db := openStore(t, nil)
		tbl := createTable(t, db, "Types")
		written := map[[2]string]Entity{}
		for _, k := range keys {
			e, err := tbl.Insert(ctx, Entity{PartitionKey: k[0], RowKey: k[1], Properties: props})
			require.NoError(t, err)
			written[k] = e
		}
		db = reopenStore(t, db)
		tbl = db.Table("types")
		for _, k := range keys {
			got, err := tbl.Get(ctx, k[0], k[1])
			require.NoError(t, err)
			want := written[k]
			assert.Equal(t, want.ETag, got.ETag)
			assert.True(t, want.Timestamp.Equal(got.Timestamp))
			assertSameProperties(t, props, got.Properties)
		}
	})
}

// assertSameProperties compares property sets exactly, treating NaN as equal to NaN and
// DateTimes as instants.
func assertSameProperties(t *testing.T, want, got Properties) {
	t.Helper()
	require.Len(t, got, len(want))
	for name, w := range want {
		g := got[name]
		switch w := w.(type) {
		case Double:
			if math.IsNaN(float64(w)) {
				assert.True(t, math.IsNaN(float64(g.(Double))), name)
				continue
			}
		case DateTime:
			assert.True(t, w.Time().Equal(g.(DateTime).Time()), "%s: %v vs %v", name, w, g)
			continue
		}
		assert.Equal(t, w, g, name)
	}
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tbl := createTable(t, openTestDB(t, nil), "Ctx")
	_, err := tbl.Insert(ctx, Entity{})
	assert.True(t, errors.Is(err, context.Canceled))
	assert.Empty(t, dumpTable(t, tbl))
}

// A deleted table's entities are removed in the background; a drop cut short by Close is
// finished by the next Open.
func TestDeletedTableDataIsDropped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	tbl := createTable(t, db, "Doomed")
	for i := range 3000 {
		_, err := tbl.Insert(ctx, Entity{PartitionKey: fmt.Sprint(i % 7), RowKey: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	var id uint64
	require.NoError(t, db.view(ctx, func(tx *storage.Txn) error {
		rec, err := lookupTable(tx, "Doomed")
		id = rec.ID
		return err
	}))
	// Stop the background drop before it starts, as a crash would, and leave its marker.
	db.stopBackground()
	require.NoError(t, db.DeleteTable(ctx, "Doomed"))
	require.NoError(t, db.Close())
	lower, upper := tableBounds(id)
	assert.Equal(t, 3000, countKeys(t, dir, lower, upper), "the drop was cut short")

	db, err = Open(dir, nil)
	require.NoError(t, err)
	db.background.Wait()
	require.NoError(t, db.Close())
	assert.Zero(t, countKeys(t, dir, lower, upper))
	assert.Zero(t, countKeys(t, dir, dropKey(id), storage.SuccessorOf(dropKey(id))), "the marker goes with the data")
}

func countKeys(t *testing.T, dir string, lower, upper []byte) int {
	t.Helper()
	store, err := storage.Open(storage.Options{Dir: dir})
	require.NoError(t, err)
	defer store.Close()
	n := 0
	require.NoError(t, store.View(func(tx *storage.Txn) error {
		it := tx.Scan(lower, upper)
		defer it.Close()
		for it.Next() {
			n++
		}
		return nil
	}))
	return n
}

// Operations racing DeleteTable and CreateTable on the same name either land in a table that
// exists or fail with TableNotFound; once the drops finish, no entity of a deleted table is
// left behind in storage (a write that slipped in after its table's data was dropped would
// stay there forever, unreachable).
func TestDeleteTableRacesOperations(t *testing.T) {
	if bothStores(t, TestDeleteTableRacesOperations) {
		return
	}
	ctx := context.Background()
	db := openTestDB(t, nil)
	createTable(t, db, "Churn")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			tbl := db.Table("churn")
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch i % 3 {
				case 0:
					_, err = tbl.Insert(ctx, Entity{PartitionKey: fmt.Sprint(w), RowKey: fmt.Sprint(i)})
				case 1:
					_, err = tbl.SubmitTransaction(ctx, []Action{UpsertAction(Entity{PartitionKey: "t", RowKey: fmt.Sprint(w, i)}, Merge)})
				default:
					_, err = tbl.Query(ctx, Query{Top: 5})
				}
				if err != nil && !errors.Is(err, ErrTableNotFound) {
					assert.NoError(t, err)
					return
				}
			}
		})
	}
	for range 30 {
		require.NoError(t, db.DeleteTable(ctx, "Churn"))
		_, err := db.CreateTable(ctx, "CHURN")
		require.NoError(t, err)
	}
	close(stop)
	wg.Wait()
	db.background.Wait()

	var live uint64
	require.NoError(t, db.view(ctx, func(tx *storage.Txn) error {
		rec, err := lookupTable(tx, "churn")
		live = rec.ID
		return err
	}))
	lower, _ := tableBounds(0)
	_, upper := tableBounds(live - 1)
	require.NoError(t, db.view(ctx, func(tx *storage.Txn) error {
		it := tx.Scan(lower, upper)
		defer it.Close()
		for it.Next() {
			t.Errorf("entity key %x of a deleted table survived", it.Key())
		}
		return nil
	}))
}
