package partition

// compareKeys orders PartitionKeys the way the service does: by UTF-16 code
// units, not by Go's UTF-8 bytes. It returns -1, 0 or +1.
//
// The two orders differ in one case only: a character in U+E000–U+FFFF
// against a supplementary character (U+10000 and up). In UTF-16 the latter
// starts with a surrogate (0xD800–0xDBFF) and so sorts first; in UTF-8 its
// lead byte (0xF0–0xF4) is larger than the lead byte of U+E000–U+FFFF
// (0xEE–0xEF), so Go sorts it last. Every other pair already compares alike.
//
// So the comparison is a plain byte-wise one with the bytes 0xEE–0xFF
// permuted so that 0xF0–0xFF come before 0xEE–0xEF. Those bytes only ever
// appear as lead bytes in valid UTF-8, where two strings with an equal prefix
// are at the same position within a character, so the permutation yields the
// UTF-16 order exactly. Being a fixed byte permutation applied
// lexicographically, it is also a total order on invalid UTF-8, which the
// root package rejects before it reaches here anyway.
func compareKeys(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x >= 0xEE && y >= 0xEE {
			x, y = utf16Weight(x), utf16Weight(y)
		}
		if x < y {
			return -1
		}
		return 1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// utf16Weight permutes the bytes 0xEE–0xFF: 0xF0–0xFF map to 0xEE–0xFD and
// 0xEE–0xEF to 0xFE–0xFF. Bytes below 0xEE keep their value.
func utf16Weight(c byte) byte {
	if c >= 0xF0 {
		return c - 2
	}
	if c >= 0xEE {
		return c + 0x10
	}
	return c
}

// lessKey reports whether a sorts before b in the service's key order.
func lessKey(a, b string) bool { return compareKeys(a, b) < 0 }
