package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula"
)

// EncodeEntity returns the JSON body an SDK sends for e: the keys, then every non-nil
// property in name order, each annotated only where the service needs the annotation to
// know the type (Int64, DateTime, Guid, Binary, and Doubles that are NaN or infinite).
// Timestamp and ETag are left out, as the service ignores them on input. It lets a test
// that holds tabula.Entity values hand them to an SDK that takes JSON.
func EncodeEntity(e tabula.Entity) []byte {
	b := append([]byte(nil), `{"PartitionKey":`...)
	b = appendJSONString(b, e.PartitionKey)
	b = append(b, `,"RowKey":`...)
	b = appendJSONString(b, e.RowKey)
	for _, name := range sortedNames(e.Properties, nil) {
		b = appendProperty(b, true, name, e.Properties[name], levelMinimal)
	}
	return append(b, '}')
}

// DecodeEntity reads an entity as the service sends it in a response (any metadata level,
// such as an SDK's GetEntity or ListEntities value) or as a client sends it in a request:
// keys, typed properties by the service's rules, and, when present, odata.etag as the ETag
// and Timestamp. Properties without an annotation take the type their JSON value implies,
// as on the service, so read nometadata bodies knowing that Int64 and DateTime values come
// back as Strings there.
func DecodeEntity(data []byte) (tabula.Entity, error) {
	e, err := decodeEntity(data, keysFromResponse)
	if err != nil {
		return tabula.Entity{}, err
	}
	return e, nil
}

// sortedNames lists the non-nil properties by name (the engine's stored order) and, with a
// $select list, also the selected names the entity lacks, which the service answers with
// null (REST docs: "Querying tables and entities").
func sortedNames(props tabula.Properties, selected []string) []string {
	return appendSortedNames(make([]string, 0, len(props)+len(selected)), props, selected)
}

// appendSortedNames is sortedNames into names[:0], reusing its array.
func appendSortedNames(names []string, props tabula.Properties, selected []string) []string {
	names = names[:0]
	for name, v := range props {
		if v != nil {
			names = append(names, name)
		}
	}
	for _, name := range selected { // distinct (see selectList)
		if _, ok := props[name]; !ok && !isSystemName(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func isSystemName(name string) bool {
	return name == "PartitionKey" || name == "RowKey" || name == "Timestamp"
}

// entityWriter writes entities at one metadata level for one table.
type entityWriter struct {
	level   level
	base    string // scheme://host/account, the root of odata.* links
	account string
	table   string
	// selected is the $select list, nil for every property. The keys and Timestamp are only
	// written when selected; odata.etag always is.
	selected []string
	names    []string // scratch for each entity's sorted property names
}

// entitySize estimates the bytes of an entity's JSON at most metadata levels, so that
// its buffer is allocated once rather than grown as it is written.
func entitySize(e *tabula.Entity) int {
	n := 256 + len(e.PartitionKey) + len(e.RowKey)
	for name, v := range e.Properties {
		n += 2*len(name) + 48
		switch v := v.(type) {
		case tabula.String:
			n += len(v) + len(v)/16
		case tabula.Binary:
			n += len(v)*4/3 + 4
		}
	}
	return n
}

func (w *entityWriter) wants(name string) bool {
	return w.selected == nil || slices.Contains(w.selected, name)
}

// appendEntity writes one entity object. A single entity (not an element of a feed) starts
// with odata.metadata.
func (w *entityWriter) appendEntity(b []byte, e *tabula.Entity, single bool) []byte {
	if b == nil {
		b = make([]byte, 0, entitySize(e)+len(w.base)+len(w.table))
	}
	b = append(b, '{')
	first := true
	field := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, name)
		b = append(b, ':')
	}
	if single && w.level != levelNone {
		field("odata.metadata")
		b = append(b, '"')
		b = appendJSONContent(b, w.base)
		b = append(b, "/$metadata#"...)
		b = appendJSONContent(b, w.table)
		b = append(b, "/@Element"...)
		if w.selected != nil {
			b = append(b, "&$select="...)
			b = appendJSONContent(b, strings.Join(w.selected, ","))
		}
		b = append(b, '"')
	}
	if w.level == levelFull {
		link := w.table + keyPredicate(e.PartitionKey, e.RowKey)
		field("odata.type")
		b = appendJSONString(b, w.account+"."+w.table)
		field("odata.id")
		b = appendJSONString(b, w.base+"/"+link)
		field("odata.etag")
		b = appendJSONString(b, string(e.ETag))
		field("odata.editLink")
		b = appendJSONString(b, link)
	} else if w.level == levelMinimal {
		field("odata.etag")
		b = appendJSONString(b, string(e.ETag))
	}
	if w.wants("PartitionKey") {
		field("PartitionKey")
		b = appendJSONString(b, e.PartitionKey)
	}
	if w.wants("RowKey") {
		field("RowKey")
		b = appendJSONString(b, e.RowKey)
	}
	if w.wants("Timestamp") {
		if w.level == levelFull {
			field("Timestamp@odata.type")
			b = appendJSONString(b, string(tabula.EdmDateTime))
		}
		field("Timestamp")
		b = appendDateTime(b, tabula.DateTime(e.Timestamp))
	}
	w.names = appendSortedNames(w.names, e.Properties, w.selected)
	for _, name := range w.names {
		b = appendProperty(b, !first, name, e.Properties[name], w.level)
		first = false
	}
	return append(b, '}')
}

// entitiesPerCheck is how many entities appendEntities encodes between two looks at its
// context: often enough that a page of 1,000 stops within a small fraction of its cost,
// rarely enough that the look costs nothing.
const entitiesPerCheck = 64

// appendEntities writes the entities of a feed, comma-separated, and stops with ctx's error
// when ctx ends (the client went away) rather than encoding for no one.
func (w *entityWriter) appendEntities(ctx context.Context, b []byte, entities []tabula.Entity) ([]byte, error) {
	for i := range entities {
		if i%entitiesPerCheck == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = w.appendEntity(b, &entities[i], false)
	}
	return b, nil
}

// appendProperty writes one property (a nil value as null, for a selected absent property),
// preceded by its type annotation where the level calls for one: minimal metadata
// annotates only the types JSON cannot carry (Int64, DateTime, Guid, Binary, non-finite
// Doubles), written before the value; full metadata annotates every non-String property;
// nometadata none.
func appendProperty(b []byte, comma bool, name string, v tabula.Property, l level) []byte {
	if comma {
		b = append(b, ',')
	}
	if v != nil && l != levelNone && needsAnnotation(v, l) {
		b = appendJSONString(b, name)
		b = append(b[:len(b)-1], annotationSuffix+`":`...) // the suffix needs no escaping
		b = appendJSONString(b, string(v.EdmType()))
		b = append(b, ',')
	}
	b = appendJSONString(b, name)
	b = append(b, ':')
	return appendValue(b, v)
}

func needsAnnotation(v tabula.Property, l level) bool {
	switch v := v.(type) {
	case tabula.String:
		return false
	case tabula.Int64, tabula.DateTime, tabula.Guid, tabula.Binary:
		return true
	case tabula.Double:
		return l == levelFull || math.IsNaN(float64(v)) || math.IsInf(float64(v), 0)
	}
	return l == levelFull // Int32, Boolean
}

func appendValue(b []byte, v tabula.Property) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case tabula.String:
		return appendJSONString(b, string(v))
	case tabula.Int32:
		return strconv.AppendInt(b, int64(v), 10)
	case tabula.Int64:
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(v), 10)
		return append(b, '"')
	case tabula.Double:
		f := float64(v)
		switch {
		case math.IsNaN(f):
			return append(b, `"NaN"`...)
		case math.IsInf(f, 1):
			return append(b, `"Infinity"`...)
		case math.IsInf(f, -1):
			return append(b, `"-Infinity"`...)
		}
		return appendDouble(b, f)
	case tabula.Boolean:
		return strconv.AppendBool(b, bool(v))
	case tabula.DateTime:
		return appendDateTime(b, v)
	case tabula.Guid:
		return appendJSONString(b, v.String())
	case tabula.Binary:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v)
		return append(b, '"')
	}
	return append(b, "null"...)
}

// appendDouble writes a finite Double as the service's .NET writer does: the shortest text
// that reads back to the same value, in fixed notation for decimal exponents from -5 to 14
// and as 1.5E+15 or 1E-05 otherwise, with ".0" added to an integral value so that it reads
// back as a Double and not an Int32 (REST docs: "Payload format for Table service operations").
func appendDouble(b []byte, f float64) []byte {
	var scratch [32]byte
	sci := strconv.AppendFloat(scratch[:0], f, 'e', -1, 64)
	mantissa, exp, _ := strings.Cut(string(sci), "e")
	e, _ := strconv.Atoi(exp)
	if f == 0 || (e > -5 && e < 15) {
		start := len(b)
		b = strconv.AppendFloat(b, f, 'f', -1, 64)
		if !slices.Contains(b[start:], '.') {
			b = append(b, ".0"...)
		}
		return b
	}
	b = append(b, mantissa...)
	b = append(b, 'E')
	if e < 0 {
		b = append(b, '-')
		e = -e
	} else {
		b = append(b, '+')
	}
	if e < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(e), 10)
}

// appendJSONString writes s as a JSON string, escaping only what JSON requires.
func appendJSONString(b []byte, s string) []byte {
	return append(appendJSONContent(append(b, '"'), s), '"')
}

// appendJSONContent writes s escaped as inside a JSON string, without the quotes: escaping
// goes byte by byte, so a string written in pieces reads as their concatenation would.
func appendJSONContent(b []byte, s string) []byte {
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

// appendDateTime writes d as a JSON string; its text needs no escaping.
func appendDateTime(b []byte, d tabula.DateTime) []byte {
	b, _ = d.AppendText(append(b, '"'))
	return append(b, '"')
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

// keyPredicate is the service's address of an entity within its table:
// (PartitionKey='…',RowKey='…'), quotes doubled and the keys percent-encoded.
func keyPredicate(pk, rk string) string {
	return "(PartitionKey='" + escapeKey(pk) + "',RowKey='" + escapeKey(rk) + "')"
}

// appendKeyPredicate appends keyPredicate(pk, rk) to b, building no string for keys of
// characters a path segment holds as they are.
func appendKeyPredicate(b []byte, pk, rk string) []byte {
	if !plainSegment(pk) || !plainSegment(rk) {
		return append(b, keyPredicate(pk, rk)...)
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

func escapeKey(k string) string {
	return url.PathEscape(strings.ReplaceAll(k, "'", "''"))
}

// formatDate is the HTTP Date header, as the service sends it.
func formatDate(t time.Time) string {
	sec := t.Unix()
	if d := lastDate.Load(); d != nil && d.sec == sec {
		return d.text
	}
	text := t.UTC().Format(http1123)
	lastDate.Store(&dateStamp{sec: sec, text: text})
	return text
}

// lastDate holds the last second formatted by formatDate: every response carries a Date
// header, and all those within one second read the same.
var lastDate atomic.Pointer[dateStamp]

type dateStamp struct {
	sec  int64
	text string
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"
