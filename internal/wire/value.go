package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula/odata"
)

// ticksPerSecond is the service's clock rate: 100 ns ticks.
const ticksPerSecond = 10_000_000

// AppendValue writes v as a JSON value in the service's format: Int64 as a string of its
// digits, non-finite Doubles as "NaN", "Infinity" and "-Infinity", DateTime as its ISO 8601
// text, Guid in lower-case 8-4-4-4-12 form, Binary in padded base64. A Value of no type
// (the zero Value) is null.
func AppendValue(b []byte, v odata.Value) []byte { return appendValue(b, &v) }

func appendValue(b []byte, v *odata.Value) []byte {
	switch v.Type {
	case odata.String:
		return AppendString(b, v.Str)
	case odata.Int32:
		return strconv.AppendInt(b, v.Int, 10)
	case odata.Int64:
		b = append(b, '"')
		b = strconv.AppendInt(b, v.Int, 10)
		return append(b, '"')
	case odata.Double:
		f := v.Float
		switch {
		case math.IsNaN(f):
			return append(b, `"NaN"`...)
		case math.IsInf(f, 1):
			return append(b, `"Infinity"`...)
		case math.IsInf(f, -1):
			return append(b, `"-Infinity"`...)
		}
		return AppendDouble(b, f)
	case odata.Boolean:
		return strconv.AppendBool(b, v.Int != 0)
	case odata.DateTime:
		b = AppendTime(append(b, '"'), v.Int)
		return append(b, '"')
	case odata.Guid:
		b = append(b, '"')
		b = append(b, odata.FormatGuid(v.Guid)...)
		return append(b, '"')
	case odata.Binary:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.Bytes)
		return append(b, '"')
	}
	return append(b, "null"...)
}

// AppendDouble writes a finite Double as the service's .NET writer does: the shortest text
// that reads back to the same value, in fixed notation for decimal exponents from -5 to 14
// and as 1.5E+15 or 1E-05 otherwise, with ".0" added to an integral value so that it reads
// back as a Double and not an Int32 (REST docs: "Payload format for Table service operations").
func AppendDouble(b []byte, f float64) []byte {
	var scratch [32]byte
	sci := strconv.AppendFloat(scratch[:0], f, 'e', -1, 64)
	mantissa, exp, _ := bytes.Cut(sci, []byte("e"))
	e, _ := strconv.Atoi(string(exp))
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

// AppendTime writes a DateTime given in ticks as the service does: ISO 8601 in UTC, up to
// seven fraction digits with trailing zeros trimmed, no fraction at all when it is zero,
// such as 2022-03-01T20:40:24.4317535Z. It is written out by hand because every entity
// written carries one (its Timestamp) and its ETag another.
func AppendTime(b []byte, ticks int64) []byte {
	return appendTicks(b, ticks, ":")
}

// appendTicks is AppendTime with colon between hours, minutes and seconds.
func appendTicks(dst []byte, ticks int64, colon string) []byte {
	t := odata.TimeFromTicks(ticks)
	year, month, day := t.Date()
	hour, minute, second := t.Clock()
	two := func(dst []byte, n int) []byte { return append(dst, byte('0'+n/10), byte('0'+n%10)) }
	dst = two(two(dst, year/100), year%100)
	dst = two(append(dst, '-'), int(month))
	dst = two(append(dst, '-'), day)
	dst = two(append(dst, 'T'), hour)
	dst = two(append(dst, colon...), minute)
	dst = two(append(dst, colon...), second)
	if frac := ticks % ticksPerSecond; frac != 0 {
		var digits [7]byte
		for i := 6; i >= 0; i-- {
			digits[i] = byte('0' + frac%10)
			frac /= 10
		}
		n := 7
		for digits[n-1] == '0' {
			n--
		}
		dst = append(append(dst, '.'), digits[:n]...)
	}
	return append(dst, 'Z')
}

// needsAnnotation says whether a value is written with its type annotation: a request body
// and both minimal and full metadata annotate only the types JSON cannot carry (Int64,
// DateTime, Guid, Binary, non-finite Doubles; an integral Double is written 5.0, which JSON
// reads as a Double), doubles also every Double.
//
// Full metadata annotates no more than minimal: the live service's recorded answers at
// odata=fullmetadata (the legacy Go SDK's storage/recordings in
// github.com/Azure/azure-sdk-for-go v68, such as StorageEntitySuite/TestGet) write Int32
// ("Number":3), Boolean ("IsActive":true) and Double ("AmountDue":200.23) bare, and the SDKs'
// maintainers say the same (Azure/azure-sdk-for-js#15950). The legacy Go SDK fails every read
// of an annotated Boolean ("Edm.Boolean casting error").
func needsAnnotation(v *odata.Value, a annotate) bool {
	switch v.Type {
	case odata.String:
		return false
	case odata.Int64, odata.DateTime, odata.Guid, odata.Binary:
		return true
	case odata.Double:
		return a == annotateDoubles || math.IsNaN(v.Float) || math.IsInf(v.Float, 0)
	}
	return false // Int32, Boolean
}

// annotate is which values a writer annotates with their type.
type annotate uint8

const (
	annotateNone    annotate = iota // nometadata
	annotateNeeded                  // minimal and full metadata, the smallest request body
	annotateDoubles                 // a request body whose Doubles must stay Doubles through a client's re-encoding
)

// ValueSize is the length of v as the smallest JSON a client may send for it and whether
// that needs a type annotation. It differs from AppendValue's in Doubles only: a Double is
// counted in its shortest JSON form (1e300 rather than the service's 1E+300), so that
// TransactionPayloadSize never counts more than a client can send.
func ValueSize(v odata.Value) (int, bool) {
	var scratch [32]byte
	switch v.Type {
	case odata.String:
		return StringSize(v.Str), false
	case odata.Binary:
		return 2 + base64.StdEncoding.EncodedLen(len(v.Bytes)), true
	case odata.Boolean:
		if v.Int != 0 {
			return len("true"), false
		}
		return len("false"), false
	case odata.DateTime:
		// "2006-01-02T15:04:05Z", plus a point and the fraction's digits without trailing zeros.
		n := 2 + len("2006-01-02T15:04:05Z")
		if frac := v.Int % ticksPerSecond; frac != 0 {
			n += 8
			for ; frac%10 == 0; frac /= 10 {
				n--
			}
		}
		return n, true
	case odata.Double:
		f := v.Float
		switch {
		case math.IsNaN(f):
			return len(`"NaN"`), true
		case math.IsInf(f, 1):
			return len(`"Infinity"`), true
		case math.IsInf(f, -1):
			return len(`"-Infinity"`), true
		}
		s := strconv.AppendFloat(scratch[:0], f, 'g', -1, 64)
		e := bytes.IndexByte(s, 'e')
		if e < 0 {
			if bytes.IndexByte(s, '.') < 0 {
				return len(s) + len(".0"), false // an integral Double is written 5.0 to stay a Double
			}
			return len(s), false
		}
		// Go writes 1e+300 and 1e-07; JSON needs only 1e300 and 1e-7.
		mantissa, exp := s[:e], s[e+1:]
		n := len(mantissa) + len("e") + len(bytes.TrimLeft(exp, "+-0"))
		if exp[0] == '-' {
			n++
		}
		return n, false
	case odata.Guid:
		return 2 + 36, true
	case odata.Int32:
		return len(strconv.AppendInt(scratch[:0], v.Int, 10)), false
	case odata.Int64:
		return 2 + len(strconv.AppendInt(scratch[:0], v.Int, 10)), true
	}
	return 0, false
}

// decodeValue converts one JSON value to the EDM type its annotation names (or the type a
// bare JSON value implies): a bare integer that fits Int32 is an Int32 and any other bare
// number a Double; Int64, DateTime, Guid and Binary need their annotation.
func decodeValue(name string, m Member, typ string) (odata.Value, *DecodeError) {
	bad := func(why string) *DecodeError {
		return &DecodeError{Reason: InvalidValue, Detail: "property " + strconv.Quote(name) + ": " + why}
	}
	switch typ {
	case "":
		switch m.Kind {
		case KindString:
			return odata.StringValue(m.Text), nil
		case KindBool:
			return odata.BooleanValue(m.Text == "true"), nil
		}
		if isIntegral(m.Text) {
			if i, err := strconv.ParseInt(m.Text, 10, 32); err == nil {
				return odata.Int32Value(int32(i)), nil
			}
		}
		f, err := strconv.ParseFloat(m.Text, 64)
		if err != nil {
			return odata.Value{}, bad("number " + m.Text + " is out of the range of a Double")
		}
		return odata.DoubleValue(f), nil
	case typeString:
		if m.Kind != KindString {
			return odata.Value{}, bad("an Edm.String must be a JSON string")
		}
		return odata.StringValue(m.Text), nil
	case typeInt32:
		if m.Kind == KindString || m.Kind == KindNumber && isIntegral(m.Text) {
			if i, err := strconv.ParseInt(m.Text, 10, 32); err == nil {
				return odata.Int32Value(int32(i)), nil
			}
		}
		return odata.Value{}, bad(m.Text + " is not an Edm.Int32")
	case typeInt64:
		if m.Kind == KindString || m.Kind == KindNumber && isIntegral(m.Text) {
			if i, err := strconv.ParseInt(m.Text, 10, 64); err == nil {
				return odata.Int64Value(i), nil
			}
		}
		return odata.Value{}, bad(m.Text + " is not an Edm.Int64")
	case typeDouble:
		switch {
		case m.Kind == KindNumber:
			if f, err := strconv.ParseFloat(m.Text, 64); err == nil {
				return odata.DoubleValue(f), nil
			}
		case m.Kind == KindString:
			switch m.Text {
			case "NaN":
				return odata.DoubleValue(math.NaN()), nil
			case "Infinity", "INF":
				return odata.DoubleValue(math.Inf(1)), nil
			case "-Infinity", "-INF":
				return odata.DoubleValue(math.Inf(-1)), nil
			}
			if isJSONNumber(m.Text) {
				if f, err := strconv.ParseFloat(m.Text, 64); err == nil {
					return odata.DoubleValue(f), nil
				}
			}
		}
		return odata.Value{}, bad(m.Text + " is not an Edm.Double")
	case typeBoolean:
		if m.Kind == KindBool || m.Kind == KindString && (strings.EqualFold(m.Text, "true") || strings.EqualFold(m.Text, "false")) {
			return odata.BooleanValue(strings.EqualFold(m.Text, "true")), nil
		}
		return odata.Value{}, bad(m.Text + " is not an Edm.Boolean")
	case typeDateTime:
		if m.Kind == KindString {
			if t, err := ParseDateTime(m.Text); err == nil {
				return odata.DateTimeValue(odata.TicksFromTime(t)), nil
			}
		}
		return odata.Value{}, bad(m.Text + " is not an Edm.DateTime")
	case typeGuid:
		if m.Kind == KindString {
			if g, ok := parseGuid(m.Text); ok {
				return odata.GuidValue(g), nil
			}
		}
		return odata.Value{}, bad(m.Text + " is not an Edm.Guid")
	case typeBinary:
		if m.Kind == KindString {
			if b, err := base64.StdEncoding.DecodeString(m.Text); err == nil {
				return odata.BinaryValue(b), nil
			}
		}
		return odata.Value{}, bad("value is not base64")
	}
	return odata.Value{}, &DecodeError{Reason: InvalidInput,
		Detail: "property " + strconv.Quote(name) + " is annotated with unknown type " + strconv.Quote(typ)}
}

// The EDM type names of annotations.
var (
	typeString   = odata.String.String()
	typeBinary   = odata.Binary.String()
	typeBoolean  = odata.Boolean.String()
	typeDateTime = odata.DateTime.String()
	typeDouble   = odata.Double.String()
	typeGuid     = odata.Guid.String()
	typeInt32    = odata.Int32.String()
	typeInt64    = odata.Int64.String()
)

// isIntegral reports whether a JSON number literal has neither fraction nor exponent.
func isIntegral(s string) bool { return !strings.ContainsAny(s, ".eE") }

// isJSONNumber reports whether s is a JSON number literal, the form a string-encoded Double
// may take.
func isJSONNumber(s string) bool {
	p := jsonParser{data: []byte(s)}
	_, err := p.number()
	return err == nil && p.pos == len(s)
}

// parseGuid reads the 8-4-4-4-12 hex form, in either case.
func parseGuid(s string) ([16]byte, bool) {
	var g [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return g, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(g[:], []byte(h)); err != nil {
		return [16]byte{}, false
	}
	return g, true
}

// ParseDateTime reads an Edm.DateTime strictly in the ISO 8601 form the service's JSON
// reader takes and its clients write: yyyy-MM-ddTHH:mm:ss, then optionally a '.' and 1 to 9
// fraction digits (more than the service's 7 are truncated to its 100 ns ticks), then Z, an
// offset ±HH:MM, or nothing (taken as UTC). Every field has its full number of digits and
// its range; year 0 does not exist. Looser forms (a one-digit hour, a comma before the
// fraction) are refused rather than stored as a value no client could read back.
func ParseDateTime(s string) (time.Time, error) {
	bad := func() (time.Time, error) { return time.Time{}, errors.New("not an ISO 8601 date and time: " + s) }
	num := func(i, n int) (int, bool) {
		if i+n > len(s) {
			return 0, false
		}
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return bad()
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 2)
	day, ok3 := num(8, 2)
	hour, ok4 := num(11, 2)
	minute, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || year < 1 || month < 1 || month > 12 || day < 1 ||
		day > time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day() || hour > 23 || minute > 59 || sec > 59 {
		return bad()
	}
	rest, nanos := s[19:], 0
	if strings.HasPrefix(rest, ".") {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		digits := rest[1:n]
		if len(digits) == 0 || len(digits) > 9 {
			return bad()
		}
		for i := 0; i < 9; i++ {
			nanos *= 10
			if i < len(digits) {
				nanos += int(digits[i] - '0')
			}
		}
		rest = rest[n:]
	}
	offset := 0
	switch {
	case rest == "" || rest == "Z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := num(len(s)-5, 2)
		om, ok2 := num(len(s)-2, 2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return bad()
		}
		offset = (oh*60 + om) * 60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return bad()
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nanos, time.UTC)
	return t.Add(-time.Duration(offset) * time.Second), nil
}
