package partition

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// utf16Compare is the reference: encode both strings as UTF-16 and compare
// code units, as .NET's ordinal comparison does.
func utf16Compare(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func TestCompareKeysUTF16Order(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "a", -1},
		{"a", "b", -1},
		{"ab", "a", 1},
		{"Action", "action", -1},
		{"é", "z", 1},
		{"\uD7FF", "\U00010000", -1}, // below the surrogates: code point order
		// The case Go gets wrong: U+E000–U+FFFF sort after supplementary
		// characters in UTF-16, before them in UTF-8.
		{"\U0001F600", "\uFFFD", -1},
		{"\U0001F600", "\uE000", -1},
		{"\U0010FFFF", "\uFFFF", -1},
		{"x\U0001F600y", "x\uE000", -1},
		{"\uE000", "\uFFFF", -1},
		{"\U00010000", "\U0001F600", -1},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, compareKeys(c.a, c.b), "%q vs %q", c.a, c.b)
		assert.Equal(t, -c.want, compareKeys(c.b, c.a), "%q vs %q", c.b, c.a)
		assert.Equal(t, c.want, utf16Compare(c.a, c.b), "reference disagrees on %q vs %q", c.a, c.b)
	}
	// The pair that motivates the function: Go's order is the opposite.
	assert.Less(t, "\uFFFD", "\U0001F600")
	assert.True(t, lessKey("\U0001F600", "\uFFFD"))
}

func TestCompareKeysMatchesReferenceOnRandomStrings(t *testing.T) {
	alphabet := []rune{'a', 'b', 'z', 0x7F, 0xE9, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xEFFF, 0xF000, 0xFFFD, 0xFFFF,
		0x10000, 0x1F600, 0x10FFFF}
	r := rand.New(rand.NewPCG(7, 7))
	gen := func() string {
		var sb strings.Builder
		for range r.IntN(5) {
			sb.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		return sb.String()
	}
	keys := make([]string, 2000)
	for i := range keys {
		keys[i] = gen()
	}
	for i := 0; i+1 < len(keys); i++ {
		require.Equal(t, utf16Compare(keys[i], keys[i+1]), compareKeys(keys[i], keys[i+1]), "%q vs %q", keys[i], keys[i+1])
	}
	a := slices.Clone(keys)
	slices.SortFunc(a, compareKeys)
	b := slices.Clone(keys)
	slices.SortFunc(b, utf16Compare)
	assert.Equal(t, b, a)
}

func BenchmarkCompareKeys(b *testing.B) {
	x, y := "0000123456-events-2024", "0000123457-events-2024"
	for b.Loop() {
		compareKeys(x, y)
	}
}
