package odata

import (
	"strconv"
	"unicode/utf8"
)

// Error codes, as the service spells them in odata.error.code.
const (
	CodeInvalidInput   = "InvalidInput"   // HTTP 400
	CodeNotImplemented = "NotImplemented" // HTTP 501
)

// Messages the service sends.
const (
	msgNotImplemented = "The requested operation is not implemented on the specified resource."
	msgInvalidInput   = "One of the request inputs is not valid."
)

// Error is a filter the service would reject. Code and Message are what the
// service returns, so the caller can copy them to the wire unchanged.
type Error struct {
	Code    string // CodeInvalidInput (HTTP 400) or CodeNotImplemented (HTTP 501)
	Message string // the service's message text
	Pos     int    // the position Message names, in UTF-16 code units like the service; -1 if it names none

	detail string // Go-style text for Error()
}

// Error returns a Go-style description; the service's text is in Message.
func (e *Error) Error() string { return "odata: " + e.detail }

// utf16Pos converts a byte offset in s to a UTF-16 offset, the unit .NET
// positions are counted in. Invalid bytes count as one unit (U+FFFD).
func utf16Pos(s string, off int) int {
	n := 0
	for i := 0; i < off && i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// syntaxError is the one parse-error shape the service is known to send:
// "Syntax error at position 7 in 'aaa bbb ccc'." (recorded by the Python SDK
// tests). The service runs the WCF Data Services query parser, whose lexer
// reports its current text position, i.e. the offset just past the token it
// rejected ('bbb' spans 4..7 above). We use that convention for every
// syntax error: off is a byte offset into filter.
func syntaxError(filter string, off int) *Error {
	pos := utf16Pos(filter, off)
	p := strconv.Itoa(pos)
	return &Error{
		Code:    CodeInvalidInput,
		Message: "Syntax error at position " + p + " in '" + filter + "'.",
		Pos:     pos,
		detail:  "syntax error at position " + p + " in " + strconv.Quote(filter),
	}
}

// literalError is the service's message for a literal that does not convert
// to its type, e.g. an integer beyond Int32 without the L suffix. The text,
// including the trailing space, is the real service's
// ("Unrecognized 'Edm.Int32' literal '1498179600055' ", Azure/azure-storage-node
// issue #316); text is the whole token as written (guid'…' included).
func literalError(filter string, off int, t Type, text string) *Error {
	return &Error{
		Code:    CodeInvalidInput,
		Message: "Unrecognized '" + t.String() + "' literal '" + text + "' ",
		Pos:     -1,
		detail:  "unrecognized " + t.String() + " literal " + strconv.Quote(text) + " ending at position " + strconv.Itoa(utf16Pos(filter, off)),
	}
}

// notImplemented is the service's answer to valid OData that Table storage
// does not support (functions, arithmetic, property-to-property comparisons,
// ...). what says which construct, for Error().
func notImplemented(filter string, off int, what string) *Error {
	return &Error{
		Code:    CodeNotImplemented,
		Message: msgNotImplemented,
		Pos:     -1,
		detail:  "not implemented: " + what + " ending at position " + strconv.Itoa(utf16Pos(filter, off)),
	}
}

// tooLong rejects a filter over MaxFilterLength without echoing it.
func tooLong(n int) *Error {
	return &Error{
		Code:    CodeInvalidInput,
		Message: msgInvalidInput,
		Pos:     -1,
		detail:  "filter of " + strconv.Itoa(n) + " bytes exceeds the limit of " + strconv.Itoa(MaxFilterLength),
	}
}
