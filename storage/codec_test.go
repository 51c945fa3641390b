package storage

import (
	"bytes"
	"cmp"
	"slices"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compareUTF16 is the service's order, computed the slow and obvious way.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func compareTuples(a, b [2]string) int {
	return cmp.Or(compareUTF16(a[0], b[0]), compareUTF16(a[1], b[1]))
}

func encodeTuple(t [2]string) []byte {
	k := AppendPart([]byte("p"), t[0])
	k = AppendSeparator(k)
	return AppendPart(k, t[1])
}

func decodeTuple(t *testing.T, k []byte) [2]string {
	t.Helper()
	require.Equal(t, byte('p'), k[0])
	first, rest, last, err := NextPart(k[1:])
	require.NoError(t, err)
	require.False(t, last)
	second, rest, last, err := NextPart(rest)
	require.NoError(t, err)
	require.True(t, last)
	require.Empty(t, rest)
	return [2]string{first, second}
}

func TestPartOrderIsUTF16Order(t *testing.T) {
	// Ascending in UTF-16 code-unit order. Go's string order puts U+FF5E before U+1F600.
	ordered := []string{
		"", "\x00", "\x00\x00", "\x01", "A", "Z", "a", "a\x00", "a\x01", "ab", "\u007f", "\u0080",
		"\u07ff", "\u0800", "\ud7ff", "\U00010000", "\U0001F600", "\U0001F600a", "\U0010FFFF",
		"\ue000", "\uff5e", "\uffff",
	}
	for i := range ordered {
		for j := range ordered {
			a, b := ordered[i], ordered[j]
			want := cmp.Compare(i, j)
			require.Equal(t, want, compareUTF16(a, b), "reference order of %q and %q", a, b)
			got := bytes.Compare(AppendPart(nil, a), AppendPart(nil, b))
			assert.Equal(t, want, got, "encoded order of %q and %q", a, b)
		}
	}
	assert.Equal(t, -1, bytes.Compare(AppendPart(nil, "\U0001F600"), AppendPart(nil, "\uff5e")))
	assert.Equal(t, 1, cmp.Compare("\U0001F600", "\uff5e"), "Go's own order differs, which is why the codec exists")
}

func TestTupleOrderAndRoundTrip(t *testing.T) {
	parts := []string{"", "\x00", "a", "a\x00", "a\x00b", "ab", "b", "\U0001F600", "\uff5e"}
	var tuples [][2]string
	for _, a := range parts {
		for _, b := range parts {
			tuples = append(tuples, [2]string{a, b})
		}
	}
	for _, x := range tuples {
		assert.Equal(t, x, decodeTuple(t, encodeTuple(x)))
		for _, y := range tuples {
			assert.Equal(t, compareTuples(x, y), bytes.Compare(encodeTuple(x), encodeTuple(y)), "%q vs %q", x, y)
		}
	}
}

func TestPartBounds(t *testing.T) {
	// Every key of part "a" lies in [a, a|end); keys of "a\x00" and "ab" lie above it.
	lower := AppendPart(nil, "a")
	upper := AppendPartEnd(AppendPart(nil, "a"))
	for _, rk := range []string{"", "\x00", "z", "\uffff", "\U0010FFFF"} {
		k := encodeTuple([2]string{"a", rk})[1:]
		assert.True(t, bytes.Compare(lower, k) <= 0 && bytes.Compare(k, upper) < 0, "a|%q", rk)
	}
	for _, pk := range []string{"a\x00", "ab", "a\U0001F600", "b"} {
		k := encodeTuple([2]string{pk, ""})[1:]
		assert.Positive(t, bytes.Compare(k, upper), "%q", pk)
	}
	k := []byte("key")
	assert.Equal(t, []byte("key\x00"), SuccessorOf(k))
	assert.Equal(t, []byte("key"), k, "SuccessorOf must not modify its argument")
}

func TestNextPartRejectsMalformedKeys(t *testing.T) {
	for _, k := range [][]byte{{0x00}, {'a', 0x00}, {0x00, 0x02}, {'a', 0x00, 0x03, 'b'}} {
		_, _, _, err := NextPart(k)
		assert.ErrorIs(t, err, errBadKey, "%x", k)
	}
}

func FuzzPartCodec(f *testing.F) {
	seeds := [][2]string{{"", ""}, {"a", "b"}, {"\U0001F600", "\uff5e"}, {"\x00", "\x00\x01"}, {"\xff\xfe", "\xee\xf0"}}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		// Any byte string round-trips, valid UTF-8 or not.
		for _, s := range []string{a, b} {
			enc := AppendPart(nil, s)
			got, rest, last, err := NextPart(enc)
			if err != nil || got != s || len(rest) != 0 || !last {
				t.Fatalf("round trip of %q: got %q, %v", s, got, err)
			}
		}
		x, y := [2]string{a, b}, [2]string{b, a}
		if got := decodeTuple(t, encodeTuple(x)); got != x {
			t.Fatalf("tuple round trip of %q: got %q", x, got)
		}
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // the service's order is defined on text only
		}
		if want, got := compareUTF16(a, b), bytes.Compare(AppendPart(nil, a), AppendPart(nil, b)); want != got {
			t.Fatalf("order of %q and %q: want %d, got %d", a, b, want, got)
		}
		if want, got := compareTuples(x, y), bytes.Compare(encodeTuple(x), encodeTuple(y)); want != got {
			t.Fatalf("tuple order of %q and %q: want %d, got %d", x, y, want, got)
		}
	})
}

// A part is plain (its encoding is its text, which a scan reads in place) exactly when
// decoding it gives it back, for every byte; most bytes are.
func TestIsPlainPart(t *testing.T) {
	plain := 0
	for c := range 256 {
		text := string([]byte{'r', byte(c), 'k'})
		enc := AppendPart(nil, text)
		if IsPlainPart(enc) {
			plain++
			assert.Equal(t, text, string(enc), "byte %#x", c)
		}
		assert.Equal(t, text, DecodePart(enc), "byte %#x", c)
	}
	assert.Greater(t, plain, 200, "most bytes are their own encoding")
}
