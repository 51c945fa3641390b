package wire

import (
	"strings"
	"testing"
)

// The word-at-a-time tests for bytes a JSON string must escape (a control character, a
// quote, a backslash) against the byte-by-byte rule: every byte value at every position of
// an otherwise plain word, with plain neighbours that are below, equal to and above the
// special ones (a borrow in the subtraction trick must not hide a special byte).
func TestPlainWordsFindEverySpecialByte(t *testing.T) {
	special := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }
	for _, fill := range []byte{'a', ' ', '!', '#', '[', ']', 0x7f, 0x80, 0xff} {
		for pos := range 32 {
			for c := range 256 {
				b := []byte(strings.Repeat(string([]byte{fill}), 32))
				b[pos] = byte(c)
				s := string(b)
				want := !special(byte(c)) && !special(fill)
				if got := plainWord32(s); got != want {
					t.Fatalf("plainWord32(%q) = %v", s, got)
				}
				if got := plainBytes32(b); got != want {
					t.Fatalf("plainBytes32(%q) = %v", s, got)
				}
				if w := pos / 8 * 8; plainWord(s[w:w+8]) != want || plainBytes(b[w:w+8]) != want {
					t.Fatalf("plainWord(%q) = %v, plainBytes = %v", s[w:w+8], plainWord(s[w:w+8]), plainBytes(b[w:w+8]))
				}
			}
		}
	}
}

// printableASCII against the byte-by-byte rule, the same way: every byte value at every
// position of a 13-byte string (a word and a tail), beside fills around 0x20 and 0x80.
func TestPrintableASCIIFindsEveryOtherByte(t *testing.T) {
	for _, fill := range []byte{'a', ' ', '!', 0x1f, 0x7f, 0x80, 0xff} {
		for pos := range 13 {
			for c := range 256 {
				b := []byte(strings.Repeat(string([]byte{fill}), 13))
				b[pos] = byte(c)
				printable := func(c byte) bool { return c >= 0x20 && c < 0x80 }
				if got, want := printableASCII(b), printable(byte(c)) && printable(fill); got != want {
					t.Fatalf("printableASCII(%q) = %v", b, got)
				}
			}
		}
	}
}
