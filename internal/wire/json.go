package wire

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Request bodies are flat JSON objects of scalars (an entity, or {"TableName":…}). A small
// scanner of its own, rather than encoding/json, keeps what the service's rules need and
// encoding/json discards: member order and duplicates, and the exact text of numbers (5 is
// an Int32, 5.0 a Double, and 9223372036854775808 must not silently round).

// Kind is the JSON type of a member's value.
type Kind uint8

// The kinds of scalar a request body holds.
const (
	KindString Kind = iota + 1
	KindNumber
	KindBool
	KindNull
)

// Member is one name/value pair of an object. For a string, Text is the decoded value; for a
// number, its literal text; for a boolean, "true" or "false"; for null, empty.
type Member struct {
	Name string
	Kind Kind
	Text string
}

type jsonError struct{ why string }

func (e *jsonError) Error() string { return "invalid JSON: " + e.why }

// ParseObject reads a JSON object whose values are all scalars, in member order, repeated
// names included. Nested objects and arrays are refused: no entity property can hold one.
func ParseObject(data []byte) ([]Member, error) {
	return appendObject(nil, data)
}

// appendObject is ParseObject appending to members.
func appendObject(members []Member, data []byte) ([]Member, error) {
	p := jsonParser{data: data}
	p.space()
	if !p.eat('{') {
		return nil, p.fail("expected an object")
	}
	p.space()
	if p.eat('}') {
		return members, p.end()
	}
	for {
		p.space()
		name, err := p.string()
		if err != nil {
			return nil, err
		}
		p.space()
		if !p.eat(':') {
			return nil, p.fail("expected ':'")
		}
		p.space()
		m := Member{Name: name}
		if m.Kind, m.Text, err = p.value(); err != nil {
			return nil, err
		}
		members = append(members, m)
		p.space()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return members, p.end()
		}
		return nil, p.fail("expected ',' or '}'")
	}
}

type jsonParser struct {
	data []byte
	pos  int
}

func (p *jsonParser) fail(why string) error {
	return &jsonError{why: why + " at offset " + strconv.Itoa(p.pos)}
}

func (p *jsonParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) eat(c byte) bool {
	if p.pos < len(p.data) && p.data[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *jsonParser) end() error {
	p.space()
	if p.pos != len(p.data) {
		return p.fail("unexpected data after the object")
	}
	return nil
}

func (p *jsonParser) literal(word string) bool {
	if len(p.data)-p.pos >= len(word) && string(p.data[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *jsonParser) value() (Kind, string, error) {
	if p.pos >= len(p.data) {
		return 0, "", p.fail("expected a value")
	}
	switch c := p.data[p.pos]; {
	case c == '"':
		s, err := p.string()
		return KindString, s, err
	case c == '-' || c >= '0' && c <= '9':
		s, err := p.number()
		return KindNumber, s, err
	case p.literal("true"):
		return KindBool, "true", nil
	case p.literal("false"):
		return KindBool, "false", nil
	case p.literal("null"):
		return KindNull, "", nil
	case c == '{' || c == '[':
		return 0, "", p.fail("nested objects and arrays are not entity values")
	}
	return 0, "", p.fail("expected a value")
}

// number checks the JSON number grammar and returns the literal.
func (p *jsonParser) number() (string, error) {
	start := p.pos
	p.eat('-')
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	switch {
	case p.eat('0'):
	case digits() == 0:
		return "", p.fail("malformed number")
	}
	if p.eat('.') && digits() == 0 {
		return "", p.fail("malformed number")
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if digits() == 0 {
			return "", p.fail("malformed number")
		}
	}
	return string(p.data[start:p.pos]), nil
}

// string reads a quoted string, decoding escapes. Invalid UTF-8 and lone surrogates are
// refused: the service stores UTF-16 text and cannot hold them either.
func (p *jsonParser) string() (string, error) {
	if !p.eat('"') {
		return "", p.fail("expected a string")
	}
	start := p.pos
	// Fastest path, for most strings: up to the next quote (found by bytes.IndexByte, which
	// the CPU's vector instructions run) there is no backslash, and every byte is printable
	// ASCII, so the string ends there and is valid UTF-8 without utf8.Valid's pass.
	if q := bytes.IndexByte(p.data[start:], '"'); q >= 0 {
		s := p.data[start : start+q]
		if bytes.IndexByte(s, '\\') < 0 && printableASCII(s) {
			p.pos = start + q + 1
			return string(s), nil
		}
	}
	// Fast path: no escapes, skipped 32 or eight bytes at a time.
	for p.pos < len(p.data) {
		for p.pos+32 <= len(p.data) && plainBytes32(p.data[p.pos:p.pos+32]) {
			p.pos += 32
		}
		for p.pos+8 <= len(p.data) && plainBytes(p.data[p.pos:p.pos+8]) {
			p.pos += 8
		}
		if p.pos == len(p.data) {
			break
		}
		c := p.data[p.pos]
		if c == '"' {
			s := p.data[start:p.pos]
			p.pos++
			if !utf8.Valid(s) {
				return "", p.fail("string is not valid UTF-8")
			}
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	buf := append([]byte(nil), p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			if !utf8.Valid(buf) {
				return "", p.fail("string is not valid UTF-8")
			}
			return string(buf), nil
		case c < 0x20:
			return "", p.fail("control character in string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		p.pos++
		if p.pos >= len(p.data) {
			break
		}
		e := p.data[p.pos]
		p.pos++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.fail("malformed \\u escape")
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || !p.eat('\\') || !p.eat('u') {
					return "", p.fail("lone surrogate in string")
				}
				r2, ok := p.hex4()
				if r = utf16.DecodeRune(r, r2); !ok || r == utf8.RuneError {
					return "", p.fail("lone surrogate in string")
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", p.fail("unknown escape")
		}
	}
	return "", p.fail("unterminated string")
}

// printableASCII reports whether every byte of b is at least 0x20 and below 0x80: no
// control character, no byte of multi-byte UTF-8. It tests eight bytes at once: a byte
// below 0x20 is the lowest to borrow in x - 0x20…, setting its own high bit, and a byte from
// 0x80 has its high bit set in x.
func printableASCII(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if ((x-0x20*ones)|x)&highs != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

func (p *jsonParser) hex4() (rune, bool) {
	if len(p.data)-p.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

// AppendString writes s as a JSON string, escaping only what JSON requires.
func AppendString(b []byte, s string) []byte {
	return append(AppendStringContent(append(b, '"'), s), '"')
}

// AppendStringContent writes s escaped as inside a JSON string, without the quotes:
// escaping goes byte by byte, so a string written in pieces reads as their concatenation
// would.
func AppendStringContent(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		for i+32 <= len(s) && plainWord32(s[i:i+32]) {
			i += 32
		}
		for i+8 <= len(s) && plainWord(s[i:i+8]) {
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	return append(b, s[start:]...)
}

// StringSize is len(AppendString(nil, s)), counted without writing: the quotes, \" and \\,
// two-character escapes for \b \f \n \r \t and \u00XX for other control characters.
func StringSize(s string) int {
	n, i := 2+len(s), 0
	for i+32 <= len(s) && plainWord32(s[i:i+32]) {
		i += 32
	}
	for i+8 <= len(s) && plainWord(s[i:i+8]) {
		i += 8
	}
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// plainWord reports whether none of the eight bytes of s needs escaping in a JSON string:
// none is below 0x20, a quote or a backslash (bytes of multi-byte UTF-8 are all above 0x7F).
func plainWord(s string) bool { return plain8(load8(s)) }

// plainWord32 is plainWord for the first 32 bytes of s, tested at once.
func plainWord32(s string) bool {
	_ = s[31]
	return special8(load8(s[0:8]))|special8(load8(s[8:16]))|special8(load8(s[16:24]))|special8(load8(s[24:32])) == 0
}

func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// plainBytes is plainWord for the first eight bytes of b.
func plainBytes(b []byte) bool { return plain8(binary.LittleEndian.Uint64(b)) }

// plainBytes32 is plainWord32 for the first 32 bytes of b.
func plainBytes32(b []byte) bool {
	_ = b[31]
	return special8(binary.LittleEndian.Uint64(b[0:8]))|special8(binary.LittleEndian.Uint64(b[8:16]))|
		special8(binary.LittleEndian.Uint64(b[16:24]))|special8(binary.LittleEndian.Uint64(b[24:32])) == 0
}

// plain8 is plainWord for eight bytes read as a little-endian word.
func plain8(x uint64) bool { return special8(x) == 0 }

// special8 has the high bit of each byte of x that needs escaping set (and perhaps of the
// bytes after it: only zero means none).
func special8(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	control := (x - 0x20*ones) & ^x & highs // a byte below 0x20
	q := x ^ ('"' * ones)
	quote := (q - ones) & ^q & highs // a zero byte of q: a quote
	bs := x ^ ('\\' * ones)
	backslash := (bs - ones) & ^bs & highs
	return control | quote | backslash
}
