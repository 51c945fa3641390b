package tabula

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
)

// Entity is one row of a table: its two keys, the service-assigned Timestamp and ETag, and up
// to 252 typed properties.
type Entity struct {
	PartitionKey string
	RowKey       string
	// Timestamp is set by the engine on every write; a value given on input is ignored, as
	// the service ignores it.
	Timestamp time.Time
	// ETag identifies the version written at Timestamp; pass it back as an If-Match
	// condition. It is ignored on input.
	ETag       ETag
	Properties Properties
}

// Properties maps property names (case-sensitive) to typed values. A nil value is dropped on
// write, as the service drops a JSON null.
type Properties map[string]Property

// Property is a typed property value: one of String, Binary, Boolean, DateTime, Double, Guid,
// Int32 or Int64, each a distinct type so that, for example, Int32 and Int64 never blur.
type Property interface {
	EdmType() EdmType
	isProperty()
}

// EdmType names a property type as the service's wire format does.
type EdmType string

// The eight property types.
const (
	EdmString   EdmType = "Edm.String"
	EdmBinary   EdmType = "Edm.Binary"
	EdmBoolean  EdmType = "Edm.Boolean"
	EdmDateTime EdmType = "Edm.DateTime"
	EdmDouble   EdmType = "Edm.Double"
	EdmGuid     EdmType = "Edm.Guid"
	EdmInt32    EdmType = "Edm.Int32"
	EdmInt64    EdmType = "Edm.Int64"
)

type (
	// String is an Edm.String: at most 32,768 UTF-16 code units of valid UTF-8 text.
	String string
	// Binary is an Edm.Binary: at most 65,536 bytes.
	Binary []byte
	// Boolean is an Edm.Boolean.
	Boolean bool
	// DateTime is an Edm.DateTime between 1601-01-01 and 9999-12-31 UTC. The service keeps
	// 100 ns ticks, so finer precision is truncated on write.
	DateTime time.Time
	// Double is an Edm.Double; NaN and the infinities are allowed.
	Double float64
	// Guid is an Edm.Guid, in the byte order of its text form (RFC 4122), so a
	// github.com/google/uuid UUID converts directly.
	Guid [16]byte
	// Int32 is an Edm.Int32.
	Int32 int32
	// Int64 is an Edm.Int64.
	Int64 int64
)

func (String) EdmType() EdmType   { return EdmString }
func (Binary) EdmType() EdmType   { return EdmBinary }
func (Boolean) EdmType() EdmType  { return EdmBoolean }
func (DateTime) EdmType() EdmType { return EdmDateTime }
func (Double) EdmType() EdmType   { return EdmDouble }
func (Guid) EdmType() EdmType     { return EdmGuid }
func (Int32) EdmType() EdmType    { return EdmInt32 }
func (Int64) EdmType() EdmType    { return EdmInt64 }

func (String) isProperty()   {}
func (Binary) isProperty()   {}
func (Boolean) isProperty()  {}
func (DateTime) isProperty() {}
func (Double) isProperty()   {}
func (Guid) isProperty()     {}
func (Int32) isProperty()    {}
func (Int64) isProperty()    {}

// PropertyOf is v, a value as the filter language and the wire codec hold it, as a Property
// of the same EDM type; nil for a Value of no type (a JSON null). It is the one conversion
// the engine, `tabula serve` and package remote use, so a type reads the same everywhere.
func PropertyOf(v odata.Value) Property {
	switch v.Type {
	case odata.String:
		return String(v.Str)
	case odata.Binary:
		return Binary(v.Bytes)
	case odata.Boolean:
		return Boolean(v.Int != 0)
	case odata.DateTime:
		return DateTime(timeOfTicks(v.Int))
	case odata.Double:
		return Double(v.Float)
	case odata.Guid:
		return Guid(v.Guid)
	case odata.Int32:
		return Int32(v.Int)
	case odata.Int64:
		return Int64(v.Int)
	}
	return nil
}

// ValueOf is p as an odata.Value, the form filters compare and the wire codec writes: the
// inverse of PropertyOf. A DateTime keeps 100 ns ticks, as the service does. A nil p, or a
// type that is not one of the eight, gives the Value of no type (written as null).
func ValueOf(p Property) odata.Value {
	switch p := p.(type) {
	case String:
		return odata.StringValue(string(p))
	case Binary:
		return odata.BinaryValue(p)
	case Boolean:
		return odata.BooleanValue(bool(p))
	case DateTime:
		return odata.DateTimeValue(ticksOf(time.Time(p)))
	case Double:
		return odata.DoubleValue(float64(p))
	case Guid:
		return odata.GuidValue(p)
	case Int32:
		return odata.Int32Value(int32(p))
	case Int64:
		return odata.Int64Value(int64(p))
	}
	return odata.Value{}
}

// Time returns the DateTime as a time.Time in UTC.
func (d DateTime) Time() time.Time { return time.Time(d).UTC() }

// String formats the DateTime as the service does: ISO 8601 in UTC, trailing zero fraction
// digits trimmed.
func (d DateTime) String() string { return formatTime(time.Time(d)) }

// AppendText appends the DateTime as String formats it (encoding.TextAppender), without a
// string of its own: a response writes one per entity.
func (d DateTime) AppendText(b []byte) ([]byte, error) {
	return wire.AppendTime(b, ticksOf(time.Time(d))), nil
}

// String formats the Guid as lower-case 8-4-4-4-12 hex, as the service returns it.
func (g Guid) String() string { return odata.FormatGuid(g) }

// ParseGuid parses the 8-4-4-4-12 hex form, in either case.
func ParseGuid(s string) (Guid, error) {
	var g Guid
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return g, ErrInvalidInput.WithDetail("guid %q is not in the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", s)
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(g[:], []byte(h)); err != nil {
		return Guid{}, ErrInvalidInput.WithDetail("guid %q has a character that is not hex", s)
	}
	return g, nil
}

// Limits the service enforces (REST docs: "Understanding the Table service data model").
const (
	MaxKeyLength          = 1024    // UTF-16 code units per PartitionKey or RowKey
	MaxPropertyNameLength = 255     // UTF-16 code units
	MaxProperties         = 252     // user properties; the service adds 3 system properties
	MaxStringLength       = 32768   // UTF-16 code units (64 KiB)
	MaxBinaryLength       = 65536   // bytes
	MaxEntitySize         = 1 << 20 // bytes, by the service's size formula (EntitySize)
)

var (
	minDateTime = time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)
	maxDateTime = time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)
)

// The names the service reserves for system properties.
const (
	propPartitionKey = "PartitionKey"
	propRowKey       = "RowKey"
	propTimestamp    = "Timestamp"
)

// utf16Len counts UTF-16 code units, the unit of every length limit the service states, in
// valid UTF-8: every byte but continuation bytes starts a character, and characters of four
// bytes need two units. Runs of ASCII, the common case, are skipped eight bytes at a time.
func utf16Len(s string) int {
	n, i, b := len(s), 0, stringBytes(s)
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 == 0 {
			continue
		}
		for j := i; j < i+8; j++ {
			n += utf16Delta(s[j])
		}
	}
	for ; i < len(s); i++ {
		n += utf16Delta(s[i])
	}
	return n
}

// stringBytes views s as bytes without copying, for word-at-a-time scans; the bytes must
// not be modified.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// utf16Delta is how a byte changes the count of UTF-16 units from the count of bytes.
func utf16Delta(c byte) int {
	switch {
	case c < 0x80:
		return 0
	case c < 0xC0: // continuation byte
		return -1
	case c >= 0xF0: // leads a supplementary character: a surrogate pair
		return 1
	}
	return 0
}

// validateEntity checks e against the service's rules and returns the names of its non-nil
// properties in byte order, the order records store them in. It reports the first rule
// broken, checking keys, then the property count, then properties in name order, then the
// size, so the same entity always gets the same error.
func validateEntity(e *Entity) ([]string, error) {
	pkLen, err := validateKey(propPartitionKey, e.PartitionKey)
	if err != nil {
		return nil, err
	}
	rkLen, err := validateKey(propRowKey, e.RowKey)
	if err != nil {
		return nil, err
	}
	names := sortedNames(e.Properties)
	if len(names) > MaxProperties {
		return nil, ErrTooManyProperties.WithDetail("entity has %d properties; the limit is %d", len(names), MaxProperties)
	}
	size := 4 + 2*pkLen + 2*rkLen
	for _, name := range names {
		nameLen, err := validatePropertyName(name)
		if err != nil {
			return nil, err
		}
		n, err := validateValue(name, e.Properties[name])
		if err != nil {
			return nil, err
		}
		size += 8 + 2*nameLen + n
	}
	if size > MaxEntitySize {
		return nil, ErrEntityTooLarge.WithDetail("entity is %d bytes by the service's size formula; the limit is %d", size, MaxEntitySize)
	}
	return names, nil
}

// sortedNames lists the names of the non-nil properties in byte order.
func sortedNames(p Properties) []string {
	names := make([]string, 0, len(p))
	for name, v := range p {
		if v != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// validateKey applies the PartitionKey and RowKey rules (valid UTF-8, at most 1,024 UTF-16
// code units, none of / \ # ? or control characters) and returns the key's length.
func validateKey(field, key string) (int, error) {
	// Most keys are short and ASCII: one pass over them shows they are valid UTF-8, one UTF-16
	// code unit per byte, and free of forbidden characters. Any other key, valid or not, takes
	// the full checks, which also word the errors.
	if len(key) <= MaxKeyLength {
		i := 0
		for i < len(key) && plainKeyByte[key[i]] {
			i++
		}
		if i == len(key) {
			return len(key), nil
		}
	}
	return validateKeyFully(field, key)
}

// plainKeyByte marks the bytes of validateKey's shortcut: printable ASCII but / \ # ?. A
// lookup per byte costs a quarter of the comparisons it replaces, on every read and write.
var plainKeyByte = func() (plain [256]bool) {
	for c := 0x20; c < 0x7F; c++ {
		plain[c] = true
	}
	for _, c := range `/\#?` {
		plain[c] = false
	}
	return plain
}()

func validateKeyFully(field, key string) (int, error) {
	if !utf8.ValidString(key) {
		return 0, ErrInvalidInput.WithDetail("%s is not valid UTF-8", field)
	}
	n := utf16Len(key)
	if n > MaxKeyLength {
		msg := strings.Replace(ErrKeyValueTooLarge.Message, propPartitionKey, field, 1)
		return 0, ErrKeyValueTooLarge.WithMessage(msg, "%s is %d UTF-16 code units long; the limit is %d", field, n, MaxKeyLength)
	}
	// Every forbidden character is ASCII except U+0080–U+009F, which UTF-8 writes 0xC2 0x80–0x9F.
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < 0x20 || c == 0x7F || c == '/' || c == '\\' || c == '#' || c == '?' ||
			c == 0xC2 && i+1 < len(key) && key[i+1] <= 0x9F {
			r, _ := utf8.DecodeRuneInString(key[i:])
			msg := fmt.Sprintf("The '%s' parameter of value '%s' is out of range.", field, key)
			return 0, ErrOutOfRangeInput.WithMessage(msg, "%s %q contains %U, which keys may not contain", field, key, r)
		}
	}
	return n, nil
}

// validatePropertyName applies C# identifier rules, as the service does, to each UTF-16 code
// unit (so a name with a supplementary character, which needs a surrogate pair, is invalid),
// and returns the name's length.
func validatePropertyName(name string) (int, error) {
	if !utf8.ValidString(name) {
		return 0, ErrPropertyNameInvalid.WithDetail("property name %q is not valid UTF-8", name)
	}
	if name == propPartitionKey || name == propRowKey || name == propTimestamp {
		return 0, ErrPropertyNameInvalid.WithDetail("property name %q is a system property; set it through the Entity's fields", name)
	}
	n := utf16Len(name)
	if n > MaxPropertyNameLength {
		return 0, ErrPropertyNameTooLong.WithDetail("property name %.20q… is %d UTF-16 code units long; the limit is %d", name, n, MaxPropertyNameLength)
	}
	if name == "" {
		return 0, ErrPropertyNameInvalid.WithDetail("property name is empty")
	}
	for i, r := range name {
		if !isIdentifierRune(r, i == 0) {
			return 0, ErrPropertyNameInvalid.WithDetail("property name %q: %U is not allowed in a C# identifier at that position", name, r)
		}
	}
	return n, nil
}

func isIdentifierRune(r rune, first bool) bool {
	if r < 0x80 { // the common case, without the Unicode tables
		return r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || !first && r >= '0' && r <= '9'
	}
	if r > 0xFFFF {
		return false
	}
	if unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Lm, unicode.Lo, unicode.Nl) {
		return true
	}
	return !first && unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc, unicode.Cf)
}

// validateValue applies the per-type limits and returns the value's size by the service's
// entity size formula.
func validateValue(name string, v Property) (int, error) {
	switch v := v.(type) {
	case String:
		return validateString(name, string(v))
	case Binary:
		if err := validateBinaryLen(name, len(v)); err != nil {
			return 0, err
		}
	case DateTime:
		if err := validateDateTime(name, time.Time(v)); err != nil {
			return 0, err
		}
	case Boolean, Double, Guid, Int32, Int64:
	default:
		// Only this package's types satisfy Property; a nil *T cannot reach here either.
		return 0, ErrInvalidValueType.WithDetail("property %q has unsupported type %T", name, v)
	}
	return valueSize(v), nil
}

// validateString applies the Edm.String rules to s and returns its size (validateValue's,
// for a value not boxed as a Property: the typed writes').
func validateString(name, s string) (int, error) {
	if !utf8.ValidString(s) {
		return 0, ErrInvalidInput.WithDetail("property %q: string is not valid UTF-8", name)
	}
	n := utf16Len(s)
	if n > MaxStringLength {
		return 0, ErrPropertyValueTooLarge.WithDetail("property %q: string is %d UTF-16 code units long; the limit is %d", name, n, MaxStringLength)
	}
	return 2*n + 4, nil // valueSize, without counting again
}

// validateBinaryLen applies the Edm.Binary limit to a value of n bytes.
func validateBinaryLen(name string, n int) error {
	if n > MaxBinaryLength {
		return ErrPropertyValueTooLarge.WithDetail("property %q: binary value is %d bytes; the limit is %d", name, n, MaxBinaryLength)
	}
	return nil
}

// validateDateTime applies the Edm.DateTime range to t.
func validateDateTime(name string, t time.Time) error {
	if t.Before(minDateTime) || t.After(maxDateTime) {
		msg := fmt.Sprintf("The '%s' parameter of value '%s' is out of range.", name, t.UTC().Format("01/02/2006 15:04:05"))
		return ErrOutOfRangeInput.WithMessage(msg, "property %q: DateTime %s is outside %s..%s", name,
			formatTime(t), formatTime(minDateTime), formatTime(maxDateTime))
	}
	return nil
}

// valueSize is sizeof(value) in the service's entity size formula.
func valueSize(v Property) int {
	switch v := v.(type) {
	case String:
		return 2*utf16Len(string(v)) + 4
	case Binary:
		return len(v) + 4
	case Boolean:
		return 1
	case Guid:
		return 16
	case Int32:
		return 4
	default: // DateTime, Double, Int64
		return 8
	}
}

// EntitySize is the size the service counts against its 1 MiB limit:
// 4 + 2·len(PartitionKey) + 2·len(RowKey) + Σ(8 + 2·len(name) + sizeof(value)), lengths in
// UTF-16 code units.
func EntitySize(e *Entity) int {
	size := 4 + 2*utf16Len(e.PartitionKey) + 2*utf16Len(e.RowKey)
	for name, v := range e.Properties {
		if v != nil {
			size += 8 + 2*utf16Len(name) + valueSize(v)
		}
	}
	return size
}

// Ticks are the service's clock: 100 ns intervals since 0001-01-01T00:00:00Z, as in .NET.
// Records store Timestamps and DateTimes as ticks, and filters compare them so.
func ticksOf(t time.Time) int64 { return odata.TicksFromTime(t) }

func timeOfTicks(ticks int64) time.Time { return odata.TimeFromTicks(ticks) }

// formatTime writes t as the service does: UTC, up to 7 fraction digits, trailing zeros
// trimmed, and no fraction at all when it is zero.
func formatTime(t time.Time) string {
	var buf [32]byte
	return string(wire.AppendTime(buf[:0], ticksOf(t)))
}

const ticksPerSecond = int64(time.Second / 100)

// ETag identifies one version of an entity. The service derives it from the Timestamp,
// W/"datetime'2022-03-01T20%3A40%3A24.4317535Z'", and so does Tabula.
type ETag string

// AnyETag is the If-Match value that matches any existing version. An empty ETag given as a
// condition means the same, as in the official SDKs.
const AnyETag ETag = "*"

// maxETagLen is the length of the longest ETag etagOf writes (a Timestamp with all seven
// fraction digits), for a buffer that holds one.
const maxETagLen = len(`W/"datetime'2022-03-01T20%3A40%3A24.4317535Z'"`)

func etagOf(ticks int64) ETag {
	var buf [maxETagLen]byte
	return ETag(wire.AppendETag(buf[:0], ticks)) // the one allocation
}

// ticks parses the Timestamp out of the ETag (accepting ':' or "%3A").
func (e ETag) ticks() (int64, error) {
	ticks, wellFormed, ok := wire.ETagTicks(string(e))
	switch {
	case !wellFormed:
		return 0, ErrInvalidInput.WithDetail("etag %q is not of the form W/\"datetime'…'\"", string(e))
	case !ok:
		return 0, ErrInvalidInput.WithDetail("etag %q does not hold a valid timestamp", string(e))
	}
	return ticks, nil
}

// check reports whether e is usable as an If-Match condition.
//
// As on the service, * and any weak entity tag (W/"…", the W in either case) are usable: one
// that Tabula did not make, such as W/"wrong", matches no version, so the write fails with
// UpdateConditionNotSatisfied. A strong tag ("…"), or a value that is not an entity tag at
// all, is InvalidInput.
func (e ETag) check() error {
	if _, ok := e.weak(); ok || e == "" {
		return nil
	}
	return ErrInvalidInput.WithDetail("etag %q is neither * nor a weak entity tag such as W/\"datetime'…'\"", string(e))
}

// IsEntityTag reports whether e is an entity-tag of RFC 7232: an optional W/, then a quoted
// string of visible characters other than '"'. If-Match takes the weak form only (W/"…", see
// Table.Update): a weak tag that is not the current one fails a write with 412, a strong one
// or anything else is a 400.
func (e ETag) IsEntityTag() bool { return wire.IsEntityTag(string(e)) }

// matches reports whether the If-Match condition e, which passed check, accepts the version
// written at ticks.
func (e ETag) matches(ticks int64) bool {
	if e == "" || e == AnyETag {
		return true
	}
	// The usual condition is the ETag Tabula returned, byte for byte: comparing it with the
	// one ticks would give saves parsing it inside the write's transaction. Any other
	// spelling of the same time (w/, ':' for %3A, fewer digits) is parsed.
	var buf [maxETagLen]byte
	if string(wire.AppendETag(buf[:0], ticks)) == string(e) {
		return true
	}
	weak, _ := e.weak()
	t, err := ETag(weak).ticks()
	return err == nil && t == ticks
}

// weak is wire.IfMatch, without the copy its upper-casing of the W makes when the W is
// already upper-case, as in every ETag Tabula returns.
func (e ETag) weak() (string, bool) {
	if len(e) >= 3 && e[0] == 'W' && e[1] == '/' && e[2] == '"' {
		return string(e), wire.IsEntityTag(string(e[2:]))
	}
	return wire.IfMatch(string(e))
}
