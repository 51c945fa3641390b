package server

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Request bodies are flat JSON objects of scalars (an entity, or {"TableName":…}). A small
// scanner of its own, rather than encoding/json, keeps what the service's rules need and
// encoding/json discards: member order and duplicates, and the exact text of numbers (5 is
// an Int32, 5.0 a Double, and 9223372036854775808 must not silently round).

type jsonKind uint8

const (
	jsonString jsonKind = iota + 1
	jsonNumber
	jsonBool
	jsonNull
)

// jsonMember is one name/value pair. For a string, text is the decoded value; for a number,
// its literal text; for a boolean, "true" or "false".
type jsonMember struct {
	name string
	kind jsonKind
	text string
}

type jsonError struct{ why string }

func (e *jsonError) Error() string { return "invalid JSON: " + e.why }

// parseObject reads a JSON object whose values are all scalars. Nested objects and arrays
// are refused: no entity property can hold one.
func parseObject(data []byte) ([]jsonMember, error) {
	p := jsonParser{data: data}
	p.space()
	if !p.eat('{') {
		return nil, p.fail("expected an object")
	}
	var members []jsonMember
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
		m := jsonMember{name: name}
		if m.kind, m.text, err = p.value(); err != nil {
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

func (p *jsonParser) value() (jsonKind, string, error) {
	if p.pos >= len(p.data) {
		return 0, "", p.fail("expected a value")
	}
	switch c := p.data[p.pos]; {
	case c == '"':
		s, err := p.string()
		return jsonString, s, err
	case c == '-' || c >= '0' && c <= '9':
		s, err := p.number()
		return jsonNumber, s, err
	case p.literal("true"):
		return jsonBool, "true", nil
	case p.literal("false"):
		return jsonBool, "false", nil
	case p.literal("null"):
		return jsonNull, "", nil
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
