package wire

import (
	"net/url"
	"strings"
	"time"

	"github.com/tabuladb/tabula/odata"
)

// The service derives an entity's ETag from its Timestamp,
// W/"datetime'2022-03-01T20%3A40%3A24.4317535Z'", and so does Tabula.
const (
	etagPrefix = `W/"datetime'`
	etagSuffix = `'"`
)

// AppendETag writes the ETag of the version written at ticks, the Timestamp's text with
// its colons percent-encoded.
func AppendETag(b []byte, ticks int64) []byte {
	b = append(b, etagPrefix...)
	return append(appendTicks(b, ticks, "%3A"), etagSuffix...)
}

// ETagTime reads the Timestamp out of an ETag of AppendETag's form, accepting ':' or
// "%3A". wellFormed says whether etag has the form at all; ok whether it also holds a
// valid time.
func ETagTime(etag string) (t time.Time, wellFormed, ok bool) {
	s, found := strings.CutPrefix(etag, etagPrefix)
	if found {
		s, found = strings.CutSuffix(s, etagSuffix)
	}
	if !found {
		return time.Time{}, false, false
	}
	text, err := url.PathUnescape(s)
	if err != nil {
		return time.Time{}, true, false
	}
	if t, err = time.Parse(time.RFC3339Nano, text); err != nil {
		return time.Time{}, true, false
	}
	return t.UTC(), true, true
}

// ETagTicks is ETagTime in the service's ticks.
func ETagTicks(etag string) (ticks int64, wellFormed, ok bool) {
	t, wellFormed, ok := ETagTime(etag)
	if !ok {
		return 0, wellFormed, false
	}
	return odata.TicksFromTime(t), true, true
}

// IfMatch reads an If-Match condition as the service does: * or a weak entity tag, W/"…",
// whose W may be either case, returned with the W upper-case so that the w/ and W/ forms of
// an ETag compare equal. A strong tag ("…") or anything else is not a condition the service
// takes: it answers 400, where a weak tag that is not current gets 412 (Azure's answers as
// reported in Azure/Azurite#1229, and the tests of each form Azure/Azurite#1231 added).
func IfMatch(v string) (string, bool) {
	if v == "*" {
		return v, true
	}
	if len(v) < 3 || v[0] != 'W' && v[0] != 'w' || v[1] != '/' || v[2] != '"' || !IsEntityTag(v[2:]) {
		return "", false
	}
	return "W" + v[1:], true
}

// IsEntityTag reports whether s is an entity-tag of RFC 7232: an optional W/, then a quoted
// string of visible characters other than '"'. It is the form If-Match takes besides *.
func IsEntityTag(s string) bool {
	s = strings.TrimPrefix(s, "W/")
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return false
	}
	for _, c := range []byte(s[1 : len(s)-1]) {
		if c == '"' || c < 0x21 || c == 0x7f {
			return false
		}
	}
	return true
}
