package storage

import "errors"

// Keys are built from string parts so that comparing two encoded keys byte by byte gives the
// same answer as comparing their parts one after another by UTF-16 code units, which is the
// order the Azure Table service sorts and compares keys in.
//
// UTF-8 byte order already equals UTF-16 code-unit order except in one place: characters
// U+E000–U+FFFF (UTF-8 lead bytes 0xEE, 0xEF) sort after supplementary characters in UTF-16,
// because those become surrogates (0xD800–0xDFFF), but before them in UTF-8 (lead bytes
// 0xF0–0xF4). Rotating the byte values 0xEE–0xF4 fixes it without growing the key:
//
//	0xF0..0xF4 → 0xEE..0xF2   (supplementary characters move down)
//	0xEE, 0xEF → 0xF3, 0xF4   (U+E000–U+FFFF move above them)
//
// Continuation bytes (0x80–0xBF) never fall in that span, so the mapping can be applied to
// every byte without parsing UTF-8; it is a bijection, so any byte string round-trips.
//
// Parts are separated by 0x00 0x01, and a 0x00 inside a part is written 0x00 0xFF. A part that
// is a prefix of another therefore sorts first, as it must, and 0x00 0x02 is a byte string
// greater than every key whose earlier parts end exactly there (see PartEnd).

// remap and unmap are the byte permutation described above.
var remap, unmap [256]byte

func init() {
	for i := range remap {
		remap[i] = byte(i)
	}
	for b := 0xF0; b <= 0xF4; b++ {
		remap[b] = byte(b - 2)
	}
	remap[0xEE], remap[0xEF] = 0xF3, 0xF4
	for i, v := range remap {
		unmap[v] = byte(i)
	}
}

const (
	escapeByte = 0x00
	sepByte    = 0x01 // 0x00 0x01 separates parts
	nulByte    = 0xFF // 0x00 0xFF is an escaped 0x00 inside a part
	endByte    = 0x02 // 0x00 0x02 sorts after every continuation of a part
)

// ErrBadKey reports an encoded key that no sequence of AppendPart calls could have produced.
var ErrBadKey = errors.New("storage: malformed key")

// AppendPart appends s, encoded to sort in UTF-16 code-unit order, to dst. It writes no
// separator; use AppendSeparator between parts.
func AppendPart(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == escapeByte {
			dst = append(dst, escapeByte, nulByte)
			continue
		}
		dst = append(dst, remap[c])
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
			return nil, nil, false, ErrBadKey
		}
		switch b[i+1] {
		case nulByte:
			i++
		case sepByte:
			return b[:i], b[i+2:], false, nil
		default:
			return nil, nil, false, ErrBadKey
		}
	}
	return b, nil, true, nil
}

// DecodePart decodes a part that CutPart returned.
func DecodePart(encoded []byte) string {
	clean := true
	for _, c := range encoded {
		if c == escapeByte || c >= 0xEE {
			clean = false
			break
		}
	}
	if clean { // the common case: the encoding is the text itself
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
		buf = append(buf, unmap[c])
	}
	return string(buf)
}
