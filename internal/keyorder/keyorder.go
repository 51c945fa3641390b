// Package keyorder is the order in which the Azure Table service sorts keys and compares
// strings: by UTF-16 code units, as .NET's ordinal comparison does, not by the UTF-8 bytes Go
// compares. The order has one definition, Weight, a byte permutation under which plain byte
// order is UTF-16 order for valid UTF-8 (storage's key encoding, and bench's baseline, which
// writes the same keys), and two comparisons of strings: CompareKeys, the weighed bytes
// compared without building them (partition's range index, which so orders keys exactly as
// the store does), and Compare, which also gives invalid UTF-8 the order its UTF-16
// conversion has (odata's string comparisons, on values a Go caller may pass).
//
// UTF-8 byte order equals code-point order, and code-point order equals UTF-16 order except
// in one place: a supplementary character (U+10000 and up) becomes a surrogate pair, whose
// first unit (0xD800–0xDBFF) sorts before U+E000–U+FFFF, while in UTF-8 its lead byte
// (0xF0–0xF4) sorts after theirs (0xEE, 0xEF).
package keyorder

import (
	"strings"
	"unicode/utf8"
)

// FirstMoved is the smallest byte Weight changes: every byte below it is its own weight, so
// text made of such bytes (ASCII, and every character below U+E000) is its own encoding.
const FirstMoved = 0xEE

// weight and unweight are the byte permutation: 0xF0–0xF4, the lead bytes of supplementary
// characters, move down to 0xEE–0xF2, and 0xEE, 0xEF, the lead bytes of U+E000–U+FFFF, move
// above them to 0xF3, 0xF4. Every other byte keeps its value. Continuation bytes (0x80–0xBF)
// never fall in that span, so the mapping applies to every byte without parsing UTF-8, and as
// a bijection it round-trips any byte string. storage persists keys in this form: the
// permutation must never change.
var weight, unweight [256]byte

func init() {
	for i := range weight {
		weight[i] = byte(i)
	}
	for b := 0xF0; b <= 0xF4; b++ {
		weight[b] = byte(b - 2)
	}
	weight[0xEE], weight[0xEF] = 0xF3, 0xF4
	for i, w := range weight {
		unweight[w] = byte(i)
	}
}

// Weight maps a byte of a string to its weight: two valid UTF-8 strings, mapped byte by byte,
// compare bytewise as Compare compares them. (On invalid UTF-8 the two may differ; storage
// only needs a bijection there, and the root package rejects such keys.)
func Weight(c byte) byte { return weight[c] }

// Unweight is Weight's inverse.
func Unweight(w byte) byte { return unweight[w] }

// CompareKeys compares a and b byte by byte, each byte by its Weight: the order of their
// encodings in storage. For valid UTF-8, which every key the root package accepts is, it is
// Compare's order, at the cost of a byte comparison. It returns -1, 0 or +1.
func CompareKeys(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		switch {
		case len(a) < len(b):
			return -1
		case len(a) > len(b):
			return 1
		}
		return 0
	}
	if weight[a[i]] < weight[b[i]] {
		return -1
	}
	return 1
}

// Compare compares a and b by UTF-16 code units. It returns -1, 0 or +1.
//
// Strings that are not valid UTF-8, which the service never sees (its strings are UTF-16) but
// a Go caller can pass, compare as their UTF-16 conversion would: each invalid byte reads as
// U+FFFD. Strings that still tie are ordered by their bytes, so the order is total and 0
// means a == b.
//
// It compares bytes and looks at the two runes only where the strings first differ.
func Compare(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		if len(a) == len(b) {
			return 0
		}
		// One is a prefix of the other: shorter first, unless the shorter ends in a broken
		// sequence that the longer completes.
		if n > 0 && a[n-1] >= utf8.RuneSelf {
			if r, size := utf8.DecodeLastRuneInString(a[:n]); r == utf8.RuneError && size == 1 {
				return compareSlow(a, b)
			}
		}
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	x, y := a[i], b[i]
	if x < utf8.RuneSelf && y < utf8.RuneSelf {
		// Two ASCII bytes are whole runes in both strings, and the equal bytes before them
		// read the same (an ASCII byte ends any broken sequence alike in both).
		if x < y {
			return -1
		}
		return 1
	}
	// Back up to the start of the rune holding the first difference; the prefix is shared,
	// so for valid UTF-8 it is a rune boundary in both.
	start := i
	for start > 0 && start > i-(utf8.UTFMax-1) && !utf8.RuneStart(a[start]) {
		start--
	}
	ra, sa := utf8.DecodeRuneInString(a[start:])
	rb, sb := utf8.DecodeRuneInString(b[start:])
	if ra != rb && !(ra == utf8.RuneError && sa == 1) && !(rb == utf8.RuneError && sb == 1) {
		return compareInt(unitKey(ra), unitKey(rb))
	}
	return compareSlow(a, b)
}

// compareSlow compares rune by rune, invalid bytes reading as U+FFFD, and breaks ties by bytes.
func compareSlow(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ra, sa := utf8.DecodeRuneInString(a[i:])
		rb, sb := utf8.DecodeRuneInString(b[j:])
		if c := compareInt(unitKey(ra), unitKey(rb)); c != 0 {
			return c
		}
		i += sa
		j += sb
	}
	switch {
	case i < len(a):
		return 1
	case j < len(b):
		return -1
	}
	return strings.Compare(a, b)
}

// unitKey maps a rune to a number ordered like the rune's UTF-16 code units: BMP below the
// surrogates, then supplementary characters (their first unit is 0xD800–0xDBFF, and their
// order among themselves is their code-point order), then U+E000–U+FFFF.
func unitKey(r rune) int32 {
	if r >= 0xE000 && r <= 0xFFFF {
		return r + 0x200000
	}
	return r
}

func compareInt(a, b int32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
