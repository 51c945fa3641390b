package odata

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The lexer follows the WCF Data Services ExpressionLexer, which the service
// runs: the same token set (including OData tokens Table storage then
// rejects), the same character classes (.NET Char.IsWhiteSpace, IsLetter,
// IsDigit on UTF-16 code units, so a supplementary character is never part of
// an identifier), and the same error positions.

type tokKind uint8

const (
	tEnd tokKind = iota
	tOpen
	tClose
	tComma
	tMinus
	tEqual
	tSlash
	tQuestion
	tDot
	tStar
	tIdent
	tString
	tBool
	tNull
	tInt32
	tInt64
	tDouble
	tSingle
	tDecimal
	tDateTime
	tGuid
	tBinary
	tOtherTyped // datetimeoffset'…', time'…', geography'…', geometry'…'
)

type token struct {
	kind       tokKind
	start, end int // byte offsets into the filter
}

type lexer struct {
	src string
	pos int // byte offset of the next unread character
	tok token
}

// ch returns the character at pos as .NET would see it: supplementary
// characters come back as utf8.RuneError so that no class accepts them.
func (l *lexer) ch() (r rune, size int) {
	if l.pos >= len(l.src) {
		return 0, 0
	}
	r, size = utf8.DecodeRuneInString(l.src[l.pos:])
	if r >= 0x10000 {
		r = utf8.RuneError
	}
	return r, size
}

func (l *lexer) peekByte() byte {
	if l.pos < len(l.src) {
		return l.src[l.pos]
	}
	return 0
}

func isSpace(r rune) bool  { return r != 0 && unicode.IsSpace(r) }
func isDigit(r rune) bool  { return r != utf8.RuneError && unicode.IsDigit(r) }
func isLetter(r rune) bool { return r != utf8.RuneError && unicode.IsLetter(r) }

func (l *lexer) text(t token) string { return l.src[t.start:t.end] }

// next reads the following token into l.tok.
func (l *lexer) next() *Error {
	for {
		r, size := l.ch()
		if !isSpace(r) {
			break
		}
		l.pos += size
	}
	start := l.pos
	kind, err := l.scan()
	if err != nil {
		return err
	}
	l.tok = token{kind: kind, start: start, end: l.pos}
	return nil
}

func (l *lexer) scan() (tokKind, *Error) {
	if l.pos >= len(l.src) {
		return tEnd, nil
	}
	r, _ := l.ch()
	switch r {
	case '(':
		l.pos++
		return tOpen, nil
	case ')':
		l.pos++
		return tClose, nil
	case ',':
		l.pos++
		return tComma, nil
	case '=':
		l.pos++
		return tEqual, nil
	case '/':
		l.pos++
		return tSlash, nil
	case '?':
		l.pos++
		return tQuestion, nil
	case '.':
		l.pos++
		return tDot, nil
	case '*':
		l.pos++
		return tStar, nil
	case '\'':
		return l.scanString()
	case '-':
		return l.scanMinus()
	}
	if isLetter(r) || r == '_' {
		return l.scanIdentifier()
	}
	if isDigit(r) {
		return l.scanNumber()
	}
	// Any other character is invalid where it stands; the lexer reports
	// its own position.
	return 0, syntaxError(l.src, l.pos)
}

// scanString reads '…' with ” as an escaped quote. An unterminated string
// fails at the end of the text, where the lexer stopped.
func (l *lexer) scanString() (tokKind, *Error) {
	for {
		l.pos++ // the opening quote, or the second quote of ''
		i := strings.IndexByte(l.src[l.pos:], '\'')
		if i < 0 {
			l.pos = len(l.src)
			return 0, syntaxError(l.src, l.pos)
		}
		l.pos += i + 1
		if l.peekByte() != '\'' {
			return tString, nil
		}
	}
}

// scanMinus: "-" directly followed by a digit starts a negative number, "-INF"
// is a Double; anything else is the unary minus operator.
func (l *lexer) scanMinus() (tokKind, *Error) {
	start := l.pos
	l.pos++
	r, _ := l.ch()
	if isDigit(r) {
		return l.scanNumber()
	}
	if r == 'I' {
		l.skipIdentifier()
		switch l.src[start+1 : l.pos] {
		case "INF":
			return tDouble, nil
		case "INFf", "INFF":
			return tSingle, nil
		}
		l.pos = start + 1
	}
	return tMinus, nil
}

func (l *lexer) skipIdentifier() {
	for {
		r, size := l.ch()
		if !(isLetter(r) || isDigit(r) || r == '_') {
			return
		}
		l.pos += size
	}
}

// typePrefixes are the identifiers that, followed directly by a quote, start
// a typed literal. WCF compares them case-insensitively (and X only as x/X).
var typePrefixes = map[string]tokKind{
	"datetime":       tDateTime,
	"guid":           tGuid,
	"binary":         tBinary,
	"datetimeoffset": tOtherTyped,
	"time":           tOtherTyped,
	"geography":      tOtherTyped,
	"geometry":       tOtherTyped,
}

func (l *lexer) scanIdentifier() (tokKind, *Error) {
	start := l.pos
	l.skipIdentifier()
	word := l.src[start:l.pos]
	if l.peekByte() == '\'' {
		kind, ok := typePrefixes[strings.ToLower(word)]
		if word == "X" || word == "x" {
			kind, ok = tBinary, true
		}
		if ok {
			// The literal runs to the next quote; it cannot contain one.
			i := strings.IndexByte(l.src[l.pos+1:], '\'')
			if i < 0 {
				l.pos = len(l.src)
				return 0, syntaxError(l.src, l.pos)
			}
			l.pos += i + 2
			return kind, nil
		}
	}
	switch word {
	case "true", "false":
		return tBool, nil
	case "null":
		return tNull, nil
	case "INF", "NaN":
		return tDouble, nil
	case "INFf", "INFF", "NaNf", "NaNF":
		return tSingle, nil
	}
	return tIdent, nil
}

// scanNumber reads digits [. digits] [e [+-] digits] [suffix]. A '.' or 'e'
// not followed by a digit fails where the digit was expected.
func (l *lexer) scanNumber() (tokKind, *Error) {
	kind := tInt32
	l.skipDigits()
	if l.peekByte() == '.' {
		kind = tDouble
		l.pos++
		if err := l.expectDigit(); err != nil {
			return 0, err
		}
		l.skipDigits()
	}
	if c := l.peekByte(); c == 'e' || c == 'E' {
		kind = tDouble
		l.pos++
		if c := l.peekByte(); c == '+' || c == '-' {
			l.pos++
		}
		if err := l.expectDigit(); err != nil {
			return 0, err
		}
		l.skipDigits()
	}
	switch l.peekByte() {
	case 'M', 'm':
		kind = tDecimal
	case 'd', 'D':
		kind = tDouble
	case 'L', 'l':
		kind = tInt64
	case 'f', 'F':
		kind = tSingle
	default:
		return kind, nil
	}
	l.pos++
	return kind, nil
}

func (l *lexer) skipDigits() {
	for {
		r, size := l.ch()
		if !isDigit(r) {
			return
		}
		l.pos += size
	}
}

func (l *lexer) expectDigit() *Error {
	if r, _ := l.ch(); !isDigit(r) {
		return syntaxError(l.src, l.pos)
	}
	return nil
}
