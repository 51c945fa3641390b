package server

import (
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula"
)

const annotationSuffix = "@odata.type"

// keySource says where an operation takes the entity's keys from.
type keySource int

const (
	// keysFromBody: Insert. The body must carry both keys as untyped strings.
	keysFromBody keySource = iota
	// keysFromURL: Update, Merge, the upserts. The URL names the entity, and keys in the
	// body are ignored whatever their type (the service accepts typed keys there,
	// REST docs: "Understanding the Table service data model").
	keysFromURL
	// keysFromResponse: DecodeEntity reading what the service sent, with its odata.etag
	// and Timestamp.
	keysFromResponse
)

// smallObject is the most members decodeEntity checks for duplicates without a map.
const smallObject = 16

// decodeEntity applies the service's reading rules to a JSON entity body (REST docs:
// "Understanding the Table service data model", "Payload format for Table service operations"):
// a repeated name is DuplicatePropertiesSpecified; null values are dropped;
// Timestamp and odata.* bookkeeping are ignored; <Name>@odata.type annotates Name; a bare
// integer that fits Int32 is an Int32 and any other bare number a Double; Int64, DateTime,
// Guid and Binary need their annotation. The engine then checks names and limits.
func decodeEntity(body []byte, keys keySource) (tabula.Entity, *tabula.Error) {
	members, err := parseObject(body)
	if err != nil {
		return tabula.Entity{}, invalidInput("", err.Error())
	}
	var seen map[string]struct{} // for many members; a few are compared with each other
	if len(members) > smallObject {
		seen = make(map[string]struct{}, len(members))
	}
	var types map[string]string // made at the first annotation
	for i, m := range members {
		dup := false
		if seen != nil {
			_, dup = seen[m.name]
			seen[m.name] = struct{}{}
		} else {
			for _, prev := range members[:i] {
				if prev.name == m.name {
					dup = true
					break
				}
			}
		}
		if dup {
			return tabula.Entity{}, withDetail(tabula.ErrDuplicatePropertiesSpecified, "member "+strconv.Quote(m.name)+" appears more than once")
		}
		if name, ok := strings.CutSuffix(m.name, annotationSuffix); ok && name != "" {
			if m.kind != jsonString {
				return tabula.Entity{}, invalidInput("", "annotation "+strconv.Quote(m.name)+" is not a string")
			}
			if types == nil {
				types = make(map[string]string)
			}
			types[name] = m.text
		}
	}
	var e tabula.Entity
	e.Properties = make(tabula.Properties, len(members))
	var hasPK, hasRK bool
	for _, m := range members {
		name := m.name
		if n, ok := strings.CutSuffix(name, annotationSuffix); ok && n != "" {
			continue
		}
		switch {
		case name == "PartitionKey" || name == "RowKey":
			if keys == keysFromURL || m.kind == jsonNull {
				continue
			}
			if m.kind != jsonString || (types[name] != "" && types[name] != string(tabula.EdmString)) {
				return tabula.Entity{}, invalidInput("", name+" must be an untyped string")
			}
			if name == "PartitionKey" {
				e.PartitionKey, hasPK = m.text, true
			} else {
				e.RowKey, hasRK = m.text, true
			}
			continue
		case name == "Timestamp":
			if keys == keysFromResponse && m.kind == jsonString {
				if t, err := parseDateTime(m.text); err == nil {
					e.Timestamp = t
				}
			}
			continue
		case strings.HasPrefix(name, "odata."):
			if keys == keysFromResponse && name == "odata.etag" && m.kind == jsonString {
				e.ETag = tabula.ETag(m.text)
			}
			continue
		case m.kind == jsonNull:
			continue
		}
		v, perr := decodeValue(name, m, types[name])
		if perr != nil {
			return tabula.Entity{}, perr
		}
		e.Properties[name] = v
	}
	if keys == keysFromBody && (!hasPK || !hasRK) {
		return tabula.Entity{}, withDetail(tabula.ErrPropertiesNeedValue, "the body must carry both PartitionKey and RowKey")
	}
	return e, nil
}

// decodeValue converts one JSON value to the EDM type its annotation names (or the type a
// bare JSON value implies).
func decodeValue(name string, m jsonMember, typ string) (tabula.Property, *tabula.Error) {
	bad := func(why string) *tabula.Error {
		return invalidInput(msgValueNotValid, "property "+strconv.Quote(name)+": "+why)
	}
	switch tabula.EdmType(typ) {
	case "":
		switch m.kind {
		case jsonString:
			return tabula.String(m.text), nil
		case jsonBool:
			return tabula.Boolean(m.text == "true"), nil
		}
		if isIntegral(m.text) {
			if i, err := strconv.ParseInt(m.text, 10, 32); err == nil {
				return tabula.Int32(i), nil
			}
		}
		f, err := strconv.ParseFloat(m.text, 64)
		if err != nil {
			return nil, bad("number " + m.text + " is out of the range of a Double")
		}
		return tabula.Double(f), nil
	case tabula.EdmString:
		if m.kind != jsonString {
			return nil, bad("an Edm.String must be a JSON string")
		}
		return tabula.String(m.text), nil
	case tabula.EdmInt32:
		if m.kind == jsonString || m.kind == jsonNumber && isIntegral(m.text) {
			if i, err := strconv.ParseInt(m.text, 10, 32); err == nil {
				return tabula.Int32(i), nil
			}
		}
		return nil, bad(m.text + " is not an Edm.Int32")
	case tabula.EdmInt64:
		if m.kind == jsonString || m.kind == jsonNumber && isIntegral(m.text) {
			if i, err := strconv.ParseInt(m.text, 10, 64); err == nil {
				return tabula.Int64(i), nil
			}
		}
		return nil, bad(m.text + " is not an Edm.Int64")
	case tabula.EdmDouble:
		switch {
		case m.kind == jsonNumber:
			if f, err := strconv.ParseFloat(m.text, 64); err == nil {
				return tabula.Double(f), nil
			}
		case m.kind == jsonString:
			switch m.text {
			case "NaN":
				return tabula.Double(math.NaN()), nil
			case "Infinity", "INF":
				return tabula.Double(math.Inf(1)), nil
			case "-Infinity", "-INF":
				return tabula.Double(math.Inf(-1)), nil
			}
			if isJSONNumber(m.text) {
				if f, err := strconv.ParseFloat(m.text, 64); err == nil {
					return tabula.Double(f), nil
				}
			}
		}
		return nil, bad(m.text + " is not an Edm.Double")
	case tabula.EdmBoolean:
		if m.kind == jsonBool || m.kind == jsonString && (strings.EqualFold(m.text, "true") || strings.EqualFold(m.text, "false")) {
			return tabula.Boolean(strings.EqualFold(m.text, "true")), nil
		}
		return nil, bad(m.text + " is not an Edm.Boolean")
	case tabula.EdmDateTime:
		if m.kind == jsonString {
			if t, err := parseDateTime(m.text); err == nil {
				return tabula.DateTime(t), nil
			}
		}
		return nil, bad(m.text + " is not an Edm.DateTime")
	case tabula.EdmGuid:
		if m.kind == jsonString {
			if g, err := tabula.ParseGuid(m.text); err == nil {
				return g, nil
			}
		}
		return nil, bad(m.text + " is not an Edm.Guid")
	case tabula.EdmBinary:
		if m.kind == jsonString {
			if b, err := base64.StdEncoding.DecodeString(m.text); err == nil {
				return tabula.Binary(b), nil
			}
		}
		return nil, bad("value is not base64")
	}
	return nil, invalidInput("", "property "+strconv.Quote(name)+" is annotated with unknown type "+strconv.Quote(typ))
}

// isIntegral reports whether a JSON number literal has neither fraction nor exponent.
func isIntegral(s string) bool { return !strings.ContainsAny(s, ".eE") }

// isJSONNumber reports whether s is a JSON number literal, the form a string-encoded Double
// may take.
func isJSONNumber(s string) bool {
	p := jsonParser{data: []byte(s)}
	_, err := p.number()
	return err == nil && p.pos == len(s)
}

// parseDateTime reads an Edm.DateTime strictly in the ISO 8601 form the service's JSON reader
// takes and its clients write: yyyy-MM-ddTHH:mm:ss, then optionally a '.' and 1 to 9
// fraction digits (more than the service's 7 are truncated to its 100 ns ticks by the
// engine), then Z, an offset ±HH:MM, or nothing (taken as UTC). Every field has its full
// number of digits and its range; year 0 does not exist. Looser forms (a one-digit hour, a
// comma before the fraction) are refused rather than stored as a value no client could
// read back.
func parseDateTime(s string) (time.Time, error) {
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
