// Package conformance is the behaviour every backend of Tabula's Go API must show, in the
// manner of go-cloud's drivertest: one set of tests, run against the embedded engine (on
// disk and in memory) and against package remote pointed at `tabula serve`, Azurite or an
// Azure Storage account. A backend that passes behaves, through tabula.ServiceAPI and
// tabula.TableAPI, as the Azure Table service does, so code tested on one runs on the others.
//
// Run it from a test with a function that gives a backend:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(t *testing.T) tabula.ServiceAPI {
//			db, err := tabula.OpenInMemory(nil)
//			require.NoError(t, err)
//			t.Cleanup(func() { db.Close() })
//			return tabula.Embedded(db)
//		})
//	}
//
// RunFlavor runs the same tests against a backend of another flavour (tabula.Flavor), such as
// a DB opened with Options.Flavor = tabula.FlavorCosmos or `tabula serve --flavor cosmos`;
// where the Cosmos DB for Table API answers differently, the tests assert its answer.
//
// The tests share nothing but the backend: each makes its own tables, named with a random
// suffix, and deletes them when it ends, so the suite can run against an account that holds
// other tables.
package conformance

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// NewBackend returns the backend under test for one test. It may return the same backend
// every time; the tests only touch tables they created.
type NewBackend func(t *testing.T) tabula.ServiceAPI

// Run runs every conformance test against the backend newBackend gives, which must follow
// the Azure Table service's rules (tabula.FlavorTable).
func Run(t *testing.T, newBackend NewBackend) {
	RunFlavor(t, tabula.FlavorTable, newBackend)
}

// RunFlavor runs every conformance test against a backend that enforces the rules of
// flavor: the Table service's, or the Cosmos DB for Table API's (a DB opened with
// tabula.Options.Flavor, or `tabula serve --flavor`). The tests are the same; where the
// flavours differ, each asserts its flavour's answer.
func RunFlavor(t *testing.T, flavor tabula.Flavor, newBackend NewBackend) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.test(t, flavored{newBackend(t), flavor})
		})
	}
}

// flavored is a backend with the flavour whose rules it enforces; flavorOf reads it.
type flavored struct {
	tabula.ServiceAPI
	flavor tabula.Flavor
}

func flavorOf(svc tabula.ServiceAPI) tabula.Flavor {
	if f, ok := svc.(flavored); ok {
		return f.flavor
	}
	return tabula.FlavorTable
}

var cases = []struct {
	name string
	test func(t *testing.T, svc tabula.ServiceAPI)
}{
	{"TableLifecycle", testTableLifecycle},
	{"TableNames", testTableNames},
	{"TableListing", testTableListing},
	{"MissingTable", testMissingTable},
	{"PropertyTypes", testPropertyTypes},
	{"InsertGet", testInsertGet},
	{"GetSelect", testGetSelect},
	{"Update", testUpdate},
	{"Upsert", testUpsert},
	{"Delete", testDelete},
	{"EntityRules", testEntityRules},
	{"Transaction", testTransaction},
	{"TransactionFailure", testTransactionFailure},
	{"TransactionRules", testTransactionRules},
	{"Query", testQuery},
	{"QueryPaging", testQueryPaging},
	{"QueryErrors", testQueryErrors},
	{"Canceled", testCanceled},
	{"AccessPolicies", testAccessPolicies},
	// Tabula's helpers beyond the service, which work through TableAPI alone.
	{"FilterBuilder", testFilterBuilder},
	{"CountExists", testCountExists},
	{"DeletePartition", testDeletePartition},
	{"SubmitBulk", testSubmitBulk},
	// Go structs as entities (tabula.GetAs, InsertAs, QueryAs…), on top of the calls above.
	{"TypedRoundTrip", testTypedRoundTrip},
	{"TypedWrites", testTypedWrites},
	{"TypedRules", testTypedRules},
	{"TypedMisfit", testTypedMisfit},
	{"TypedPagingAndTransactions", testTypedPagingAndTransactions},
	// Where the Table service and Cosmos DB for Table differ (tabula.Flavor).
	{"FlavorRules", testFlavorRules},
}

// tableName returns a fresh table name: a prefix naming the test and a random suffix.
func tableName(t *testing.T, prefix string) string {
	var b [6]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return prefix + hex.EncodeToString(b[:])
}

// newTable creates a fresh table and deletes it when the test ends.
func newTable(t *testing.T, svc tabula.ServiceAPI) tabula.TableAPI {
	t.Helper()
	name := tableName(t, "conf")
	tbl, err := svc.CreateTable(context.Background(), name)
	require.NoError(t, err)
	t.Cleanup(func() { dropTable(t, svc, name) })
	return tbl
}

func dropTable(t *testing.T, svc tabula.ServiceAPI, name string) {
	err := svc.DeleteTable(context.Background(), name)
	if err != nil && !errors.Is(err, tabula.ErrResourceNotFound) {
		t.Errorf("deleting table %s: %v", name, err)
	}
}

// requireCode asserts that err is a *tabula.Error with the code and status of sentinel, and
// that errors.Is matches it.
func requireCode(t *testing.T, err error, sentinel *tabula.Error, msgAndArgs ...any) *tabula.Error {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.ErrorIs(t, err, sentinel, msgAndArgs...)
	var te *tabula.Error
	require.ErrorAs(t, err, &te, msgAndArgs...)
	assert.Equal(t, sentinel.StatusCode, te.StatusCode, msgAndArgs...)
	return te
}

// requireActionError asserts a *tabula.TransactionError at index with sentinel's code.
func requireActionError(t *testing.T, err error, index int, sentinel *tabula.Error, msgAndArgs ...any) {
	t.Helper()
	var txe *tabula.TransactionError
	require.ErrorAs(t, err, &txe, msgAndArgs...)
	assert.Equal(t, index, txe.Index, msgAndArgs...)
	requireCode(t, err, sentinel, msgAndArgs...)
}

func testTableLifecycle(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	name := tableName(t, "Life")
	tbl, err := svc.CreateTable(ctx, name)
	require.NoError(t, err)
	t.Cleanup(func() { dropTable(t, svc, name) })
	assert.Equal(t, name, tbl.Name())

	_, err = svc.CreateTable(ctx, name)
	requireCode(t, err, tabula.ErrTableAlreadyExists)
	_, err = svc.CreateTable(ctx, strings.ToUpper(name))
	requireCode(t, err, tabula.ErrTableAlreadyExists, "table names are case-insensitive")

	_, err = tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"})
	require.NoError(t, err)
	require.NoError(t, svc.DeleteTable(ctx, name))
	requireCode(t, svc.DeleteTable(ctx, name), tabula.ErrResourceNotFound)

	// A table created again under the name starts empty. The service keeps a deleted
	// table's name for a while (409 TableBeingDeleted, Delete Table); Tabula frees it at once.
	_, err = svc.CreateTable(ctx, name)
	if te := (*tabula.Error)(nil); errors.As(err, &te) && te.Code == "TableBeingDeleted" {
		return
	}
	require.NoError(t, err)
	_, err = svc.Table(name).Get(ctx, "p", "r")
	requireCode(t, err, tabula.ErrResourceNotFound)
}

func testTableNames(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		sentinel *tabula.Error
	}{
		{"1abc", tabula.ErrInvalidResourceName},
		{"ab-c", tabula.ErrInvalidResourceName},
		{"tables", tabula.ErrInvalidResourceName},
		{"ab", tabula.ErrOutOfRangeInput},
		{"a" + strings.Repeat("1", 63), tabula.ErrOutOfRangeInput},
	} {
		_, err := svc.CreateTable(ctx, c.name)
		requireCode(t, err, c.sentinel, c.name)
	}
}

func testTableListing(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	prefix := tableName(t, "list")
	var want []string
	for _, suffix := range []string{"c", "A", "b"} {
		name := prefix + suffix
		_, err := svc.CreateTable(ctx, name)
		require.NoError(t, err)
		t.Cleanup(func() { dropTable(t, svc, name) })
	}
	want = []string{prefix + "A", prefix + "b", prefix + "c"}
	filter := fmt.Sprintf("TableName ge '%s' and TableName lt '%s{'", prefix, prefix)

	var got []string
	for info, err := range svc.Tables(ctx, filter) {
		require.NoError(t, err)
		got = append(got, info.Name)
	}
	assert.Equal(t, want, got, "name order, case preserved")

	// One table a page, following NextTableName.
	got = nil
	q := tabula.TableQuery{Filter: filter, Top: 1}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10, "listing does not end")
		page, err := svc.ListTables(ctx, q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Tables), 1)
		for _, info := range page.Tables {
			got = append(got, info.Name)
		}
		if page.NextTableName == "" {
			break
		}
		q.NextTableName = page.NextTableName
	}
	assert.Equal(t, want, got)
}

func testMissingTable(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := svc.Table(tableName(t, "none"))
	_, err := tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"})
	requireCode(t, err, tabula.ErrTableNotFound)
	_, err = tbl.Get(ctx, "p", "r")
	requireCode(t, err, tabula.ErrTableNotFound)
	_, err = tbl.Upsert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"}, tabula.Replace)
	requireCode(t, err, tabula.ErrTableNotFound)
	requireCode(t, tbl.Delete(ctx, "p", "r", tabula.AnyETag), tabula.ErrTableNotFound)
	_, err = tbl.Query(ctx, tabula.Query{})
	requireCode(t, err, tabula.ErrTableNotFound)
	_, err = tbl.SubmitTransaction(ctx, []tabula.Action{tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "r"})})
	want := tabula.ErrTableNotFound
	if flavorOf(svc) == tabula.FlavorCosmos {
		want = tabula.ErrResourceNotFound // Cosmos DB's code for it, as recorded (flavor.go)
	}
	requireActionError(t, err, 0, want)
}

// everyType is an entity with one property of each type, at values that are easy to lose
// on the wire: an integral Double, non-finite Doubles, an Int64 beyond a float64's
// precision, a DateTime at 100 ns, text outside the BMP.
func everyType(pk, rk string) tabula.Entity {
	guid, _ := tabula.ParseGuid("0f8fad5b-d9cb-469f-a165-70867728950e")
	return tabula.Entity{PartitionKey: pk, RowKey: rk, Properties: tabula.Properties{
		"Str":      tabula.String("héllo 🌍 \"quoted\" <tag>"),
		"Empty":    tabula.String(""),
		"Bin":      tabula.Binary{0, 1, 2, 0xff},
		"True":     tabula.Boolean(true),
		"False":    tabula.Boolean(false),
		"When":     tabula.DateTime(time.Date(2024, 2, 29, 23, 59, 59, 123456700, time.UTC)),
		"Integral": tabula.Double(5),
		"Frac":     tabula.Double(-0.1),
		"Huge":     tabula.Double(1.5e300),
		"NaN":      tabula.Double(math.NaN()),
		"Inf":      tabula.Double(math.Inf(1)),
		"NegInf":   tabula.Double(math.Inf(-1)),
		"Id":       tabula.Guid(guid),
		"I32":      tabula.Int32(math.MinInt32),
		"I64":      tabula.Int64(math.MaxInt64),
		"Small64":  tabula.Int64(7),
	}}
}

// assertSameProperties compares properties by type and value (NaN equal to NaN, DateTimes
// by instant).
func assertSameProperties(t *testing.T, want, got tabula.Properties, msgAndArgs ...any) {
	t.Helper()
	wantNames, gotNames := names(want), names(got)
	if !assert.Equal(t, wantNames, gotNames, msgAndArgs...) {
		return
	}
	for name, w := range want {
		if w == nil {
			continue
		}
		g := got[name]
		require.IsType(t, w, g, append([]any{"property " + name}, msgAndArgs...)...)
		switch w := w.(type) {
		case tabula.Double:
			if math.IsNaN(float64(w)) {
				assert.True(t, math.IsNaN(float64(g.(tabula.Double))), name)
				continue
			}
		case tabula.DateTime:
			assert.True(t, w.Time().Equal(g.(tabula.DateTime).Time()), "%s: %v != %v", name, w, g)
			continue
		}
		assert.Equal(t, w, g, append([]any{"property " + name}, msgAndArgs...)...)
	}
}

func names(p tabula.Properties) []string {
	var out []string
	for name, v := range p {
		if v != nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func testPropertyTypes(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	in := everyType("p", "r")
	ins, err := tbl.Insert(ctx, in)
	require.NoError(t, err)
	assertSameProperties(t, in.Properties, ins.Properties, "Insert")

	got, err := tbl.Get(ctx, "p", "r")
	require.NoError(t, err)
	assertSameProperties(t, in.Properties, got.Properties, "Get")
	assert.Equal(t, ins.ETag, got.ETag)

	page, err := tbl.Query(ctx, tabula.Query{Filter: "PartitionKey eq 'p'"})
	require.NoError(t, err)
	require.Len(t, page.Entities, 1)
	assertSameProperties(t, in.Properties, page.Entities[0].Properties, "Query")
}

func testInsertGet(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	in := tabula.Entity{PartitionKey: "pk", RowKey: "rk 'quoted'", Properties: tabula.Properties{
		"Name": tabula.String("x"), "Dropped": nil,
	}}
	ins, err := tbl.Insert(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, "pk", ins.PartitionKey)
	assert.Equal(t, "rk 'quoted'", ins.RowKey)
	assert.NotEmpty(t, ins.ETag)
	assert.False(t, ins.Timestamp.IsZero(), "Insert returns the Timestamp it wrote")
	assert.Equal(t, tabula.Properties{"Name": tabula.String("x")}, ins.Properties, "a nil value is dropped")

	got, err := tbl.Get(ctx, "pk", "rk 'quoted'")
	require.NoError(t, err)
	assert.Equal(t, ins.ETag, got.ETag)
	assert.True(t, ins.Timestamp.Equal(got.Timestamp), "%v != %v", ins.Timestamp, got.Timestamp)
	assert.Equal(t, ins.Properties, got.Properties)

	_, err = tbl.Insert(ctx, in)
	requireCode(t, err, tabula.ErrEntityAlreadyExists)
	_, err = tbl.Get(ctx, "pk", "other")
	requireCode(t, err, tabula.ErrResourceNotFound)
}

func testGetSelect(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	_, err := tbl.Insert(ctx, everyType("p", "r"))
	require.NoError(t, err)
	got, err := tbl.Get(ctx, "p", "r", "Str", "I64", "Absent")
	require.NoError(t, err)
	assert.Equal(t, []string{"I64", "Str"}, names(got.Properties), "only the selected properties that exist")
	assert.Equal(t, "p", got.PartitionKey)
	assert.Equal(t, "r", got.RowKey)
	assert.NotEmpty(t, got.ETag)
	assert.False(t, got.Timestamp.IsZero())
}

func testUpdate(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	ins, err := tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r", Properties: tabula.Properties{
		"A": tabula.Int32(1), "B": tabula.Int32(2)}})
	require.NoError(t, err)

	merged, err := tbl.Update(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r", Properties: tabula.Properties{
		"B": tabula.Int32(20), "C": tabula.Int32(30)}}, tabula.Merge, ins.ETag)
	require.NoError(t, err)
	assert.NotEqual(t, ins.ETag, merged)
	got, err := tbl.Get(ctx, "p", "r")
	require.NoError(t, err)
	assert.Equal(t, merged, got.ETag)
	assert.Equal(t, tabula.Properties{"A": tabula.Int32(1), "B": tabula.Int32(20), "C": tabula.Int32(30)}, got.Properties)

	_, err = tbl.Update(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"}, tabula.Replace, ins.ETag)
	requireCode(t, err, tabula.ErrUpdateConditionNotSatisfied, "a stale ETag")

	replaced, err := tbl.Update(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r", Properties: tabula.Properties{
		"D": tabula.String("d")}}, tabula.Replace, "")
	require.NoError(t, err, "an empty ETag matches any version")
	got, err = tbl.Get(ctx, "p", "r")
	require.NoError(t, err)
	assert.Equal(t, replaced, got.ETag)
	assert.Equal(t, tabula.Properties{"D": tabula.String("d")}, got.Properties, "Replace drops what it does not carry")

	_, err = tbl.Update(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"}, tabula.Replace, tabula.AnyETag)
	require.NoError(t, err)
	_, err = tbl.Update(ctx, tabula.Entity{PartitionKey: "p", RowKey: "missing"}, tabula.Merge, tabula.AnyETag)
	requireCode(t, err, tabula.ErrResourceNotFound)
	_, err = tbl.Update(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"}, tabula.Merge, "not an etag")
	requireCode(t, err, tabula.ErrInvalidInput, "a malformed ETag")
	requireCode(t, tbl.Delete(ctx, "p", "r", "not an etag"), tabula.ErrInvalidInput, "a malformed ETag")
	_, err = tbl.Update(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"}, tabula.UpdateMode(7), tabula.AnyETag)
	requireCode(t, err, tabula.ErrInvalidInput, "an update mode that is neither Replace nor Merge")
}

func testUpsert(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	first, err := tbl.Upsert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r", Properties: tabula.Properties{
		"A": tabula.Int32(1)}}, tabula.Merge)
	require.NoError(t, err, "an upsert inserts a missing entity")
	second, err := tbl.Upsert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r", Properties: tabula.Properties{
		"B": tabula.Int32(2)}}, tabula.Merge)
	require.NoError(t, err)
	assert.NotEqual(t, first, second)
	got, err := tbl.Get(ctx, "p", "r")
	require.NoError(t, err)
	assert.Equal(t, tabula.Properties{"A": tabula.Int32(1), "B": tabula.Int32(2)}, got.Properties)

	_, err = tbl.Upsert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r", Properties: tabula.Properties{
		"C": tabula.Int32(3)}}, tabula.Replace)
	require.NoError(t, err)
	got, err = tbl.Get(ctx, "p", "r")
	require.NoError(t, err)
	assert.Equal(t, tabula.Properties{"C": tabula.Int32(3)}, got.Properties)
}

func testDelete(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	ins, err := tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"})
	require.NoError(t, err)
	_, err = tbl.Upsert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"}, tabula.Replace)
	require.NoError(t, err)
	requireCode(t, tbl.Delete(ctx, "p", "r", ins.ETag), tabula.ErrUpdateConditionNotSatisfied, "a stale ETag")
	require.NoError(t, tbl.Delete(ctx, "p", "r", ""))
	requireCode(t, tbl.Delete(ctx, "p", "r", tabula.AnyETag), tabula.ErrResourceNotFound)
	_, err = tbl.Get(ctx, "p", "r")
	requireCode(t, err, tabula.ErrResourceNotFound)
}

func testEntityRules(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	many := tabula.Properties{}
	for i := range tabula.MaxProperties + 1 {
		many[fmt.Sprintf("P%03d", i)] = tabula.Int32(int32(i))
	}
	for _, c := range []struct {
		what     string
		e        tabula.Entity
		sentinel *tabula.Error
	}{
		{"a key with a slash", tabula.Entity{PartitionKey: "a/b", RowKey: "r"}, tabula.ErrOutOfRangeInput},
		{"a key too long", tabula.Entity{PartitionKey: strings.Repeat("k", tabula.MaxKeyLength+1), RowKey: "r"}, tabula.ErrKeyValueTooLarge},
		{"a name starting with a digit", tabula.Entity{PartitionKey: "p", RowKey: "r",
			Properties: tabula.Properties{"1x": tabula.Int32(1)}}, tabula.ErrPropertyNameInvalid},
		{"a name too long", tabula.Entity{PartitionKey: "p", RowKey: "r",
			Properties: tabula.Properties{strings.Repeat("n", tabula.MaxPropertyNameLength+1): tabula.Int32(1)}}, tabula.ErrPropertyNameTooLong},
		{"a string too long", tabula.Entity{PartitionKey: "p", RowKey: "r",
			Properties: tabula.Properties{"S": tabula.String(strings.Repeat("s", tabula.MaxStringLength+1))}}, tabula.ErrPropertyValueTooLarge},
		{"a binary too long", tabula.Entity{PartitionKey: "p", RowKey: "r",
			Properties: tabula.Properties{"B": make(tabula.Binary, tabula.MaxBinaryLength+1)}}, tabula.ErrPropertyValueTooLarge},
		{"too many properties", tabula.Entity{PartitionKey: "p", RowKey: "r", Properties: many}, tabula.ErrTooManyProperties},
		{"a DateTime before 1601", tabula.Entity{PartitionKey: "p", RowKey: "r",
			Properties: tabula.Properties{"D": tabula.DateTime(time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC))}}, tabula.ErrOutOfRangeInput},
	} {
		_, err := tbl.Insert(ctx, c.e)
		requireCode(t, err, c.sentinel, c.what)
	}
	page, err := tbl.Query(ctx, tabula.Query{})
	require.NoError(t, err)
	assert.Empty(t, page.Entities, "a refused write stores nothing")
}

func testTransaction(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	old, err := tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "old", Properties: tabula.Properties{"A": tabula.Int32(1)}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "gone"})
	require.NoError(t, err)

	results, err := tbl.SubmitTransaction(ctx, []tabula.Action{
		tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "new", Properties: tabula.Properties{"D": tabula.Double(2)}}),
		tabula.UpdateAction(tabula.Entity{PartitionKey: "p", RowKey: "old", Properties: tabula.Properties{"B": tabula.Int32(2)}}, tabula.Merge, old.ETag),
		tabula.UpsertAction(tabula.Entity{PartitionKey: "p", RowKey: "up"}, tabula.Replace),
		tabula.DeleteAction("p", "gone", tabula.AnyETag),
	})
	require.NoError(t, err)
	require.Len(t, results, 4)
	for i, rk := range []string{"new", "old", "up"} {
		got, err := tbl.Get(ctx, "p", rk)
		require.NoError(t, err)
		assert.Equal(t, got.ETag, results[i].ETag, "action %d's ETag is the version stored", i)
		assert.True(t, got.Timestamp.Equal(results[i].Timestamp), "action %d: %v != %v", i, got.Timestamp, results[i].Timestamp)
	}
	assert.Equal(t, tabula.ActionResult{}, results[3], "a Delete writes no version")
	got, err := tbl.Get(ctx, "p", "old")
	require.NoError(t, err)
	assert.Equal(t, tabula.Properties{"A": tabula.Int32(1), "B": tabula.Int32(2)}, got.Properties)
	got, err = tbl.Get(ctx, "p", "new")
	require.NoError(t, err)
	assert.Equal(t, tabula.Properties{"D": tabula.Double(2)}, got.Properties, "an integral Double stays a Double")
	_, err = tbl.Get(ctx, "p", "gone")
	requireCode(t, err, tabula.ErrResourceNotFound)
}

func testTransactionFailure(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	ins, err := tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "b"})
	require.NoError(t, err)
	_, err = tbl.Upsert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "b"}, tabula.Merge)
	require.NoError(t, err)
	before := all(t, tbl, tabula.Query{})

	for _, c := range []struct {
		what     string
		actions  []tabula.Action
		index    int
		sentinel *tabula.Error
	}{
		{"an Insert of an existing entity", []tabula.Action{
			tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "a"}),
			tabula.UpsertAction(tabula.Entity{PartitionKey: "p", RowKey: "c"}, tabula.Merge),
			tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "b"}),
		}, 2, tabula.ErrEntityAlreadyExists},
		{"an Update of a missing entity", []tabula.Action{
			tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "a"}),
			tabula.UpdateAction(tabula.Entity{PartitionKey: "p", RowKey: "z"}, tabula.Replace, tabula.AnyETag),
		}, 1, tabula.ErrResourceNotFound},
		{"a stale ETag", []tabula.Action{
			tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "a"}),
			tabula.DeleteAction("p", "b", ins.ETag),
		}, 1, tabula.ErrUpdateConditionNotSatisfied},
		{"a malformed ETag", []tabula.Action{
			tabula.UpdateAction(tabula.Entity{PartitionKey: "p", RowKey: "b"}, tabula.Merge, "not an etag"),
		}, 0, tabula.ErrInvalidInput},
		{"a Delete of a missing entity", []tabula.Action{
			tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "a"}),
			tabula.DeleteAction("p", "z", ""),
		}, 1, tabula.ErrResourceNotFound},
		{"a broken entity rule", []tabula.Action{
			tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "a"}),
			tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "d", Properties: tabula.Properties{"1x": tabula.Int32(1)}}),
		}, 1, tabula.ErrPropertyNameInvalid},
	} {
		_, err := tbl.SubmitTransaction(ctx, c.actions)
		requireActionError(t, err, c.index, c.sentinel, c.what)
		assert.Equal(t, before, all(t, tbl, tabula.Query{}), "%s: nothing is written", c.what)
	}
}

func testTransactionRules(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	_, err := tbl.SubmitTransaction(ctx, nil)
	requireCode(t, err, tabula.ErrInvalidInput, "no actions")

	_, err = tbl.SubmitTransaction(ctx, []tabula.Action{
		tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "a"}),
		tabula.InsertAction(tabula.Entity{PartitionKey: "q", RowKey: "b"}),
	})
	requireActionError(t, err, 1, tabula.ErrCommandsInBatchActOnDifferentPartitions)

	_, err = tbl.SubmitTransaction(ctx, []tabula.Action{
		tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "a"}),
		tabula.DeleteAction("p", "b", ""),
		tabula.UpsertAction(tabula.Entity{PartitionKey: "p", RowKey: "a"}, tabula.Merge),
	})
	requireActionError(t, err, 2, tabula.ErrInvalidDuplicateRow)

	var tooMany []tabula.Action
	for i := range tabula.MaxTransactionActions + 1 {
		tooMany = append(tooMany, tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)}))
	}
	_, err = tbl.SubmitTransaction(ctx, tooMany)
	requireActionError(t, err, tabula.MaxTransactionActions-1, tabula.ErrInvalidInput)

	// A body over 4 MiB is refused as a whole (413), not at an action.
	var large []tabula.Action
	for i := range 70 {
		large = append(large, tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: fmt.Sprint(i),
			Properties: tabula.Properties{"B": make(tabula.Binary, tabula.MaxBinaryLength)}}))
	}
	_, err = tbl.SubmitTransaction(ctx, large)
	requireCode(t, err, tabula.ErrRequestBodyTooLarge)
	var txe *tabula.TransactionError
	assert.False(t, errors.As(err, &txe), "the request as a whole is refused, not an action")

	_, err = tbl.SubmitTransaction(ctx, []tabula.Action{{Entity: tabula.Entity{PartitionKey: "p", RowKey: "a"}}})
	requireActionError(t, err, 0, tabula.ErrInvalidInput, "an action without a kind")

	_, err = tbl.SubmitTransaction(ctx, []tabula.Action{
		tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "a"}),
		{Kind: tabula.ActionUpsert, Entity: tabula.Entity{PartitionKey: "p", RowKey: "b"}, IfMatch: tabula.AnyETag},
	})
	requireActionError(t, err, 1, tabula.ErrInvalidInput, "an Upsert with a condition")

	page, err := tbl.Query(ctx, tabula.Query{})
	require.NoError(t, err)
	assert.Empty(t, page.Entities, "a refused transaction writes nothing")
}

// all returns every entity a query matches, keys and properties only.
func all(t *testing.T, tbl tabula.TableAPI, q tabula.Query) []tabula.Entity {
	t.Helper()
	var out []tabula.Entity
	for e, err := range tbl.QueryAll(context.Background(), q) {
		require.NoError(t, err)
		e.Timestamp, e.ETag = time.Time{}, ""
		out = append(out, e)
	}
	return out
}

// inKeyOrder returns the entities of a query in key order, as the Table service returns them.
// Cosmos DB for Table returns them in no stated order ("Frequently asked questions about
// Azure Cosmos DB for Table"), so in that flavour they are sorted here; in the Table
// flavour they are returned as they came, for the caller to assert their order.
func inKeyOrder(svc tabula.ServiceAPI, es []tabula.Entity) []tabula.Entity {
	if flavorOf(svc) != tabula.FlavorCosmos {
		return es
	}
	es = slices.Clone(es)
	slices.SortFunc(es, func(a, b tabula.Entity) int {
		return cmp.Or(strings.Compare(a.PartitionKey, b.PartitionKey), strings.Compare(a.RowKey, b.RowKey))
	})
	return es
}

func keysOf(es []tabula.Entity) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.PartitionKey+"/"+e.RowKey)
	}
	return out
}

// fill inserts rows×partitions entities, a transaction per partition, with N their number.
func fill(t *testing.T, tbl tabula.TableAPI, partitions, rows int) {
	t.Helper()
	n := 0
	for p := range partitions {
		var actions []tabula.Action
		for r := range rows {
			actions = append(actions, tabula.InsertAction(tabula.Entity{
				PartitionKey: fmt.Sprintf("p%02d", p), RowKey: fmt.Sprintf("r%03d", r),
				Properties: tabula.Properties{"N": tabula.Int32(int32(n)), "Odd": tabula.Boolean(n%2 == 1)},
			}))
			n++
		}
		_, err := tbl.SubmitTransaction(context.Background(), actions)
		require.NoError(t, err)
	}
}

func testQuery(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	fill(t, tbl, 3, 4)

	got := inKeyOrder(svc, all(t, tbl, tabula.Query{Filter: "PartitionKey eq 'p01' and RowKey ge 'r001' and RowKey lt 'r003'"}))
	assert.Equal(t, []string{"p01/r001", "p01/r002"}, keysOf(got))

	got = inKeyOrder(svc, all(t, tbl, tabula.Query{Filter: "N ge 9 or PartitionKey eq 'p00' and RowKey eq 'r000'"}))
	assert.Equal(t, []string{"p00/r000", "p02/r001", "p02/r002", "p02/r003"}, keysOf(got), "key order")

	got = inKeyOrder(svc, all(t, tbl, tabula.Query{Filter: "Odd eq true and N lt 4", Select: []string{"N"}}))
	require.Equal(t, []string{"p00/r001", "p00/r003"}, keysOf(got))
	assert.Equal(t, tabula.Properties{"N": tabula.Int32(3)}, got[1].Properties, "$select")

	page, err := tbl.Query(ctx, tabula.Query{Filter: "PartitionKey eq 'p01' and RowKey eq 'r002'"})
	require.NoError(t, err)
	require.Len(t, page.Entities, 1)
	assert.NotEmpty(t, page.Entities[0].ETag)
	assert.False(t, page.Entities[0].Timestamp.IsZero())
	assert.True(t, page.Continuation.IsZero())

	assert.Empty(t, all(t, tbl, tabula.Query{Filter: "PartitionKey eq 'nothing'"}))
}

func testQueryPaging(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	fill(t, tbl, 3, 5)
	want := inKeyOrder(svc, all(t, tbl, tabula.Query{}))
	require.Len(t, want, 15)

	var got []tabula.Entity
	q := tabula.Query{Top: 4}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 20, "paging does not end")
		page, err := tbl.Query(ctx, q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Entities), 4, "Top caps a page")
		for _, e := range page.Entities {
			e.Timestamp, e.ETag = time.Time{}, ""
			got = append(got, e)
		}
		if page.Continuation.IsZero() {
			break
		}
		q.Continuation = page.Continuation
	}
	assert.Equal(t, want, inKeyOrder(svc, got), "pages follow one another without loss or repetition")

	// QueryAll resumes from a continuation.
	page, err := tbl.Query(ctx, tabula.Query{Top: 6})
	require.NoError(t, err)
	require.False(t, page.Continuation.IsZero())
	rest := inKeyOrder(svc, all(t, tbl, tabula.Query{Continuation: page.Continuation}))
	assert.Equal(t, keysOf(want[len(page.Entities):]), keysOf(rest))

	// A broken token is refused.
	_, err = tbl.Query(ctx, tabula.Query{Continuation: tabula.Continuation{NextPartitionKey: "not a token", NextRowKey: "x"}})
	requireCode(t, err, tabula.ErrInvalidInput)
}

func testQueryErrors(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	_, err := tbl.Query(ctx, tabula.Query{Filter: "PartitionKey eq"})
	requireCode(t, err, tabula.ErrInvalidInput, "a filter that does not parse")
	for _, top := range []int{tabula.MaxEntitiesPerPage + 1, -1} {
		_, err = tbl.Query(ctx, tabula.Query{Top: top})
		requireCode(t, err, tabula.ErrInvalidInput, "top %d", top)
	}
	_, err = svc.ListTables(ctx, tabula.TableQuery{Top: tabula.MaxTablesPerPage + 1})
	requireCode(t, err, tabula.ErrInvalidInput, "a table listing's top above 1000")
	for e, err := range tbl.QueryAll(ctx, tabula.Query{Filter: "N eq 'unterminated"}) {
		assert.Equal(t, tabula.Entity{}, e)
		requireCode(t, err, tabula.ErrInvalidInput, "QueryAll yields the error")
	}
}

func testCanceled(t *testing.T, svc tabula.ServiceAPI) {
	tbl := newTable(t, svc)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = tbl.Query(ctx, tabula.Query{})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = svc.ListTables(ctx, tabula.TableQuery{})
	assert.ErrorIs(t, err, context.Canceled)
}

func testFilterBuilder(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	e := everyType("p", "typed")
	_, err := tbl.Insert(ctx, e)
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "other", Properties: tabula.Properties{"Str": tabula.String("it's")}})
	require.NoError(t, err)
	for name, v := range e.Properties {
		if name == "NaN" {
			// The filter language reads NaN as a literal: no filter can name the property.
			assert.Panics(t, func() { tabula.Eq(name, v) })
			continue
		}
		got := all(t, tbl, tabula.Query{Filter: tabula.And(tabula.Eq("PartitionKey", tabula.String("p")), tabula.Eq(name, v)).String()})
		assert.Equal(t, []string{"p/typed"}, keysOf(got), "%s eq %s", name, tabula.Literal(v))
	}
	got := all(t, tbl, tabula.Query{Filter: tabula.Eq("Str", tabula.String("it's")).String()})
	assert.Equal(t, []string{"p/other"}, keysOf(got), "a quote in a value")
	got = all(t, tbl, tabula.Query{Filter: tabula.Eq("RowKey", tabula.String("x' or RowKey ne 'y")).String()})
	assert.Empty(t, got, "a value cannot change the filter's shape")
	got = all(t, tbl, tabula.Query{Filter: tabula.Not(tabula.Eq("RowKey", tabula.String("typed"))).String()})
	assert.Equal(t, []string{"p/other"}, keysOf(got))
}

func testCountExists(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	n, err := tabula.Count(ctx, tbl, "")
	require.NoError(t, err)
	assert.Zero(t, n, "an empty table")
	ok, err := tabula.Exists(ctx, tbl, "")
	require.NoError(t, err)
	assert.False(t, ok, "an empty table")

	fill(t, tbl, 3, 100)
	n, err = tabula.Count(ctx, tbl, "")
	require.NoError(t, err)
	assert.EqualValues(t, 300, n)
	n, err = tabula.Count(ctx, tbl, tabula.And(tabula.Eq("PartitionKey", tabula.String("p01")), tabula.Eq("Odd", tabula.Boolean(true))).String())
	require.NoError(t, err)
	assert.EqualValues(t, 50, n)
	ok, err = tabula.Exists(ctx, tbl, tabula.Eq("N", tabula.Int32(299)).String())
	require.NoError(t, err)
	assert.True(t, ok, "the last entity of a scan")
	ok, err = tabula.Exists(ctx, tbl, tabula.Eq("N", tabula.Int32(300)).String())
	require.NoError(t, err)
	assert.False(t, ok)
	_, err = tabula.Count(ctx, tbl, "N eq")
	requireCode(t, err, tabula.ErrInvalidInput, "a filter that does not parse")
}

func testDeletePartition(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	fill(t, tbl, 3, 100)
	_, err := tbl.Insert(ctx, tabula.Entity{PartitionKey: "p01", RowKey: "zz", Properties: tabula.Properties{"N": tabula.Int32(-1)}})
	require.NoError(t, err)
	n, err := tabula.DeletePartition(ctx, tbl, "p01")
	require.NoError(t, err)
	assert.EqualValues(t, 101, n, "two transactions' worth")
	left, err := tabula.Count(ctx, tbl, "")
	require.NoError(t, err)
	assert.EqualValues(t, 200, left, "the other partitions are untouched")
	n, err = tabula.DeletePartition(ctx, tbl, "p01")
	require.NoError(t, err)
	assert.Zero(t, n, "nothing left to delete")

	n, err = tabula.DeleteWhere(ctx, tbl, tabula.Ge("N", tabula.Int32(250)).String())
	require.NoError(t, err)
	assert.EqualValues(t, 50, n, "across what the filter matches")
	left, err = tabula.Count(ctx, tbl, "")
	require.NoError(t, err)
	assert.EqualValues(t, 150, left)
}

func testSubmitBulk(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	var actions []tabula.Action
	for i := range 250 {
		actions = append(actions, tabula.InsertAction(tabula.Entity{
			PartitionKey: fmt.Sprintf("p%d", i%2), RowKey: fmt.Sprintf("r%03d", i),
			Properties: tabula.Properties{"N": tabula.Int32(int32(i))}}))
	}
	// The same entity again: it must land after its insert, in a later transaction.
	actions = append(actions, tabula.UpsertAction(tabula.Entity{PartitionKey: "p0", RowKey: "r000",
		Properties: tabula.Properties{"N": tabula.Int32(-1)}}, tabula.Merge))
	results, err := tabula.SubmitBulk(ctx, tbl, actions)
	require.NoError(t, err)
	require.Len(t, results, 4, "125 and 126 actions of two partitions, in transactions of at most 100")
	seen := 0
	for _, r := range results {
		require.NoError(t, r.Err)
		require.Len(t, r.Results, len(r.Actions))
		assert.LessOrEqual(t, len(r.Actions), tabula.MaxTransactionActions)
		seen += len(r.Actions)
	}
	assert.Equal(t, len(actions), seen, "every action in one transaction")
	e, err := tbl.Get(ctx, "p0", "r000")
	require.NoError(t, err)
	assert.Equal(t, tabula.Int32(-1), e.Properties["N"], "the upsert applied after the insert")

	// A failing transaction fails alone, and the error says which.
	again := []tabula.Action{
		tabula.InsertAction(tabula.Entity{PartitionKey: "p0", RowKey: "new"}),
		tabula.InsertAction(tabula.Entity{PartitionKey: "p0", RowKey: "r002"}), // exists
		tabula.InsertAction(tabula.Entity{PartitionKey: "p9", RowKey: "new"}),
	}
	results, err = tabula.SubmitBulk(ctx, tbl, again)
	requireActionError(t, err, 1, tabula.ErrEntityAlreadyExists)
	require.Len(t, results, 2)
	assert.Equal(t, []int{0, 1}, results[0].Actions)
	assert.Error(t, results[0].Err)
	assert.Nil(t, results[0].Results)
	assert.NoError(t, results[1].Err, "the other partition's transaction still commits")
	_, err = tbl.Get(ctx, "p9", "new")
	assert.NoError(t, err)
	_, err = tbl.Get(ctx, "p0", "new")
	requireCode(t, err, tabula.ErrResourceNotFound, "the failed transaction wrote nothing")

	_, err = tabula.SubmitBulk(ctx, tbl, []tabula.Action{tabula.RetrieveAction("p0", "r000")})
	requireCode(t, err, tabula.ErrInvalidInput, "a Retrieve")
}

// testAccessPolicies sets and reads a table's stored access policies (Set Table ACL, Get
// Table ACL) through tabula.AccessPoliciesAPI, which the embedded tables and package
// remote's have; a backend whose tables lack it skips the test. Every policy gives Start,
// Expiry and Permission (in the order raud) and times at 100 ns, the form every service
// takes and keeps as it is: Azurite refuses a policy that leaves a field out. A backend
// reached with a shared access signature skips it: only the account's key may touch ACLs.
func testAccessPolicies(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	acl, ok := newTable(t, svc).(tabula.AccessPoliciesAPI)
	if !ok {
		t.Skip("the backend's tables do not implement tabula.AccessPoliciesAPI")
	}
	got, err := acl.AccessPolicies(ctx)
	var te *tabula.Error
	if errors.As(err, &te) && te.StatusCode == 403 {
		t.Skip("only the account's key may read a table's access policies, not this backend's credential: ", err)
	}
	require.NoError(t, err)
	assert.Empty(t, got, "a new table has none")

	day := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	want := []tabula.AccessPolicy{
		{ID: "readers", Start: day, Expiry: day.AddDate(1, 0, 0), Permission: "r"},
		{ID: "writers", Start: day.Add(1234500 * time.Nanosecond), Expiry: day.AddDate(0, 1, 0).Add(100), Permission: "aud"},
		{ID: "all", Start: day, Expiry: day.AddDate(5, 0, 0), Permission: "raud"},
	}
	require.NoError(t, acl.SetAccessPolicies(ctx, want))
	got, err = acl.AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got, "the policies, in the order set, times to 100 ns")

	// A set replaces what was there.
	require.NoError(t, acl.SetAccessPolicies(ctx, want[1:2]))
	got, err = acl.AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Equal(t, want[1:2], got)

	// More than five is refused, and changes nothing.
	six := make([]tabula.AccessPolicy, tabula.MaxAccessPolicies+1)
	for i := range six {
		six[i] = tabula.AccessPolicy{ID: fmt.Sprint("p", i), Start: day, Expiry: day.AddDate(1, 0, 0), Permission: "r"}
	}
	err = acl.SetAccessPolicies(ctx, six)
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 400, te.StatusCode, "%v", err)
	got, err = acl.AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Equal(t, want[1:2], got)

	// None removes them all.
	require.NoError(t, acl.SetAccessPolicies(ctx, nil))
	got, err = acl.AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Empty(t, got)

	// A missing table has none to read or set.
	missing, ok := svc.Table(tableName(t, "none")).(tabula.AccessPoliciesAPI)
	require.True(t, ok, "every table handle of the backend has the interface")
	_, err = missing.AccessPolicies(ctx)
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 404, te.StatusCode, "%v", err)
	err = missing.SetAccessPolicies(ctx, want[:1])
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 404, te.StatusCode, "%v", err)
}
