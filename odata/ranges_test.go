package odata

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func incl(v string) Bound { return Bound{Value: v, Inclusive: true, Bounded: true} }
func excl(v string) Bound { return Bound{Value: v, Bounded: true} }

// pk is the range of one whole PartitionKey.
func pk(v string) KeyRange { return KeyRange{PartitionKeyLow: incl(v), PartitionKeyHigh: incl(v)} }

func pkrk(v string, lo, hi Bound) KeyRange {
	k := pk(v)
	k.RowKeyLow, k.RowKeyHigh = lo, hi
	return k
}

func TestRanges(t *testing.T) {
	all := []KeyRange{{}}
	none := []KeyRange{}
	cases := []struct {
		filter string
		want   []KeyRange
	}{
		{"", all},
		{"true", all},
		{"false", none},
		{"Foo eq 1", all},
		{"RowKey eq 'x'", all}, // RowKey bounds need a fixed PartitionKey
		{"PartitionKey eq 'a'", []KeyRange{pk("a")}},
		{"'a' eq PartitionKey", []KeyRange{pk("a")}},
		{"PartitionKey eq 'a' and Foo eq 1", []KeyRange{pk("a")}},
		{"PartitionKey eq 'a' or Foo eq 1", all},
		{"PartitionKey eq 'a' or PartitionKey eq 'b'", []KeyRange{pk("a"), pk("b")}},
		{"PartitionKey eq 'b' or PartitionKey eq 'a' or PartitionKey eq 'b'", []KeyRange{pk("a"), pk("b")}},
		{"PartitionKey eq 'a' and PartitionKey eq 'b'", none},
		{"PartitionKey gt 'a' and PartitionKey lt 'a'", none},
		{"PartitionKey lt ''", none},
		{"PartitionKey ge ''", all},
		{"PartitionKey gt ''", []KeyRange{{PartitionKeyLow: excl("")}}},
		{"not (PartitionKey eq 'a')", []KeyRange{{PartitionKeyHigh: excl("a")}, {PartitionKeyLow: excl("a")}}},
		{"PartitionKey ne 'a'", []KeyRange{{PartitionKeyHigh: excl("a")}, {PartitionKeyLow: excl("a")}}},
		{"not (PartitionKey ne 'a')", []KeyRange{pk("a")}},
		{"PartitionKey ne 'a' or PartitionKey eq 'a'", all},
		{"PartitionKey lt 'b' or PartitionKey eq 'b'", []KeyRange{{PartitionKeyHigh: incl("b")}}},
		{"PartitionKey ge 'a' and PartitionKey lt 'b'", []KeyRange{{PartitionKeyLow: incl("a"), PartitionKeyHigh: excl("b")}}},
		{"not (PartitionKey lt 'a' or PartitionKey ge 'b')", []KeyRange{{PartitionKeyLow: incl("a"), PartitionKeyHigh: excl("b")}}},
		{"PartitionKey ge 'a' and PartitionKey le 'a'", []KeyRange{pk("a")}},
		{"(PartitionKey ge 'a' and PartitionKey lt 'c') or (PartitionKey ge 'b' and PartitionKey lt 'd')",
			[]KeyRange{{PartitionKeyLow: incl("a"), PartitionKeyHigh: excl("d")}}},
		{"PartitionKey lt 'b' or PartitionKey gt 'c'", []KeyRange{{PartitionKeyHigh: excl("b")}, {PartitionKeyLow: excl("c")}}},

		// Type mismatches on keys are exact: less than any other type.
		{"PartitionKey lt 5", all},
		{"PartitionKey ne 5", all},
		{"PartitionKey eq 5", none},
		{"PartitionKey gt 5", none},
		{"not (PartitionKey gt 5)", all},
		{"PartitionKey eq 'a' and RowKey ge 5", none},
		{"PartitionKey eq 'a' and RowKey le true", []KeyRange{pk("a")}},

		// RowKey bounds under one PartitionKey.
		{"PartitionKey eq 'a' and RowKey ge 'Sh' and RowKey lt 'Si'", []KeyRange{pkrk("a", incl("Sh"), excl("Si"))}},
		{"RowKey lt 'Si' and RowKey ge 'Sh' and 'a' eq PartitionKey", []KeyRange{pkrk("a", incl("Sh"), excl("Si"))}},
		{"PartitionKey eq 'a' and RowKey eq 'x'", []KeyRange{pkrk("a", incl("x"), incl("x"))}},
		{"PartitionKey eq 'a' and not (RowKey lt 'm')", []KeyRange{pkrk("a", incl("m"), Bound{})}},
		{"PartitionKey eq 'a' and RowKey ne 'm'", []KeyRange{pkrk("a", Bound{}, excl("m")), pkrk("a", excl("m"), Bound{})}},
		{"PartitionKey eq 'a' and (RowKey eq '2' or RowKey eq '1')", []KeyRange{pkrk("a", incl("1"), incl("1")), pkrk("a", incl("2"), incl("2"))}},
		{"PartitionKey eq 'a' and RowKey lt ''", none},
		{"PartitionKey ge 'a' and PartitionKey le 'b' and RowKey eq 'x'", []KeyRange{{PartitionKeyLow: incl("a"), PartitionKeyHigh: incl("b")}}},
		{"(PartitionKey eq 'b' and RowKey eq '1') or (PartitionKey eq 'a' and RowKey eq '2') or (PartitionKey eq 'a' and RowKey eq '1')",
			[]KeyRange{pkrk("a", incl("1"), incl("1")), pkrk("a", incl("2"), incl("2")), pkrk("b", incl("1"), incl("1"))}},
		// A whole partition absorbs row ranges inside it.
		{"PartitionKey eq 'a' or (PartitionKey eq 'a' and RowKey eq 'x')", []KeyRange{pk("a")}},
		{"PartitionKey lt 'b' or (PartitionKey eq 'a' and RowKey eq 'x') or (PartitionKey eq 'c' and RowKey eq 'x')",
			[]KeyRange{{PartitionKeyHigh: excl("b")}, pkrk("c", incl("x"), incl("x"))}},
		// Row ranges that add up to a whole partition become one.
		{"PartitionKey eq 'a' and (RowKey lt 'm' or RowKey ge 'm')", []KeyRange{pk("a")}},
		{"PartitionKey lt 'a' or (PartitionKey eq 'a' and (RowKey le 'm' or RowKey gt 'm'))", []KeyRange{{PartitionKeyHigh: incl("a")}}},

		// UTF-16 order: U+1F600 sorts before U+FF5E.
		{"PartitionKey eq '～' or PartitionKey eq '😀'", []KeyRange{pk("😀"), pk("～")}},
		{"PartitionKey ge '～' or PartitionKey eq '😀'", []KeyRange{pk("😀"), {PartitionKeyLow: incl("～")}}},
		{"PartitionKey ge '😀' and PartitionKey le '～'", []KeyRange{{PartitionKeyLow: incl("😀"), PartitionKeyHigh: incl("～")}}},
		{"PartitionKey ge '～' and PartitionKey le '😀'", none},
	}
	for _, tc := range cases {
		t.Run(tc.filter, func(t *testing.T) {
			e, err := Parse(tc.filter)
			require.NoError(t, err)
			got := Ranges(e)
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got, "got %v", got)
			checkSortedDisjoint(t, got)
		})
	}
}

func TestRangesBounded(t *testing.T) {
	// Thousands of point ranges collapse into their hull.
	var terms []string
	for i := range 2000 {
		terms = append(terms, fmt.Sprintf("PartitionKey eq 'p%04d'", i))
	}
	e, err := Parse(strings.Join(terms, " or "))
	require.NoError(t, err)
	assert.Equal(t, []KeyRange{{PartitionKeyLow: incl("p0000"), PartitionKeyHigh: incl("p1999")}}, Ranges(e))

	// Below the limit every point is kept (the Orleans shape: 100 rows).
	terms = terms[:0]
	for i := range 100 {
		terms = append(terms, fmt.Sprintf("(PartitionKey eq 'p' and RowKey eq 'r%03d')", i))
	}
	e, err = Parse(strings.Join(terms, " or "))
	require.NoError(t, err)
	got := Ranges(e)
	require.Len(t, got, 100)
	assert.Equal(t, pkrk("p", incl("r000"), incl("r000")), got[0])
	checkSortedDisjoint(t, got)

	// A product of two large disjunctions stays bounded and correct.
	var a, b []string
	for i := range 300 {
		a = append(a, fmt.Sprintf("PartitionKey eq 'p%03d'", i))
		b = append(b, fmt.Sprintf("RowKey eq 'r%03d'", i))
	}
	e, err = Parse("(" + strings.Join(a, " or ") + ") and (" + strings.Join(b, " or ") + ")")
	require.NoError(t, err)
	got = Ranges(e)
	assert.LessOrEqual(t, len(got), maxRanges)
	checkSortedDisjoint(t, got)
	assertCovers(t, e, got, entity("PartitionKey", StringValue("p123"), "RowKey", StringValue("r045")))
}

func assertCovers(t *testing.T, e Expr, rs []KeyRange, r rec) {
	t.Helper()
	require.True(t, Compile(e).Match(r))
	pkv, _ := r.Property("PartitionKey")
	rkv, _ := r.Property("RowKey")
	n := 0
	for _, k := range rs {
		if k.Contains(pkv.Str, rkv.Str) {
			n++
		}
	}
	assert.Equal(t, 1, n)
}

// before reports whether every key of a sorts before every key of b.
func before(a, b KeyRange) bool {
	ap, bp := ival{a.PartitionKeyLow, a.PartitionKeyHigh}, ival{b.PartitionKeyLow, b.PartitionKeyHigh}
	if ap.isPoint() && bp.isPoint() && ap.lo.Value == bp.lo.Value {
		return endsBefore(ival{a.RowKeyLow, a.RowKeyHigh}, ival{b.RowKeyLow, b.RowKeyHigh})
	}
	return endsBefore(ap, bp)
}

// endsBefore reports whether interval a ends strictly before b starts.
func endsBefore(a, b ival) bool {
	if !a.hi.Bounded || !b.lo.Bounded {
		return false
	}
	c := CompareStrings(a.hi.Value, b.lo.Value)
	return c < 0 || c == 0 && !(a.hi.Inclusive && b.lo.Inclusive)
}

func checkSortedDisjoint(t *testing.T, rs []KeyRange) {
	t.Helper()
	for i := 1; i < len(rs); i++ {
		require.True(t, before(rs[i-1], rs[i]), "ranges %d and %d out of order or overlapping: %v", i-1, i, rs)
	}
	for _, k := range rs {
		p := ival{k.PartitionKeyLow, k.PartitionKeyHigh}
		require.False(t, p.empty(), "empty range in %v", rs)
		if k.RowKeyLow.Bounded || k.RowKeyHigh.Bounded {
			require.True(t, p.isPoint(), "RowKey bounds without a fixed PartitionKey: %v", k)
			require.False(t, ival{k.RowKeyLow, k.RowKeyHigh}.empty())
		}
	}
}

// keyAlphabet mixes ASCII, the U+E000–U+FFFF block and supplementary
// characters, where UTF-16 and UTF-8 orders disagree.
var keyAlphabet = []string{"", "a", "b", "ab", "～", "\uE000", "😀", "a😀", "a～", "\x00", "B"}

func randKey(rng *rand.Rand) string {
	s := keyAlphabet[rng.IntN(len(keyAlphabet))]
	if rng.IntN(3) == 0 {
		s += keyAlphabet[rng.IntN(len(keyAlphabet))]
	}
	return s
}

func randFilter(rng *rand.Rand, depth int) Expr {
	if depth <= 0 || rng.IntN(3) == 0 {
		switch rng.IntN(12) {
		case 0:
			return Constant{Value: rng.IntN(2) == 0}
		case 1:
			return Comparison{Property: "Foo", Op: Op(1 + rng.IntN(6)), Value: Int32Value(int32(rng.IntN(3)))}
		case 2:
			prop := []string{"PartitionKey", "RowKey"}[rng.IntN(2)]
			return Comparison{Property: prop, Op: Op(1 + rng.IntN(6)), Value: Int32Value(1)}
		}
		prop := []string{"PartitionKey", "RowKey"}[rng.IntN(2)]
		return Comparison{Property: prop, Op: Op(1 + rng.IntN(6)), Value: StringValue(randKey(rng))}
	}
	switch rng.IntN(3) {
	case 0:
		return Not{X: randFilter(rng, depth-1)}
	case 1:
		return And{Terms: []Expr{randFilter(rng, depth-1), randFilter(rng, depth-1), randFilter(rng, depth-1)}[:2+rng.IntN(2)]}
	}
	return Or{Terms: []Expr{randFilter(rng, depth-1), randFilter(rng, depth-1), randFilter(rng, depth-1)}[:2+rng.IntN(2)]}
}

// TestRangesProperty: for random filters over the keys and random entities,
// every entity the predicate accepts lies in exactly one range, and the
// ranges are sorted and disjoint.
func TestRangesProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ents []rec
	for range 300 {
		ents = append(ents, entity("PartitionKey", StringValue(randKey(rng)), "RowKey", StringValue(randKey(rng)),
			"Foo", Int32Value(int32(rng.IntN(3)))))
	}
	for i := range 3000 {
		e := randFilter(rng, 4)
		// Go through text, as a caller would.
		parsed, err := Parse(e.String())
		require.NoError(t, err, "filter %d: %s", i, e)
		p := Compile(parsed)
		rs := Ranges(parsed)
		require.NotNil(t, rs)
		checkSortedDisjoint(t, rs)
		for _, r := range ents {
			n := 0
			for _, k := range rs {
				if k.Contains(r[0].v.Str, r[1].v.Str) {
					n++
				}
			}
			// Plain ifs: testify's reflection is too slow for this loop.
			if n > 1 {
				t.Fatalf("filter %s: key (%q, %q) in %d ranges %v", parsed, r[0].v.Str, r[1].v.Str, n, rs)
			}
			if p.Match(r) && n != 1 {
				t.Fatalf("filter %s matches (%q, %q) outside ranges %v", parsed, r[0].v.Str, r[1].v.Str, rs)
			}
		}
	}
}

func TestKeyRangeString(t *testing.T) {
	assert.Equal(t, `PartitionKey ["a", "a"] RowKey ("m", +inf)`, pkrk("a", excl("m"), Bound{}).String())
	assert.Equal(t, `PartitionKey (-inf, +inf)`, KeyRange{}.String())
}
