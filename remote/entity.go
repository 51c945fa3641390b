package remote

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

const annotation = "@odata.type"

// encodeEntity writes e as the JSON body the SDK takes. Every Double is annotated: the SDK
// re-encodes bodies through map[string]any, where 5.0 becomes 5, which the service would
// store as an Int32; with "Edm.Double" it stays a Double. Int64, DateTime, Guid and Binary
// are annotated as the service requires.
//
// JSON cannot carry two things the engine refuses with its own errors, so they are refused
// here with the same codes before anything is sent: text that is not valid UTF-8 (JSON
// would silently turn it into U+FFFD) and a property named like a key or the Timestamp
// (JSON would merge it with the entity's own).
func encodeEntity(e *tabula.Entity) ([]byte, error) {
	if err := checkKeys(e.PartitionKey, e.RowKey); err != nil {
		return nil, err
	}
	m := make(map[string]any, 2+2*len(e.Properties))
	for name, v := range e.Properties {
		if v == nil {
			continue // dropped, as the engine drops a nil value
		}
		if !utf8.ValidString(name) {
			return nil, withDetail(tabula.ErrPropertyNameInvalid, "property name %q is not valid UTF-8", name)
		}
		switch name {
		case "PartitionKey", "RowKey", "Timestamp":
			return nil, withDetail(tabula.ErrPropertyNameInvalid, "property name %q is a system property; set it through the Entity's fields", name)
		}
		value, typ, err := jsonValue(name, v)
		if err != nil {
			return nil, err
		}
		m[name] = value
		if typ != "" {
			m[name+annotation] = string(typ)
		}
	}
	m["PartitionKey"], m["RowKey"] = e.PartitionKey, e.RowKey
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("tabula/remote: encoding entity: %w", err)
	}
	return b, nil
}

func checkKeys(pk, rk string) error {
	if !utf8.ValidString(pk) {
		return withDetail(tabula.ErrInvalidInput, "PartitionKey is not valid UTF-8")
	}
	if !utf8.ValidString(rk) {
		return withDetail(tabula.ErrInvalidInput, "RowKey is not valid UTF-8")
	}
	return nil
}

// jsonValue is v as a JSON value and the annotation it needs (empty for none).
func jsonValue(name string, v tabula.Property) (any, tabula.EdmType, error) {
	switch v := v.(type) {
	case tabula.String:
		if !utf8.ValidString(string(v)) {
			return nil, "", withDetail(tabula.ErrInvalidInput, "property %q: string is not valid UTF-8", name)
		}
		return string(v), "", nil
	case tabula.Int32:
		return int32(v), "", nil
	case tabula.Boolean:
		return bool(v), "", nil
	case tabula.Int64:
		return strconv.FormatInt(int64(v), 10), tabula.EdmInt64, nil
	case tabula.Double:
		f := float64(v)
		switch {
		case math.IsNaN(f):
			return "NaN", tabula.EdmDouble, nil
		case math.IsInf(f, 1):
			return "Infinity", tabula.EdmDouble, nil
		case math.IsInf(f, -1):
			return "-Infinity", tabula.EdmDouble, nil
		}
		return f, tabula.EdmDouble, nil
	case tabula.DateTime:
		return v.String(), tabula.EdmDateTime, nil
	case tabula.Guid:
		return v.String(), tabula.EdmGuid, nil
	case tabula.Binary:
		return base64.StdEncoding.EncodeToString(v), tabula.EdmBinary, nil
	}
	return nil, "", withDetail(tabula.ErrInvalidValueType, "property %q has type %T, which is not a Tabula property type", name, v)
}

// decodeEntity reads an entity of a response, with the types its annotations and JSON
// values give, as `tabula serve` itself reads them.
func decodeEntity(raw []byte) (tabula.Entity, error) {
	e, err := server.DecodeEntity(raw)
	if err != nil {
		return tabula.Entity{}, fmt.Errorf("tabula/remote: the service's entity is unreadable: %w", err)
	}
	return e, nil
}

// etagTime reads the Timestamp out of an ETag, W/"datetime'2022-03-01T20%3A40%3A24.4317535Z'"
// as the service writes it; the zero time when it is not of that form.
func etagTime(etag tabula.ETag) time.Time {
	s, ok := strings.CutPrefix(string(etag), `W/"datetime'`)
	if !ok {
		return time.Time{}
	}
	s, ok = strings.CutSuffix(s, `'"`)
	if !ok {
		return time.Time{}
	}
	text, err := url.PathUnescape(s)
	if err != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
