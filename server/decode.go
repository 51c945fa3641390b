package server

import (
	"encoding/base64"
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
	seen := make(map[string]struct{}, len(members))
	types := make(map[string]string)
	for _, m := range members {
		if _, dup := seen[m.name]; dup {
			return tabula.Entity{}, withDetail(tabula.ErrDuplicatePropertiesSpecified, "member "+strconv.Quote(m.name)+" appears more than once")
		}
		seen[m.name] = struct{}{}
		if name, ok := strings.CutSuffix(m.name, annotationSuffix); ok && name != "" {
			if m.kind != jsonString {
				return tabula.Entity{}, invalidInput("", "annotation "+strconv.Quote(m.name)+" is not a string")
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

// parseDateTime reads ISO 8601 as the service's JSON reader does: with a Z or an offset,
// or without a zone (taken as UTC), and with up to 7 fraction digits (more are accepted and
// truncated to the service's 100 ns ticks by the engine).
func parseDateTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	return time.Parse("2006-01-02T15:04:05.999999999", s)
}
