package storage

import (
	"errors"

	"github.com/tabuladb/tabula/internal/keyorder"
)

// Keys are built from string parts so that comparing two encoded keys byte by byte gives the
// same answer as comparing their parts one after another by UTF-16 code units, which is the
// order the Azure Table service sorts and compares keys in.
//
// Each byte of a part is written as its keyorder.Weight: a byte permutation, under which UTF-8
// byte order becomes UTF-16 code-unit order, that leaves the key's length alone and, being a
// bijection, round-trips any byte string (internal/keyorder says why it works).
//
// Parts are separated by 0x00 0x01, and a 0x00 inside a part is written 0x00 0xFF. A part that
// is a prefix of another therefore sorts first, as it must, and 0x00 0x02 is a byte string
// greater than every key whose earlier parts end exactly there (see AppendPartEnd).

const (
	escapeByte = 0x00
	sepByte    = 0x01 // 0x00 0x01 separates parts
	nulByte    = 0xFF // 0x00 0xFF is an escaped 0x00 inside a part
	endByte    = 0x02 // 0x00 0x02 sorts after every continuation of a part
)

// errBadKey reports an encoded key that no sequence of AppendPart calls could have produced.
var errBadKey = errors.New("storage: malformed key")

// AppendPart appends s, encoded to sort in UTF-16 code-unit order, to dst. It writes no
// separator; use AppendSeparator between parts.
func AppendPart(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == escapeByte {
			dst = append(dst, escapeByte, nulByte)
			continue
		}
		dst = append(dst, keyorder.Weight(c))
	}
	return dst
}

// AppendSeparator ends a part that is followed by another.
func AppendSeparator(dst []byte) []byte { return append(dst, escapeByte, sepByte) }

// AppendPartEnd appends the smallest byte string that sorts after every key whose next part
// starts exactly at this point and has ended, that is after `…|part|separator|anything`.
// It is the exclusive upper bound of "all keys whose part equals the one just written".
func AppendPartEnd(dst []byte) []byte { return append(dst, escapeByte, endByte) }

// SuccessorOf appends the smallest byte string greater than key itself; as an exclusive
// upper bound it admits key but nothing after it, as a lower bound it excludes key.
func SuccessorOf(key []byte) []byte {
	out := make([]byte, len(key)+1)
	copy(out, key)
	return out
}

// NextPart decodes the part at the start of b and returns it with the rest of b after its
// separator. last reports that the part ran to the end of b (no separator followed).
func NextPart(b []byte) (part string, rest []byte, last bool, err error) {
	encoded, rest, last, err := CutPart(b)
	if err != nil {
		return "", nil, false, err
	}
	return DecodePart(encoded), rest, last, nil
}

// CutPart splits the encoded part at the start of b from the rest of b after its separator,
// without decoding it, so that callers can compare encoded parts (a scan over one partition
// sees the same PartitionKey again and again) before paying for a decode.
func CutPart(b []byte) (encoded, rest []byte, last bool, err error) {
	for i := 0; i < len(b); i++ {
		if b[i] != escapeByte {
			continue
		}
		if i+1 == len(b) {
			return nil, nil, false, errBadKey
		}
		switch b[i+1] {
		case nulByte:
			i++
		case sepByte:
			return b[:i], b[i+2:], false, nil
		default:
			return nil, nil, false, errBadKey
		}
	}
	return b, nil, true, nil
}

// IsPlainPart reports whether an encoded part is its own text, as most are: no byte of it
// is the escape or one that keyorder.Weight moves. Such a part decodes to a copy of itself,
// and a caller may read it in place instead.
func IsPlainPart(encoded []byte) bool {
	for _, c := range encoded {
		if c == escapeByte || c >= keyorder.FirstMoved {
			return false
		}
	}
	return true
}

// DecodePart decodes a part that CutPart returned.
func DecodePart(encoded []byte) string {
	if IsPlainPart(encoded) {
		return string(encoded)
	}
	buf := make([]byte, 0, len(encoded))
	for i := 0; i < len(encoded); i++ {
		c := encoded[i]
		if c == escapeByte { // CutPart guarantees an escaped NUL here
			buf = append(buf, 0)
			i++
			continue
		}
		buf = append(buf, keyorder.Unweight(c))
	}
	return string(buf)
}
