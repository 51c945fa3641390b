package keyorder

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reference is the order computed the slow and obvious way: convert both strings to UTF-16
// (invalid bytes become U+FFFD, as []rune makes them) and compare code units, as .NET's
// ordinal comparison does; break ties by bytes.
func reference(a, b string) int {
	if c := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b))); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// weighed is s with every byte mapped by Weight.
func weighed(s string) []byte {
	out := make([]byte, len(s))
	for i := range len(s) {
		out[i] = Weight(s[i])
	}
	return out
}

func TestCompare(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "a", -1},
		{"a", "b", -1},
		{"ab", "a", 1},
		{"B", "a", -1},
		{"Action", "action", -1},
		{"é", "z", 1},
		{"€", "😀", -1},
		{"\uD7FF", "\U00010000", -1}, // below the surrogates: code-point order
		// The case Go gets wrong: U+E000–U+FFFF sort after supplementary characters in
		// UTF-16, before them in UTF-8.
		{"😀", "～", -1}, // 0xD83D < 0xFF5E
		{"\U0001F600", "\uFFFD", -1},
		{"\U0001F600", "\uE000", -1},
		{"\U0010FFFF", "\uFFFF", -1},
		{"x\U0001F600y", "x\uE000", -1},
		{"a😀b", "a～", -1},
		{"\uE000", "\uFFFF", -1},
		{"\U00010000", "\U0001F600", -1},
		{"😀", "😁", -1},
		// Invalid UTF-8 reads as U+FFFD per byte, ties broken by bytes.
		{"\xff", "\uFFFD", 1},           // U+FFFD either way; bytes 0xFF > 0xEF
		{"\xff", "😀", 1},                // U+FFFD after a surrogate pair
		{"\xe2\x82", "\xe2\x82\xac", 1}, // U+FFFD U+FFFD against €: not a plain prefix
		{"\xff", "\xfe", 1},
		{"a\xff", "a\xffb", -1},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, reference(c.a, c.b), "reference order of %q and %q", c.a, c.b)
		assert.Equal(t, c.want, Compare(c.a, c.b), "%q vs %q", c.a, c.b)
		assert.Equal(t, -c.want, Compare(c.b, c.a), "%q vs %q", c.b, c.a)
		if utf8.ValidString(c.a) && utf8.ValidString(c.b) {
			assert.Equal(t, c.want, bytes.Compare(weighed(c.a), weighed(c.b)), "weighed %q vs %q", c.a, c.b)
			assert.Equal(t, c.want, CompareKeys(c.a, c.b), "CompareKeys(%q, %q)", c.a, c.b)
			assert.Equal(t, -c.want, CompareKeys(c.b, c.a), "CompareKeys(%q, %q)", c.b, c.a)
		}
	}
	// The pair that motivates the package: Go's order is the opposite.
	assert.Less(t, "\uFFFD", "\U0001F600")
	assert.Equal(t, -1, Compare("\U0001F600", "\uFFFD"))
}

func TestWeightIsAPermutationThatMovesOnlyLeadBytesFromFirstMoved(t *testing.T) {
	seen := map[byte]bool{}
	for i := range 256 {
		c := byte(i)
		w := Weight(c)
		assert.False(t, seen[w], "weight %#x given twice", w)
		seen[w] = true
		assert.Equal(t, c, Unweight(w), "Unweight(Weight(%#x))", c)
		if c < FirstMoved {
			assert.Equal(t, c, w, "byte %#x below FirstMoved moved", c)
		}
	}
	assert.NotEqual(t, byte(FirstMoved), Weight(FirstMoved))
	// The persisted key format: these values must never change.
	assert.Equal(t, []byte{0xF3, 0xF4, 0xEE, 0xEF, 0xF0, 0xF1, 0xF2, 0xF5, 0xFF},
		[]byte{Weight(0xEE), Weight(0xEF), Weight(0xF0), Weight(0xF1), Weight(0xF2), Weight(0xF3), Weight(0xF4), Weight(0xF5), Weight(0xFF)})
}

// randomString draws from characters at the edges where the orders differ, and, when
// invalid is set, from bytes that break UTF-8.
func randomString(r *rand.Rand, invalid bool) string {
	alphabet := []string{"a", "b", "z", "\x00", "\u007f", "é", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\uefff",
		"\uf000", "\ufffd", "\uffff", "\U00010000", "\U0001F600", "\U0010FFFF"}
	broken := []string{"\xff", "\xfe", "\xee", "\xef", "\xf0", "\xf4", "\xe2\x82", "\x80", "\xed\xa0\x80"}
	var sb strings.Builder
	for range r.IntN(6) {
		if invalid && r.IntN(4) == 0 {
			sb.WriteString(broken[r.IntN(len(broken))])
		} else {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
	}
	return sb.String()
}

func TestCompareMatchesReferenceOnRandomStrings(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, invalid := range []bool{false, true} {
		keys := make([]string, 3000)
		for i := range keys {
			keys[i] = randomString(r, invalid)
		}
		for i := 0; i+1 < len(keys); i++ {
			a, b := keys[i], keys[i+1]
			require.Equal(t, reference(a, b), Compare(a, b), "%q vs %q", a, b)
			require.Equal(t, bytes.Compare(weighed(a), weighed(b)), CompareKeys(a, b), "CompareKeys(%q, %q)", a, b)
			if !invalid {
				require.Equal(t, reference(a, b), bytes.Compare(weighed(a), weighed(b)), "weighed %q vs %q", a, b)
			}
		}
		got := slices.Clone(keys)
		slices.SortFunc(got, Compare)
		want := slices.Clone(keys)
		slices.SortFunc(want, reference)
		assert.Equal(t, want, got)
	}
}

// FuzzCompare checks Compare against the reference and checks that it is a total order;
// checks CompareKeys against the weighed bytes; and on valid UTF-8 checks that the two orders
// are the same.
func FuzzCompare(f *testing.F) {
	for _, s := range []string{"", "a", "ab", "～", "😀", "\uE000", "\uD7FF", "a😀", "\xff", "\xe2\x82", "€"} {
		for _, t := range []string{"", "a", "～", "😀", "\xff\xfe", "\xe2\x82\xac"} {
			f.Add(s, t)
		}
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		got := Compare(a, b)
		if want := reference(a, b); got != want {
			t.Fatalf("Compare(%q, %q) = %d, want %d", a, b, got, want)
		}
		if back := Compare(b, a); back != -got {
			t.Fatalf("not antisymmetric: %q vs %q: %d and %d", a, b, got, back)
		}
		if (got == 0) != (a == b) {
			t.Fatalf("Compare(%q, %q) = %d", a, b, got)
		}
		w := bytes.Compare(weighed(a), weighed(b))
		if k := CompareKeys(a, b); k != w {
			t.Fatalf("CompareKeys(%q, %q) = %d, the weighed bytes compare %d", a, b, k, w)
		}
		if utf8.ValidString(a) && utf8.ValidString(b) && w != got {
			t.Fatalf("weighed order of %q and %q is %d, Compare says %d", a, b, w, got)
		}
	})
}

func BenchmarkCompare(b *testing.B) {
	for _, c := range []struct{ name, x, y string }{
		{"ascii", "0000123456-events-2024", "0000123457-events-2024"},
		{"equal", "0000123456-events-2024", "0000123456-events-2024"},
		{"supplementary", "events-\U0001F600", "events-\uFF5E"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				Compare(c.x, c.y)
			}
		})
		b.Run(c.name+"/keys", func(b *testing.B) {
			for b.Loop() {
				CompareKeys(c.x, c.y)
			}
		})
	}
}
