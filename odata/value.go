package odata

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula/internal/keyorder"
)

// Type is an EDM primitive type. The zero value is not a type: a Value with
// Type 0 compares as a type mismatch with every literal.
type Type uint8

// The eight EDM types the service stores.
const (
	String Type = iota + 1
	Binary
	Boolean
	DateTime
	Double
	Guid
	Int32
	Int64
)

var typeNames = [...]string{
	String:   "Edm.String",
	Binary:   "Edm.Binary",
	Boolean:  "Edm.Boolean",
	DateTime: "Edm.DateTime",
	Double:   "Edm.Double",
	Guid:     "Edm.Guid",
	Int32:    "Edm.Int32",
	Int64:    "Edm.Int64",
}

// String returns the EDM name, e.g. "Edm.Int32".
func (t Type) String() string {
	if t >= String && t <= Int64 {
		return typeNames[t]
	}
	return "Edm.Invalid(" + strconv.Itoa(int(t)) + ")"
}

// Value is a typed EDM value: a literal in a filter, or an entity's property
// value. Only the field that belongs to Type is meaningful.
type Value struct {
	Type  Type
	Str   string   // String
	Bytes []byte   // Binary
	Int   int64    // Int32, Int64; DateTime as 100-ns ticks since 0001-01-01T00:00:00Z; Boolean as 0/1
	Float float64  // Double
	Guid  [16]byte // Guid, in the order of the hex digits of its text form
}

// StringValue, BinaryValue, ... build Values; they exist so callers and tests
// need not remember which field each type uses.
func StringValue(s string) Value { return Value{Type: String, Str: s} }

// BinaryValue returns an Edm.Binary value.
func BinaryValue(b []byte) Value { return Value{Type: Binary, Bytes: b} }

// BooleanValue returns an Edm.Boolean value.
func BooleanValue(b bool) Value {
	if b {
		return Value{Type: Boolean, Int: 1}
	}
	return Value{Type: Boolean}
}

// DateTimeValue returns an Edm.DateTime value from .NET ticks (100 ns since
// 0001-01-01T00:00:00Z).
func DateTimeValue(ticks int64) Value { return Value{Type: DateTime, Int: ticks} }

// DoubleValue returns an Edm.Double value.
func DoubleValue(f float64) Value { return Value{Type: Double, Float: f} }

// GuidValue returns an Edm.Guid value.
func GuidValue(g [16]byte) Value { return Value{Type: Guid, Guid: g} }

// Int32Value returns an Edm.Int32 value.
func Int32Value(i int32) Value { return Value{Type: Int32, Int: int64(i)} }

// Int64Value returns an Edm.Int64 value.
func Int64Value(i int64) Value { return Value{Type: Int64, Int: i} }

// Tick arithmetic. The service counts time in .NET ticks; Go's time.Duration
// cannot span 9999 years, so conversions go through Unix seconds.
const (
	ticksPerSecond = 10_000_000
	// unixEpochTicks is 1970-01-01T00:00:00Z in ticks.
	unixEpochTicks = 621_355_968_000_000_000
	// MaxTicks is 9999-12-31T23:59:59.9999999Z, the largest DateTime.
	MaxTicks = 3_155_378_975_999_999_999
)

// TicksFromTime converts t to ticks. Times outside 0001..9999 are not
// representable; the result is then meaningless.
func TicksFromTime(t time.Time) int64 {
	return (t.Unix()*ticksPerSecond + unixEpochTicks) + int64(t.Nanosecond()/100)
}

// TimeFromTicks converts ticks to a UTC time.Time.
func TimeFromTicks(ticks int64) time.Time {
	d := ticks - unixEpochTicks
	sec := d / ticksPerSecond
	rem := d % ticksPerSecond
	if rem < 0 {
		sec--
		rem += ticksPerSecond
	}
	return time.Unix(sec, rem*100).UTC()
}

// String returns v as a filter literal, in the canonical form that Parse
// accepts back: 'text', X'0A', true, datetime'…Z', 1.5, guid'…', 7, 7L.
func (v Value) String() string {
	var sb strings.Builder
	v.appendLiteral(&sb)
	return sb.String()
}

func (v Value) appendLiteral(sb *strings.Builder) {
	switch v.Type {
	case String:
		sb.WriteByte('\'')
		sb.WriteString(strings.ReplaceAll(v.Str, "'", "''"))
		sb.WriteByte('\'')
	case Binary:
		sb.WriteString("X'")
		sb.WriteString(strings.ToUpper(hex.EncodeToString(v.Bytes)))
		sb.WriteByte('\'')
	case Boolean:
		if v.Int != 0 {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	case DateTime:
		sb.WriteString("datetime'")
		sb.WriteString(TimeFromTicks(v.Int).Format("2006-01-02T15:04:05.9999999Z"))
		sb.WriteByte('\'')
	case Double:
		sb.WriteString(formatDouble(v.Float))
	case Guid:
		sb.WriteString("guid'")
		sb.WriteString(FormatGuid(v.Guid))
		sb.WriteByte('\'')
	case Int32:
		sb.WriteString(strconv.FormatInt(v.Int, 10))
	case Int64:
		sb.WriteString(strconv.FormatInt(v.Int, 10))
		sb.WriteByte('L')
	default:
		sb.WriteString("<invalid>")
	}
}

// formatDouble prints f so that the lexer reads it back as a Double (hence
// the ".0" on integral values) with the same bits, including -0.
func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "INF"
	case math.IsInf(f, -1):
		return "-INF"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// FormatGuid writes a Guid in its 8-4-4-4-12 lower-case hex form, as the service returns it.
func FormatGuid(g [16]byte) string {
	var buf [36]byte
	hex.Encode(buf[0:8], g[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], g[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], g[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], g[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:36], g[10:16])
	return string(buf[:])
}

// CompareStrings compares a and b by UTF-16 code units, the order the service
// uses for keys and for string comparisons. It returns -1, 0 or +1. Strings
// that are not valid UTF-8 compare as their UTF-16 conversion would (invalid
// bytes read as U+FFFD), ties broken by bytes, so the order stays total.
func CompareStrings(a, b string) int { return keyorder.Compare(a, b) }

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareFloat follows .NET Double.CompareTo: NaN equals NaN and is less
// than every other number, so every operator has a definite answer and
// not (x lt y) equals x ge y.
func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	// At least one NaN.
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return -1
	}
	return 1
}
