package odata

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
)

// Literal conversions. WCF converts literal text with the XmlConvert family
// (integers, doubles, xsd:dateTime) and the Guid constructor, so these accept
// what those accept, restricted where the service's behaviour says so.

// parseInt accepts an optional '-' and ASCII digits (the lexer also passes
// other Unicode digits, which .NET's conversion then rejects, as here).
func parseInt(text string, bits int) (int64, bool) {
	i, err := strconv.ParseInt(text, 10, bits)
	return i, err == nil
}

// parseDouble accepts the lexer's double forms: digits with '.', exponent
// and/or a d/D suffix, INF, -INF, NaN. Values beyond ±MaxFloat64 fail as in
// .NET Framework; values too small to represent become 0 as there.
func parseDouble(text string) (float64, bool) {
	switch text {
	case "INF":
		return math.Inf(1), true
	case "-INF":
		return math.Inf(-1), true
	case "NaN":
		return math.NaN(), true
	}
	if c := text[len(text)-1]; c == 'd' || c == 'D' {
		text = text[:len(text)-1]
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// trimXMLSpace trims what XmlConvert trims around a value.
func trimXMLSpace(s string) string { return strings.Trim(s, " \t\n\r") }

// parseDateTime reads the OData v3 datetime literal body:
//
//	yyyy-mm-ddThh:mm[:ss[.fffffff]][Z|+hh:mm|-hh:mm]
//
// Seconds are optional as in the OData v3 ABNF; at most 7 fractional digits
// (the service's 100 ns resolution: more would silently lose precision).
// Without a zone designator the time is UTC: the service keeps only UTC
// times, and .NET compares an unspecified-kind DateTime by its ticks. An
// offset is applied, giving the UTC instant. The result must lie within
// 0001-01-01 .. 9999-12-31T23:59:59.9999999Z.
func parseDateTime(s string) (int64, bool) {
	s = trimXMLSpace(s)
	num := func(from, n int, max int) (int, bool) {
		if from+n > len(s) {
			return 0, false
		}
		v := 0
		for _, c := range []byte(s[from : from+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, v <= max
	}
	sep := func(at int, c byte) bool { return at < len(s) && s[at] == c }

	year, ok1 := num(0, 4, 9999)
	month, ok2 := num(5, 2, 12)
	day, ok3 := num(8, 2, 31)
	hour, ok4 := num(11, 2, 23)
	minute, ok5 := num(14, 2, 59)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && sep(4, '-') && sep(7, '-') && sep(10, 'T') && sep(13, ':')) {
		return 0, false
	}
	if year < 1 || month < 1 || day < 1 {
		return 0, false
	}
	i := 16
	second, frac := 0, int64(0)
	if sep(i, ':') {
		var ok bool
		if second, ok = num(i+1, 2, 59); !ok {
			return 0, false
		}
		i += 3
		if sep(i, '.') {
			i++
			digits := 0
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				if digits == 7 {
					return 0, false
				}
				frac = frac*10 + int64(s[i]-'0')
				digits++
				i++
			}
			if digits == 0 {
				return 0, false
			}
			for ; digits < 7; digits++ {
				frac *= 10
			}
		}
	}
	offset := 0 // minutes east of UTC
	switch {
	case i == len(s):
	case s[i] == 'Z' && i+1 == len(s):
	case (s[i] == '+' || s[i] == '-') && i+6 == len(s) && s[i+3] == ':':
		oh, ok1 := num(i+1, 2, 14)
		om, ok2 := num(i+4, 2, 59)
		if !ok1 || !ok2 || oh*60+om > 14*60 {
			return 0, false
		}
		offset = oh*60 + om
		if s[i] == '-' {
			offset = -offset
		}
	default:
		return 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, second, 0, time.UTC)
	if t.Day() != day { // 31 April and the like
		return 0, false
	}
	ticks := TicksFromTime(t) + frac - int64(offset)*60*ticksPerSecond
	if ticks < 0 || ticks > MaxTicks {
		return 0, false
	}
	return ticks, true
}

// parseGuid accepts the forms of .NET's Guid(string) that a filter can carry:
// 32 hex digits, 8-4-4-4-12, and the latter in {} or (); any case, with
// surrounding white space.
func parseGuid(s string) ([16]byte, bool) {
	var g [16]byte
	s = trimXMLSpace(s)
	if len(s) == 38 && (s[0] == '{' && s[37] == '}' || s[0] == '(' && s[37] == ')') {
		s = s[1:37]
	}
	switch len(s) {
	case 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return g, false
		}
		s = s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	case 32:
	default:
		return g, false
	}
	if _, err := hex.Decode(g[:], []byte(s)); err != nil {
		return g, false
	}
	return g, true
}

// parseHex reads the body of X'…' / binary'…': an even number of hex digits.
func parseHex(s string) ([]byte, bool) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, false
	}
	return b, true
}
