package conformance

import (
	"cmp"
	"context"
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

// Typed entities (tabula.GetAs, InsertAs, QueryAs…): Go structs through any backend, which
// must read and write what the untyped calls do, under the same rules.

// typedRow is an entity as a struct: a field of every EDM type, the keys and version by tag
// and by name, pointers, omitempty, a skipped field and a catch-all.
type typedRow struct {
	Group     string `tabula:"PartitionKey"`
	Name      string `tabula:"RowKey"`
	Timestamp time.Time
	ETag      tabula.ETag
	Str       string
	Empty     string
	Bin       []byte
	True      bool
	False     bool
	When      time.Time `tabula:",omitempty"` // a zero time is outside the service's range
	Integral  float64
	Frac      float64
	NaN       float64
	Inf       float64
	ID        tabula.Guid `tabula:"Id"`
	IDText    string      `tabula:"IdText,Edm.Guid,omitempty"`
	I32       int32
	I64       int64
	Small     int   `tabula:"Small64"`
	Narrow    int64 `tabula:",Edm.Int32"`
	Note      *string
	Missing   *time.Time
	Skipped   string `tabula:",omitempty"`
	Local     string `tabula:"-"`
	Rest      tabula.Properties
}

func sampleRow(pk, rk string) typedRow {
	note := "a note"
	return typedRow{Group: pk, Name: rk, Str: "héllo 🌍 \"quoted\" <tag>", Bin: []byte{0, 1, 2, 0xff},
		True: true, When: time.Date(2024, 2, 29, 23, 59, 59, 123456700, time.UTC),
		Integral: 5, Frac: -0.1, NaN: math.NaN(), Inf: math.Inf(-1),
		ID:     tabula.Guid{0x0f, 0x8f, 0xad, 0x5b, 0xd9, 0xcb, 0x46, 0x9f, 0xa1, 0x65, 0x70, 0x86, 0x77, 0x28, 0x95, 0x0e},
		IDText: "3f2504e0-4f89-11d3-9a0c-0305e82c3301", I32: math.MinInt32, I64: math.MaxInt64, Small: 7,
		Narrow: math.MaxInt32, Note: &note, Local: "not stored"}
}

// sampleProperties are the properties sampleRow(…) writes, worked out by hand.
func sampleProperties(v typedRow) tabula.Properties {
	guid, _ := tabula.ParseGuid(v.IDText)
	return tabula.Properties{"Str": tabula.String(v.Str), "Empty": tabula.String(""), "Bin": tabula.Binary(v.Bin),
		"True": tabula.Boolean(true), "False": tabula.Boolean(false), "When": tabula.DateTime(v.When),
		"Integral": tabula.Double(5), "Frac": tabula.Double(-0.1), "NaN": tabula.Double(math.NaN()),
		"Inf": tabula.Double(math.Inf(-1)), "Id": v.ID, "IdText": guid, "I32": tabula.Int32(v.I32),
		"I64": tabula.Int64(v.I64), "Small64": tabula.Int64(7), "Narrow": tabula.Int32(math.MaxInt32),
		"Note": tabula.String(*v.Note)}
}

// assertSameRow compares two typedRows: NaN equal to NaN, times by instant, and the
// Timestamp only when want has one.
func assertSameRow(t *testing.T, want, got typedRow, msgAndArgs ...any) {
	t.Helper()
	assert.True(t, math.IsNaN(got.NaN) == math.IsNaN(want.NaN), msgAndArgs...)
	assert.True(t, got.When.Equal(want.When), "When %v != %v", got.When, want.When)
	if !want.Timestamp.IsZero() {
		assert.True(t, got.Timestamp.Equal(want.Timestamp), "Timestamp %v != %v", got.Timestamp, want.Timestamp)
	}
	assert.Equal(t, want.Missing == nil, got.Missing == nil, msgAndArgs...)
	if want.Missing != nil && got.Missing != nil {
		assert.True(t, got.Missing.Equal(*want.Missing), msgAndArgs...)
	}
	want.NaN, got.NaN = 0, 0
	want.When, got.When = time.Time{}, time.Time{}
	want.Timestamp, got.Timestamp = time.Time{}, time.Time{}
	want.Missing, got.Missing = nil, nil
	assert.Equal(t, want, got, msgAndArgs...)
}

func testTypedRoundTrip(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	in := sampleRow("p", "r")
	ins, err := tabula.InsertAs(ctx, tbl, in)
	require.NoError(t, err)
	assert.NotEmpty(t, ins.ETag, "InsertAs sets the ETag field")
	assert.False(t, ins.Timestamp.IsZero(), "InsertAs sets the Timestamp field")

	// The untyped read sees what the typed write wrote, and nothing of the skipped field.
	e, err := tbl.Get(ctx, "p", "r")
	require.NoError(t, err)
	assertSameProperties(t, sampleProperties(in), e.Properties, "Get after InsertAs")
	assert.Equal(t, ins.ETag, e.ETag)

	want := ins
	want.Local = "" // not stored, so not read
	got, err := tabula.GetAs[typedRow](ctx, tbl, "p", "r")
	require.NoError(t, err)
	assertSameRow(t, want, got, "GetAs")
	assert.Equal(t, ins.ETag, got.ETag)
	converted, err := tabula.EntityAs[typedRow](e)
	require.NoError(t, err)
	assertSameRow(t, got, converted, "GetAs reads what converting Get's entity gives")

	var rows []typedRow
	for v, err := range tabula.QueryAs[typedRow](ctx, tbl, tabula.Query{Filter: "PartitionKey eq 'p'"}) {
		require.NoError(t, err)
		rows = append(rows, v)
	}
	require.Len(t, rows, 1)
	assertSameRow(t, got, rows[0], "QueryAs")

	rows = rows[:0]
	for v, err := range tabula.QueryAs[typedRow](ctx, tbl, tabula.Query{Select: []string{"Str", "I64"}}) {
		require.NoError(t, err)
		rows = append(rows, v)
	}
	require.Len(t, rows, 1)
	assert.Equal(t, typedRow{Group: "p", Name: "r", ETag: ins.ETag, Str: in.Str, I64: in.I64}, typedRow{
		Group: rows[0].Group, Name: rows[0].Name, ETag: rows[0].ETag, Str: rows[0].Str, I64: rows[0].I64}, "$select")
	rows[0].Group, rows[0].Name, rows[0].ETag, rows[0].Str, rows[0].I64, rows[0].Timestamp = "", "", "", "", 0, time.Time{}
	assert.Zero(t, rows[0], "the fields of properties not selected stay zero")
}

func testTypedWrites(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	ins, err := tabula.InsertAs(ctx, tbl, sampleRow("p", "r"))
	require.NoError(t, err)
	_, err = tabula.InsertAs(ctx, tbl, sampleRow("p", "r"))
	requireCode(t, err, tabula.ErrEntityAlreadyExists)

	// Another program adds a property the struct does not name: the catch-all holds it, so a
	// Replace through the struct keeps it.
	_, err = tbl.Update(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r", Properties: tabula.Properties{
		"Extra": tabula.Int64(42)}}, tabula.Merge, tabula.AnyETag)
	require.NoError(t, err)
	got, err := tabula.GetAs[typedRow](ctx, tbl, "p", "r")
	require.NoError(t, err)
	assert.Equal(t, tabula.Properties{"Extra": tabula.Int64(42)}, got.Rest)
	_, err = tabula.UpdateAs(ctx, tbl, got, tabula.Replace, ins.ETag)
	requireCode(t, err, tabula.ErrUpdateConditionNotSatisfied, "a stale ETag")

	got.Note, got.Str = nil, "changed"
	etag, err := tabula.UpdateAs(ctx, tbl, got, tabula.Replace, got.ETag)
	require.NoError(t, err)
	e, err := tbl.Get(ctx, "p", "r")
	require.NoError(t, err)
	assert.Equal(t, etag, e.ETag)
	assert.Equal(t, tabula.Int64(42), e.Properties["Extra"], "Replace keeps what the catch-all holds")
	assert.Equal(t, tabula.String("changed"), e.Properties["Str"])
	assert.NotContains(t, e.Properties, "Note", "a nil pointer is not written, so Replace drops it")

	// Merge leaves what the struct does not write.
	_, err = tabula.UpdateAs(ctx, tbl, typedRow{Group: "p", Name: "r", Str: "merged", Rest: tabula.Properties{"Other": tabula.Boolean(true)}}, tabula.Merge, etag)
	require.NoError(t, err)
	e, err = tbl.Get(ctx, "p", "r")
	require.NoError(t, err)
	assert.Equal(t, tabula.String("merged"), e.Properties["Str"])
	assert.Equal(t, tabula.Int64(42), e.Properties["Extra"])
	assert.Equal(t, tabula.Boolean(true), e.Properties["Other"])

	_, err = tabula.UpdateAs(ctx, tbl, typedRow{Group: "p", Name: "missing"}, tabula.Merge, tabula.AnyETag)
	requireCode(t, err, tabula.ErrResourceNotFound)
	_, err = tabula.UpsertAs(ctx, tbl, typedRow{Group: "p", Name: "up", Skipped: "kept"}, tabula.Replace)
	require.NoError(t, err, "an upsert inserts a missing entity")
	up, err := tabula.GetAs[typedRow](ctx, tbl, "p", "up")
	require.NoError(t, err)
	assert.Equal(t, "kept", up.Skipped)
	e, err = tbl.Get(ctx, "p", "up")
	require.NoError(t, err)
	assert.Contains(t, e.Properties, "Str", "a zero value is written without omitempty")
	assert.NotContains(t, e.Properties, "Missing", "a nil pointer is not")

	_, err = tabula.GetAs[typedRow](ctx, tbl, "p", "absent")
	requireCode(t, err, tabula.ErrResourceNotFound)
}

// testTypedRules checks that a typed write breaking a rule of the service gets the error
// the same entity gets untyped, and stores nothing.
func testTypedRules(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	type wide struct {
		PartitionKey, RowKey string
		S                    string
		B                    []byte
		D                    time.Time `tabula:",omitempty"`
	}
	for _, c := range []struct {
		what string
		v    wide
	}{
		{"a key with a slash", wide{PartitionKey: "a/b", RowKey: "r"}},
		{"a key too long", wide{PartitionKey: strings.Repeat("k", tabula.MaxKeyLength+1), RowKey: "r"}},
		{"a string too long", wide{PartitionKey: "p", RowKey: "r", S: strings.Repeat("s", tabula.MaxStringLength+1)}},
		{"a binary too long", wide{PartitionKey: "p", RowKey: "r", B: make([]byte, tabula.MaxBinaryLength+1)}},
		{"a DateTime before 1601", wide{PartitionKey: "p", RowKey: "r", D: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)}},
	} {
		e, err := tabula.EntityOf(c.v)
		require.NoError(t, err, c.what)
		_, untyped := tbl.Insert(ctx, e)
		var want *tabula.Error
		require.ErrorAs(t, untyped, &want, c.what)
		_, err = tabula.InsertAs(ctx, tbl, c.v)
		got := requireCode(t, err, want, c.what)
		assert.Equal(t, want.Code, got.Code, c.what)
		// Replaces are checked by the same rules as inserts.
		_, untyped = tbl.Upsert(ctx, e, tabula.Replace)
		require.ErrorAs(t, untyped, &want, c.what)
		_, err = tabula.UpsertAs(ctx, tbl, c.v, tabula.Replace)
		assert.Equal(t, want.Code, requireCode(t, err, want, c.what).Code, "UpsertAs: %s", c.what)
		_, untyped = tbl.Update(ctx, e, tabula.Replace, tabula.AnyETag)
		require.ErrorAs(t, untyped, &want, c.what)
		_, err = tabula.UpdateAs(ctx, tbl, c.v, tabula.Replace, tabula.AnyETag)
		assert.Equal(t, want.Code, requireCode(t, err, want, c.what).Code, "UpdateAs: %s", c.what)
	}
	page, err := tbl.Query(ctx, tabula.Query{})
	require.NoError(t, err)
	assert.Empty(t, page.Entities, "a refused write stores nothing")

	// A struct that does not map is refused before anything is sent.
	type bad struct {
		PartitionKey, RowKey string
		C                    complex128
	}
	_, err = tabula.InsertAs(ctx, tbl, bad{PartitionKey: "p", RowKey: "r"})
	var se *tabula.StructError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "C", se.Field)
	_, err = tabula.GetAs[bad](ctx, tbl, "p", "r")
	require.ErrorAs(t, err, &se)
}

// testTypedMisfit checks that a stored property of another type than its field's is an
// error naming the field, after the entities before it.
func testTypedMisfit(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	type counted struct {
		PartitionKey, RowKey string
		N                    int32
	}
	for i, n := range []tabula.Property{tabula.Int32(1), tabula.Int32(2), tabula.String("three"), tabula.Int32(4)} {
		_, err := tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: fmt.Sprint(i), Properties: tabula.Properties{"N": n}})
		require.NoError(t, err)
	}
	_, err := tabula.GetAs[counted](ctx, tbl, "p", "2")
	var se *tabula.StructError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "N", se.Field)

	var got []int32
	for v, err := range tabula.QueryAs[counted](ctx, tbl, tabula.Query{}) {
		if err != nil {
			require.ErrorAs(t, err, &se)
			break
		}
		got = append(got, v.N)
	}
	if flavorOf(svc) != tabula.FlavorCosmos { // which come first is Cosmos's to choose
		assert.Equal(t, []int32{1, 2}, got, "the entities before the misfit")
	}
	v, err := tabula.GetAs[counted](ctx, tbl, "p", "3")
	require.NoError(t, err)
	assert.Equal(t, counted{PartitionKey: "p", RowKey: "3", N: 4}, v)
}

func testTypedPagingAndTransactions(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	tbl := newTable(t, svc)
	var actions []tabula.Action
	for i := range 5 {
		a, err := tabula.InsertActionOf(sampleRow("p", fmt.Sprintf("r%d", i)))
		require.NoError(t, err)
		actions = append(actions, a)
	}
	res, err := tbl.SubmitTransaction(ctx, actions)
	require.NoError(t, err)
	require.Len(t, res, 5)

	var rows []typedRow
	for v, err := range tabula.QueryAs[typedRow](ctx, tbl, tabula.Query{Top: 2}) {
		require.NoError(t, err)
		rows = append(rows, v)
	}
	if flavorOf(svc) == tabula.FlavorCosmos {
		slices.SortFunc(rows, func(a, b typedRow) int { return cmp.Compare(a.Name, b.Name) })
	}
	require.Len(t, rows, 5, "QueryAs follows the continuations of pages of Top entities")
	for i, v := range rows {
		assert.Equal(t, fmt.Sprintf("r%d", i), v.Name)
		assert.Equal(t, res[i].ETag, v.ETag)
	}

	changed := rows[0]
	changed.Str = "updated"
	update, err := tabula.UpdateActionOf(changed, tabula.Merge, changed.ETag)
	require.NoError(t, err)
	upsert, err := tabula.UpsertActionOf(typedRow{Group: "p", Name: "new"}, tabula.Replace)
	require.NoError(t, err)
	_, err = tbl.SubmitTransaction(ctx, []tabula.Action{update, upsert})
	require.NoError(t, err)
	stale, err := tabula.UpdateActionOf(rows[0], tabula.Replace, rows[0].ETag)
	require.NoError(t, err)
	_, err = tbl.SubmitTransaction(ctx, []tabula.Action{stale})
	requireActionError(t, err, 0, tabula.ErrUpdateConditionNotSatisfied)
	got, err := tabula.GetAs[typedRow](ctx, tbl, "p", "r0")
	require.NoError(t, err)
	assert.Equal(t, "updated", got.Str)
	_, err = tabula.GetAs[typedRow](ctx, tbl, "p", "new")
	require.NoError(t, err)

	_, err = tabula.InsertActionOf(typedRow{Group: "p"})
	require.NoError(t, err, "the keys are the service's to check")
	_, err = tabula.InsertActionOf(struct{ PartitionKey string }{"p"})
	var se *tabula.StructError
	assert.True(t, errors.As(err, &se), "a struct without a RowKey cannot be written")
}
