package wire

import (
	"net/url"
	"strings"
)

// KeyPredicate is the service's address of an entity within its table:
// (PartitionKey='…',RowKey='…'), quotes doubled and the keys percent-encoded.
func KeyPredicate(pk, rk string) string {
	return "(PartitionKey='" + EscapeKey(pk) + "',RowKey='" + EscapeKey(rk) + "')"
}

// AppendKeyPredicate appends KeyPredicate(pk, rk) to b, building no string for keys of
// characters a path segment holds as they are.
func AppendKeyPredicate(b []byte, pk, rk string) []byte {
	if !plainSegment(pk) || !plainSegment(rk) {
		return append(b, KeyPredicate(pk, rk)...)
	}
	b = append(b, "(PartitionKey='"...)
	b = append(b, pk...)
	b = append(b, "',RowKey='"...)
	b = append(b, rk...)
	return append(b, "')"...)
}

// plainSegment says whether url.PathEscape leaves s as it is and s holds no quote.
func plainSegment(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("-_.~$&+:=@", c) >= 0) {
			return false
		}
	}
	return true
}

// EscapeKey is a key or a table name as a quoted string literal of a URL path: quotes
// doubled, then percent-encoded as a path segment.
func EscapeKey(k string) string {
	return url.PathEscape(strings.ReplaceAll(k, "'", "''"))
}
