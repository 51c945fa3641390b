package odata

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rec is a test entity: a small slice, so Property does not allocate.
type rec []struct {
	name string
	v    Value
}

func (r rec) Property(name string) (Value, bool) {
	for i := range r {
		if r[i].name == name {
			return r[i].v, true
		}
	}
	return Value{}, false
}

func entity(kv ...any) rec {
	var r rec
	for i := 0; i < len(kv); i += 2 {
		r = append(r, struct {
			name string
			v    Value
		}{kv[i].(string), kv[i+1].(Value)})
	}
	return r
}

func match(t *testing.T, filter string, r Record) bool {
	t.Helper()
	e, err := Parse(filter)
	require.NoError(t, err, filter)
	return Compile(e).Match(r)
}

var (
	t2021     = TicksFromTime(time.Date(2021, 7, 13, 0, 0, 0, 0, time.UTC))
	noFoo     = entity("PartitionKey", StringValue("p"), "RowKey", StringValue("r"))
	allOps    = []string{"eq", "ne", "gt", "ge", "lt", "le"}
	lessThan  = map[string]bool{"eq": false, "ne": true, "gt": false, "ge": false, "lt": true, "le": true}
	equalTo   = map[string]bool{"eq": true, "ne": false, "gt": false, "ge": true, "lt": false, "le": true}
	greaterTo = map[string]bool{"eq": false, "ne": true, "gt": true, "ge": true, "lt": false, "le": false}
)

func TestMissingPropertyIsFalseForEveryOperator(t *testing.T) {
	for _, lit := range []string{"''", "'x'", "1", "1L", "1.0", "true", "datetime'2021-07-13T00:00:00Z'",
		"guid'c9da6455-213d-42c9-9a79-3e9149a57833'", "X'00'"} {
		for _, op := range allOps {
			f := "Foo " + op + " " + lit
			assert.False(t, match(t, f, noFoo), f)
			// not is plain negation, so it matches the entity without Foo.
			assert.True(t, match(t, "not ("+f+")", noFoo), "not (%s)", f)
		}
	}
}

// TestTypeMismatch: a property of another type compares as less than the
// literal, whatever the values.
func TestTypeMismatch(t *testing.T) {
	props := map[string]Value{
		"String":   StringValue("zzz"),
		"Binary":   BinaryValue([]byte{0xff}),
		"Boolean":  BooleanValue(true),
		"DateTime": DateTimeValue(MaxTicks),
		"Double":   DoubleValue(math.Inf(1)),
		"Guid":     GuidValue([16]byte{0xff}),
		"Int32":    Int32Value(math.MaxInt32),
		"Int64":    Int64Value(math.MaxInt64),
	}
	lits := map[string]string{
		"String":   "''",
		"Binary":   "X''",
		"Boolean":  "false",
		"DateTime": "datetime'0001-01-01T00:00:00Z'",
		"Double":   "-INF",
		"Guid":     "guid'00000000-0000-0000-0000-000000000000'",
		"Int32":    "-2147483648",
		"Int64":    "-9223372036854775808L",
	}
	// The pairs that compare by value instead (numeric widening).
	widens := map[[2]string]bool{
		{"Int32", "Int32"}: true, {"Int64", "Int32"}: true, {"Double", "Int32"}: true,
		{"Int64", "Int64"}: true, {"Double", "Int64"}: true,
	}
	for pt, pv := range props {
		for lt, lit := range lits {
			if pt == lt || widens[[2]string{pt, lt}] {
				continue
			}
			r := entity("Foo", pv)
			for _, op := range allOps {
				f := "Foo " + op + " " + lit
				assert.Equal(t, lessThan[op], match(t, f, r), "%s property: %s", pt, f)
			}
		}
	}
	// The recorded service cases: Double and DateTime properties against ''.
	for _, v := range []Value{DoubleValue(5), DateTimeValue(t2021)} {
		r := entity("Foo", v)
		assert.True(t, match(t, "Foo lt ''", r))
		assert.False(t, match(t, "Foo gt ''", r))
		assert.True(t, match(t, "Foo ne ''", r))
	}
	// Key properties too: PartitionKey lt 5 is true for every entity.
	assert.True(t, match(t, "PartitionKey lt 5", noFoo))
	assert.False(t, match(t, "PartitionKey ge 5", noFoo))
}

func TestNumericWidening(t *testing.T) {
	cases := []struct {
		prop Value
		lit  string
		want map[string]bool // by operator
	}{
		// Int32 literal: numeric with Int32, Int64, Double.
		{Int32Value(5), "5", equalTo},
		{Int32Value(6), "5", greaterTo},
		{Int32Value(-7), "5", lessThan},
		{Int64Value(5), "5", equalTo},
		{Int64Value(1 << 40), "5", greaterTo},
		{Int64Value(-1 << 40), "5", lessThan},
		{DoubleValue(5), "5", equalTo},
		{DoubleValue(5.5), "5", greaterTo},
		{DoubleValue(4.5), "5", lessThan},
		// Int64 literal: numeric with Int64 and Double only.
		{Int64Value(5), "5L", equalTo},
		{Int64Value(1 << 40), "5L", greaterTo},
		{DoubleValue(5), "5L", equalTo},
		{DoubleValue(5.5), "5L", greaterTo},
		{DoubleValue(-1e300), "5L", lessThan},
		{Int32Value(5), "5L", lessThan},  // mismatch, though equal
		{Int32Value(99), "5L", lessThan}, // mismatch, though greater
		// Double literal: Double only.
		{DoubleValue(5), "5.0", equalTo},
		{DoubleValue(6), "5.0", greaterTo},
		{Int32Value(5), "5.0", lessThan},
		{Int32Value(99), "5.0", lessThan},
		{Int64Value(5), "5.0", lessThan},
		{Int64Value(99), "5.0", lessThan},
	}
	for _, tc := range cases {
		r := entity("Foo", tc.prop)
		for _, op := range allOps {
			f := "Foo " + op + " " + tc.lit
			assert.Equal(t, tc.want[op], match(t, f, r), "%v property: %s", tc.prop, f)
			// The same with the literal on the left.
			fl := tc.lit + " " + Op(map[string]Op{"eq": Eq, "ne": Ne, "gt": Gt, "ge": Ge, "lt": Lt, "le": Le}[op]).flip().String() + " Foo"
			assert.Equal(t, tc.want[op], match(t, fl, r), "%v property: %s", tc.prop, fl)
		}
	}
}

func TestValueOrders(t *testing.T) {
	g := func(s string) Value {
		v, ok := parseGuid(s)
		require.True(t, ok)
		return GuidValue(v)
	}
	cases := []struct {
		prop Value
		lit  string
		want map[string]bool
	}{
		// Strings compare by UTF-16 code units: U+1F600 is a surrogate pair
		// (0xD83D…), below U+FF5E, although Go's byte order says otherwise.
		{StringValue("😀"), "'～'", lessThan},
		{StringValue("～"), "'😀'", greaterTo},
		{StringValue("a😀"), "'a～'", lessThan},
		{StringValue("😀"), "'\uE000'", lessThan},
		{StringValue("😀"), "'\uD7FF'", greaterTo},
		{StringValue("abc"), "'abd'", lessThan},
		{StringValue("ab"), "'abc'", lessThan},
		{StringValue("B"), "'a'", lessThan}, // ordinal, case-sensitive
		{StringValue(""), "''", equalTo},
		// Binary: byte-wise, a prefix sorts first.
		{BinaryValue([]byte{1}), "X'0100'", lessThan},
		{BinaryValue([]byte{2}), "X'0100'", greaterTo},
		{BinaryValue(nil), "X''", equalTo},
		// Boolean: false < true.
		{BooleanValue(false), "true", lessThan},
		{BooleanValue(true), "false", greaterTo},
		{Value{Type: Boolean, Int: 7}, "true", equalTo},
		// DateTime at 100 ns.
		{DateTimeValue(t2021 + 1), "datetime'2021-07-13T00:00:00Z'", greaterTo},
		{DateTimeValue(t2021), "datetime'2021-07-13T00:00:00.0000001Z'", lessThan},
		{DateTimeValue(t2021 + 1), "datetime'2021-07-13T00:00:00.0000001Z'", equalTo},
		{DateTimeValue(t2021), "datetime'2021-07-13T02:00:00+02:00'", equalTo},
		// Guid: byte-wise in text order (also .NET Guid.CompareTo's order).
		{g("00000000-0000-0000-0000-000000000001"), "guid'00000000-0000-0000-0000-000000000002'", lessThan},
		{g("10000000-0000-0000-0000-000000000000"), "guid'0fffffff-ffff-ffff-ffff-ffffffffffff'", greaterTo},
		{g("c9da6455-213d-42c9-9a79-3e9149a57833"), "guid'C9DA6455-213D-42C9-9A79-3E9149A57833'", equalTo},
		// Doubles, with .NET CompareTo for NaN: NaN = NaN < -INF.
		{DoubleValue(math.NaN()), "NaN", equalTo},
		{DoubleValue(math.NaN()), "-INF", lessThan},
		{DoubleValue(math.Inf(-1)), "NaN", greaterTo},
		{DoubleValue(0), "NaN", greaterTo},
		{DoubleValue(math.NaN()), "0", lessThan},  // Int32 literal widened
		{DoubleValue(math.NaN()), "0L", lessThan}, // Int64 literal widened
		{DoubleValue(math.Copysign(0, -1)), "0.0", equalTo},
		{DoubleValue(math.Inf(1)), "1e308", greaterTo},
	}
	for _, tc := range cases {
		r := entity("Foo", tc.prop)
		for _, op := range allOps {
			f := "Foo " + op + " " + tc.lit
			assert.Equal(t, tc.want[op], match(t, f, r), "%v property: %s", tc.prop, f)
		}
	}
}

func TestLogic(t *testing.T) {
	r := entity("PartitionKey", StringValue("p"), "RowKey", StringValue("r"), "A", Int32Value(1), "B", Int32Value(2))
	cases := map[string]bool{
		"A eq 1 and B eq 2":                         true,
		"A eq 1 and B eq 3":                         false,
		"A eq 0 or B eq 2":                          true,
		"A eq 0 or B eq 0":                          false,
		"A eq 1 and B eq 2 and PartitionKey eq 'p'": true,
		"A eq 1 and B eq 2 and PartitionKey eq 'q'": false,
		"A eq 0 or B eq 0 or RowKey eq 'r'":         true,
		"A eq 0 or B eq 0 or RowKey eq 's'":         false,
		"A eq 0 or B eq 2 and A eq 1":               true, // and binds tighter
		"(A eq 0 or B eq 2) and A eq 0":             false,
		"not (A eq 1) and B eq 2":                   false,
		"not (A eq 1 and B eq 3)":                   true,
		"not not (A eq 1)":                          true,
		"true":                                      true,
		"false":                                     false,
		"not false":                                 true,
		"true and A eq 1":                           true,
		"false or A eq 2":                           false,
		"Missing ne 1 or A eq 1":                    true,
		"Missing ne 1":                              false,
		"not (Missing eq 1)":                        true,
		"not (Missing ne 1)":                        true,
	}
	for f, want := range cases {
		assert.Equal(t, want, match(t, f, r), f)
	}
	assert.True(t, Compile(nil).Match(r), "nil filter matches all")
}

func TestMatchDoesNotAllocate(t *testing.T) {
	r := entity(
		"PartitionKey", StringValue("Action"), "RowKey", StringValue("Cop Out"),
		"Rating", DoubleValue(4.5), "Year", Int32Value(2010), "Views", Int64Value(1<<40),
		"Released", DateTimeValue(t2021), "Poster", BinaryValue([]byte{1, 2}),
		"Id", GuidValue([16]byte{1}), "Fav", BooleanValue(true), "Title", StringValue("Cop Out"),
	)
	p := compileFilter(t, "PartitionKey eq 'Action' and RowKey ge 'C' and RowKey lt 'D' and Rating gt 4.0 and "+
		"(Year ge 2000 or Views gt 5L) and Released le datetime'2030-01-01T00:00:00Z' and Poster ne X'00' and "+
		"Id ne guid'00000000-0000-0000-0000-000000000000' and Fav eq true and not (Title eq 'x') and "+
		"Title lt '～' and not (Missing eq 1) or Year eq 1")
	var rr Record = r // converting the slice to an interface would allocate
	require.True(t, p.Match(rr))
	allocs := testing.AllocsPerRun(1000, func() { p.Match(rr) })
	assert.Zero(t, allocs)
}

func compileFilter(t testing.TB, f string) *Predicate {
	e, err := Parse(f)
	require.NoError(t, err)
	return Compile(e)
}

// BenchmarkMatch evaluates a typical planner residual: a few comparisons on
// non-key properties of a 10-property entity.
func BenchmarkMatch(b *testing.B) {
	r := entity(
		"PartitionKey", StringValue("Action"), "RowKey", StringValue("Cop Out"),
		"Title", StringValue("Cop Out"), "Rating", DoubleValue(4.5), "Year", Int32Value(2010),
		"Views", Int64Value(123456789), "Released", DateTimeValue(t2021), "Fav", BooleanValue(true),
		"Director", StringValue("Kevin Smith"), "Budget", DoubleValue(3e7),
	)
	p := compileFilter(b, "PartitionKey eq 'Action' and Rating gt 4.0 and (Year ge 2000 or Views gt 1000000L) and "+
		"Released lt datetime'2022-01-01T00:00:00Z' and Director ne 'Michael Bay'")
	var rr Record = r
	if !p.Match(rr) {
		b.Fatal("filter does not match")
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Match(rr)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
}
