package tabula

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each built comparison parses, and Eq finds exactly the entity holding the value, for every
// type and its edge values. Each type has a property of its own: numeric comparisons widen
// (an Int64 literal matches a Double property), as on the service.
func TestFilterBuilderFindsEveryValue(t *testing.T) {
	ctx := context.Background()
	values := []Property{
		String(""), String("it's"), String("''"), String("x' or PartitionKey ne 'y"), String("名前 \U0001F600"),
		Int32(0), Int32(math.MinInt32), Int32(math.MaxInt32),
		Int64(math.MinInt64), Int64(math.MaxInt64), Int64(0),
		Double(0), Double(5), Double(-2.5), Double(1e21), Double(1e-7), Double(math.MaxFloat64),
		Double(math.SmallestNonzeroFloat64), Double(math.Inf(1)), Double(math.Inf(-1)), Double(math.NaN()),
		Boolean(true), Boolean(false),
		DateTime(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)), DateTime(time.Date(2024, 2, 29, 23, 59, 59, 123456700, time.UTC)),
		DateTime(time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)),
		Guid{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8},
		Binary{}, Binary{0, 0xff, 'a'},
	}
	db := openTestDB(t, nil)
	tbl := createTable(t, db, "Values")
	for i, v := range values {
		_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: rowKeyOf(i), Properties: Properties{typeName(v): v}})
		require.NoError(t, err)
	}
	for i, v := range values {
		f := Eq(typeName(v), v)
		page, err := tbl.Query(ctx, Query{Filter: f.String()})
		require.NoError(t, err, f.String())
		var got []string
		for _, e := range page.Entities {
			got = append(got, e.RowKey)
		}
		assert.Equal(t, []string{rowKeyOf(i)}, got, "%s", f)
	}
}

// Combinations parenthesize what they hold, so the text means what the calls say.
func TestFilterBuilderText(t *testing.T) {
	pk := Eq("PartitionKey", String("Action"))
	cases := []struct {
		f    Filter
		want string
	}{
		{Filter{}, ""},
		{pk, "PartitionKey eq 'Action'"},
		{Ne("RowKey", String("o'clock")), "RowKey ne 'o''clock'"},
		{Gt("Rating", Double(4)), "Rating gt 4.0"},
		{Ge("Count", Int64(-1)), "Count ge -1L"},
		{Lt("Big", Double(1e21)), "Big lt 1e+21"},
		{Le("Timestamp", DateTime(time.Date(2024, 1, 2, 3, 4, 5, 600, time.UTC))), "Timestamp le datetime'2024-01-02T03:04:05.0000006Z'"},
		{Eq("Id", Guid{0xab, 0xcd}), "Id eq guid'abcd0000-0000-0000-0000-000000000000'"},
		{Eq("Blob", Binary{1, 0xfe}), "Blob eq X'01FE'"},
		{And(), ""},
		{And(pk), "PartitionKey eq 'Action'"},
		{And(Filter{}, pk, Filter{}), "PartitionKey eq 'Action'"},
		{And(pk, Or(Eq("A", Int32(1)), Eq("B", Boolean(true)))), "PartitionKey eq 'Action' and (A eq 1 or B eq true)"},
		{Or(And(pk, Eq("A", Int32(1))), Eq("B", Int32(2))), "(PartitionKey eq 'Action' and A eq 1) or B eq 2"},
		{Or(pk, Filter{}), ""},
		{Not(pk), "not (PartitionKey eq 'Action')"},
		{Not(Filter{}), "PartitionKey lt ''"},
		{And(Not(pk), pk), "(not (PartitionKey eq 'Action')) and PartitionKey eq 'Action'"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.f.String())
		if c.want != "" {
			_, err := parseFilter(c.want)
			assert.NoError(t, err, c.want)
		}
	}
}

// A value cannot change the filter's shape; a property name is code, and a bad one panics.
func TestFilterBuilderEscapesValuesAndChecksNames(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, nil)
	tbl := createTable(t, db, "Users")
	for _, rk := range []string{"alice", "bob"} {
		_, err := tbl.Insert(ctx, Entity{PartitionKey: "tenant", RowKey: rk})
		require.NoError(t, err)
	}
	hostile := "alice' or RowKey ne '"
	page, err := tbl.Query(ctx, Query{Filter: And(Eq("PartitionKey", String("tenant")), Eq("RowKey", String(hostile))).String()})
	require.NoError(t, err)
	assert.Empty(t, page.Entities, "the hostile value matched as text, not as a filter")

	for _, name := range []string{"", "a b", "x eq 1 or y", "NaN", "true", "and", strings.Repeat("n", MaxPropertyNameLength+1), "1st"} {
		assert.Panics(t, func() { Eq(name, Int32(1)) }, "%q", name)
	}
	assert.Panics(t, func() { Eq("V", nil) })
	assert.NotPanics(t, func() { Eq("Timestamp", DateTime(time.Now())) })
}

func rowKeyOf(i int) string { return fmt.Sprintf("%03d", i) }

// typeName is "Int32" for an Int32: a property name per type.
func typeName(v Property) string { return strings.TrimPrefix(string(v.EdmType()), "Edm.") }
