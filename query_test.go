package tabula

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/storage"
)

func TestPlanner(t *testing.T) {
	tbl := openTestDB(t, nil).Table("Movies")
	cases := []struct {
		filter         string
		kind, service  PlanKind
		ranges         string // the ranges as Plan prints them, when checked
		seedExpression string
	}{
		// The five example queries of seed 003, classified as the seed says.
		{filter: "PartitionKey eq 'SciFi' and RowKey eq 'Star Wars'", kind: PlanPoint, service: PlanPoint,
			ranges: "PartitionKey = 'SciFi', RowKey = 'Star Wars'"},
		{filter: "PartitionKey eq 'SciFi' and RowKey ge 'Sphere' and RowKey le 'Star Wars'", kind: PlanRowRange, service: PlanRowRange,
			ranges: "PartitionKey = 'SciFi', RowKey in ['Sphere', 'Star Wars']"},
		{filter: "PartitionKey ge 'Action' and PartitionKey le 'Thriller'", kind: PlanPartitionRange, service: PlanPartitionRange,
			ranges: "PartitionKey in ['Action', 'Thriller']"},
		{filter: "PartitionKey eq 'Action' or PartitionKey eq 'Thriller'", kind: PlanMultiRange, service: PlanFullScan,
			ranges: "PartitionKey = 'Action' ∪ PartitionKey = 'Thriller'"},
		{filter: "RowKey ge 'Cars' and RowKey le 'Star Wars'", kind: PlanFullScan, service: PlanFullScan},
		// The prefix trick, and the delimiter + 1 pattern.
		{filter: "PartitionKey eq 'Action' and RowKey ge 'Sh' and RowKey lt 'Si'", kind: PlanRowRange, service: PlanRowRange,
			ranges: "PartitionKey = 'Action', RowKey in ['Sh', 'Si')"},
		{filter: "PartitionKey eq 'Brady' and RowKey ge 'Sports;' and RowKey lt 'Sports<'", kind: PlanRowRange, service: PlanRowRange,
			ranges: "PartitionKey = 'Brady', RowKey in ['Sports;', 'Sports<')"},
		// A whole partition is a RowRange without bounds.
		{filter: "PartitionKey eq 'Action' and Favorite eq true", kind: PlanRowRange, service: PlanRowRange,
			ranges: "PartitionKey = 'Action'"},
		// The seed's full-scan examples.
		{filter: "", kind: PlanFullScan, service: PlanFullScan},
		{filter: "PartitionKey ne 'Action'", kind: PlanMultiRange, service: PlanFullScan},
		{filter: "Favorite eq true", kind: PlanFullScan, service: PlanFullScan},
		// Literals on the left; contradictions; a mismatched type on a key matches everything.
		{filter: "'Action' eq PartitionKey and 'x' lt RowKey", kind: PlanRowRange, service: PlanRowRange},
		{filter: "PartitionKey eq 'a' and PartitionKey eq 'b'", kind: PlanEmpty, service: PlanRowRange},
		{filter: "PartitionKey lt 5", kind: PlanFullScan, service: PlanFullScan},
		// The empty key is a key like any other, though nothing sorts below it.
		{filter: "PartitionKey eq '' and RowKey eq ''", kind: PlanPoint, service: PlanPoint, ranges: "PartitionKey = '', RowKey = ''"},
		{filter: "PartitionKey le '' and RowKey gt 'a'", kind: PlanRowRange, service: PlanPartitionRange, ranges: "PartitionKey = '', RowKey in ('a', +∞)"},
	}
	for _, c := range cases {
		plan, err := tbl.Explain(Query{Filter: c.filter})
		require.NoError(t, err, c.filter)
		assert.Equal(t, c.kind, plan.Kind, "%q: %s", c.filter, plan)
		assert.Equal(t, c.service, plan.ServiceKind, "%q: %s", c.filter, plan)
		if c.ranges != "" {
			var parts []string
			for _, r := range plan.Ranges {
				parts = append(parts, rangeString(r))
			}
			assert.Equal(t, c.ranges, strings.Join(parts, " ∪ "), c.filter)
		}
	}
}

func TestExplainAfterRun(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Movies")
	for _, rk := range []string{"Alien", "Shrek", "Shining", "Sicario", "Heat"} {
		_, err := tbl.Insert(ctx, Entity{PartitionKey: "Action", RowKey: rk, Properties: Properties{"Len": Int32(len(rk))}})
		require.NoError(t, err)
	}
	page, err := tbl.Query(ctx, Query{Filter: "PartitionKey eq 'Action' and RowKey ge 'Sh' and RowKey lt 'Si' and Len gt 5"})
	require.NoError(t, err)
	require.Len(t, page.Entities, 1)
	assert.Equal(t, "Shining", page.Entities[0].RowKey)
	assert.Equal(t, 2, page.Plan.Scanned, "only the two rows in the range are examined")
	assert.Equal(t, 1, page.Plan.Returned)
	assert.Equal(t, "RowRange PartitionKey = 'Action', RowKey in ['Sh', 'Si') (service: RowRange); scanned 2, returned 1", page.Plan.String())
}

func TestContinuationTokens(t *testing.T) {
	// The form itself is internal/wire's (TestTokens there).
	for _, s := range []string{"", "a", "\U0001F600 key", strings.Repeat("k", MaxKeyLength)} {
		got, err := decodeToken("NextRowKey", wire.EncodeToken(s))
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Tokens")
	for _, bad := range []Continuation{
		{NextPartitionKey: "nonsense"},
		{NextPartitionKey: "1!5!MQ--"},
		{NextPartitionKey: "1!4!M%--"},
		{NextPartitionKey: "2!4!MQ--"},
		{NextPartitionKey: wire.EncodeToken("a/b")},
		{NextRowKey: wire.EncodeToken("1")},
		{NextPartitionKey: wire.EncodeToken("p"), NextRowKey: "1!"},
	} {
		_, err := tbl.Query(ctx, Query{Continuation: bad})
		assert.ErrorIs(t, err, ErrInvalidInput, "%+v", bad)
	}
}

func TestTopIsAPerPageCap(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Top")
	for i := range 3 {
		_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	page, err := tbl.Query(ctx, Query{Top: 1})
	require.NoError(t, err)
	require.Len(t, page.Entities, 1)
	assert.Equal(t, "0", page.Entities[0].RowKey)
	// The token names the next entity (inclusive), as the service's does.
	assert.Equal(t, Continuation{NextPartitionKey: wire.EncodeToken("p"), NextRowKey: wire.EncodeToken("1")}, page.Continuation)

	page, err = tbl.Query(ctx, Query{Top: 2, Continuation: page.Continuation})
	require.NoError(t, err)
	assert.Len(t, page.Entities, 2)
	assert.True(t, page.Continuation.IsZero(), "nothing follows the last entity")

	for _, top := range []int{-1, 1001} {
		_, err = tbl.Query(ctx, Query{Top: top})
		assert.ErrorIs(t, err, ErrInvalidInput, "top %d", top)
	}
}

func TestQueryErrors(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, nil)
	tbl := createTable(t, db, "Errs")

	_, err := tbl.Query(ctx, Query{Filter: "aaa bbb ccc"})
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "InvalidInput", te.Code)
	assert.Equal(t, "Syntax error at position 7 in 'aaa bbb ccc'.", te.Message)

	_, err = tbl.Query(ctx, Query{Filter: "startswith(RowKey, 'a')"})
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "NotImplemented", te.Code)
	assert.Equal(t, 501, te.StatusCode)

	_, err = tbl.Query(ctx, Query{Select: []string{"Not-A-Name"}})
	assert.ErrorIs(t, err, ErrInvalidInput)

	_, err = db.Table("Missing").Query(ctx, Query{})
	assert.ErrorIs(t, err, ErrTableNotFound)
	for _, err := range db.Table("Missing").QueryAll(ctx, Query{}) {
		assert.ErrorIs(t, err, ErrTableNotFound)
	}
}

func TestSelect(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Sel")
	_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "r", Properties: Properties{"A": Int32(1), "B": Int32(2)}})
	require.NoError(t, err)
	for sel, want := range map[string]Properties{
		"A":         {"A": Int32(1)},
		"A,Missing": {"A": Int32(1)},
		"*":         {"A": Int32(1), "B": Int32(2)},
		"RowKey":    {},
	} {
		// A filter of keys alone is decoded straight into the entity, any other through the
		// record the filter reads: both select.
		for _, filter := range []string{"", "PartitionKey eq 'p' and RowKey eq 'r'", "B eq 2"} {
			page, err := tbl.Query(ctx, Query{Filter: filter, Select: strings.Split(sel, ",")})
			require.NoError(t, err)
			require.Len(t, page.Entities, 1)
			assert.Equal(t, want, page.Entities[0].Properties, "%s, %q", sel, filter)
			assert.Equal(t, "r", page.Entities[0].RowKey, "keys are always set")
		}
	}
}

// With a clock that moves one second per reading, a 5-second budget ends pages after a few
// entities, possibly with none matched; QueryAll still returns everything exactly once.
func TestBudgetEndsPagesEarly(t *testing.T) {
	ctx := context.Background()
	clock := &steppingClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), step: time.Second}
	db := openStore(t, &Options{Clock: clock.Now})
	tbl := createTable(t, db, "Budget")
	for i := range 40 {
		_, err := tbl.Insert(ctx, Entity{PartitionKey: fmt.Sprintf("p%02d", i), RowKey: "r", Properties: Properties{"N": Int32(i)}})
		require.NoError(t, err)
	}
	q := Query{Filter: "N ge 35"}
	var pages, empty, got int
	for {
		page, err := tbl.Query(ctx, q)
		require.NoError(t, err)
		pages++
		if len(page.Entities) == 0 && !page.Continuation.IsZero() {
			empty++
		}
		got += len(page.Entities)
		assert.LessOrEqual(t, page.Plan.Scanned, 5)
		if page.Continuation.IsZero() {
			break
		}
		q.Continuation = page.Continuation
	}
	assert.Equal(t, 5, got)
	assert.Greater(t, pages, 7)
	assert.Positive(t, empty, "empty pages with a token are legal and must be followed")

	n := 0
	for e, err := range tbl.QueryAll(ctx, Query{Filter: "N ge 35"}) {
		require.NoError(t, err)
		assert.Equal(t, Int32(35+n), e.Properties["N"])
		n++
	}
	assert.Equal(t, 5, n)
}

type steppingClock struct {
	now  time.Time
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.now = c.now.Add(c.step)
	return c.now
}

func TestForbidFullScans(t *testing.T) {
	ctx := context.Background()
	db := openStore(t, &Options{ForbidFullScans: true})
	tbl := createTable(t, db, "Strict")
	for _, f := range []string{"", "Rating gt 4", "PartitionKey eq 'a' or PartitionKey eq 'b'", "RowKey eq 'x'"} {
		_, err := tbl.Query(ctx, Query{Filter: f})
		assert.ErrorIs(t, err, ErrFullScanForbidden, f)
	}
	for _, f := range []string{"PartitionKey eq 'a'", "PartitionKey ge 'a' and PartitionKey lt 'b'"} {
		_, err := tbl.Query(ctx, Query{Filter: f})
		assert.NoError(t, err, f)
	}
}

func TestListTablesFilter(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, nil)
	for _, n := range []string{"Apples", "apricots", "Bananas", "Cherries"} {
		createTable(t, db, n)
	}
	var names []string
	for info, err := range db.Tables(ctx, "TableName ge 'B'") {
		require.NoError(t, err)
		names = append(names, info.Name)
	}
	// The filter compares names as created ('a' > 'B'); the listing is in case-insensitive order.
	assert.Equal(t, []string{"apricots", "Bananas", "Cherries"}, names)
	_, err := db.ListTables(ctx, TableQuery{Filter: "TableName eq"})
	assert.ErrorIs(t, err, ErrInvalidInput)
}

// A full scan over 200,000 entities streams: the heap during the scan stays within a
// generous bound of what it was before, far below what holding the table would take.
func TestFullScanMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 200,000 entities")
	}
	ctx := context.Background()
	db := openTestDB(t, nil)
	tbl := createTable(t, db, "Big")
	const n = 200_000
	payload := String(strings.Repeat("x", 200))
	var id uint64
	require.NoError(t, db.view(ctx, func(tx *storage.Txn) error {
		rec, err := lookupTable(tx, "Big")
		id = rec.ID
		return err
	}))
	// Load straight through storage in large transactions; the engine's write path is not
	// what this test is about. 1,000 entities of 250 bytes stay under the store's limit on a
	// transaction (internal/badgertuning.TxnLimit; storage.ErrTooLarge past it).
	for start := 0; start < n; start += 1000 {
		require.NoError(t, db.store.Update(func(tx *storage.Txn) error {
			for i := start; i < start+1000; i++ {
				props := Properties{"N": Int32(i), "Payload": payload}
				if err := tx.Set(entityKey(id, fmt.Sprintf("p%03d", i%300), fmt.Sprintf("r%06d", i)), testRecord(int64(i), props)); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	// Live heap: collect first, so garbage awaiting the collector does not count.
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	var peak uint64
	seen, matched := 0, 0
	for e, err := range tbl.QueryAll(ctx, Query{Filter: "N ge 0"}) {
		require.NoError(t, err)
		seen++
		if e.Properties["N"].(Int32)%1000 == 0 {
			matched++
		}
		if seen%10_000 == 0 {
			peak = max(peak, heap())
		}
	}
	assert.Equal(t, n, seen)
	assert.Equal(t, n/1000, matched)
	// The table is ~50 MB as entities; a page of 1,000 is ~0.5 MB. Allow GC slack.
	assert.Less(t, int64(peak)-int64(before), int64(32<<20), "heap grew from %d to %d", before, peak)
}

// A continuation token is a key position, so it resumes a query after the DB is closed and
// reopened.
func TestContinuationSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	tbl := createTable(t, db, "Restart")
	for i := range 10 {
		_, err := tbl.Insert(ctx, Entity{PartitionKey: fmt.Sprintf("p%d", i%3), RowKey: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	page, err := tbl.Query(ctx, Query{Top: 4})
	require.NoError(t, err)
	require.Len(t, page.Entities, 4)
	require.NoError(t, db.Close())

	db, err = openDir(t, dir, nil)
	require.NoError(t, err)
	var rest []string
	for e, err := range db.Table("Restart").QueryAll(ctx, Query{Continuation: page.Continuation}) {
		require.NoError(t, err)
		rest = append(rest, e.PartitionKey+"/"+e.RowKey)
	}
	assert.Equal(t, []string{"p1/1", "p1/4", "p1/7", "p2/2", "p2/5", "p2/8"}, rest)
}

// Compiled filters are shared by queries with the same text, and the cache stays bounded.
func TestCompiledFilterCache(t *testing.T) {
	db := openTestDB(t, nil)
	a, err := db.compile("PartitionKey eq 'a'")
	require.NoError(t, err)
	b, err := db.compile("PartitionKey eq 'a'")
	require.NoError(t, err)
	assert.Same(t, a, b)
	db.filterCacheBytes = 64 << 10
	n := int(db.filterCacheBytes/filterCost("N eq 1000")) + 10
	for i := range n {
		_, err := db.compile(fmt.Sprintf("N eq %d", 1000+i))
		require.NoError(t, err)
		require.LessOrEqual(t, db.filterBytes, db.filterCacheBytes)
	}
	_, err = db.compile("N eq")
	assert.ErrorIs(t, err, ErrInvalidInput, "errors are not cached, and still reported")
}
