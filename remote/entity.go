package remote

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/entitysink"
	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
)

// The JSON of entities is the wire codec's (internal/wire); this file is the edge where a
// tabula.Entity becomes a wire.Entity and back.

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
	we := wire.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Properties: make([]wire.Property, 0, len(e.Properties))}
	for name, v := range e.Properties {
		if v == nil {
			continue // dropped, as the engine drops a nil value
		}
		if !utf8.ValidString(name) {
			return nil, tabula.ErrPropertyNameInvalid.WithDetail("property name %q is not valid UTF-8", name)
		}
		switch name {
		case "PartitionKey", "RowKey", "Timestamp":
			return nil, tabula.ErrPropertyNameInvalid.WithDetail("property name %q is a system property; set it through the Entity's fields", name)
		}
		value, err := wireValue(name, v)
		if err != nil {
			return nil, err
		}
		we.Properties = append(we.Properties, wire.Property{Name: name, Value: value})
	}
	return wire.AppendBody(nil, &we, true), nil
}

func checkKeys(pk, rk string) error {
	if !utf8.ValidString(pk) {
		return tabula.ErrInvalidInput.WithDetail("PartitionKey is not valid UTF-8")
	}
	if !utf8.ValidString(rk) {
		return tabula.ErrInvalidInput.WithDetail("RowKey is not valid UTF-8")
	}
	return nil
}

// wireValue is v as the wire codec's value. Text that is not valid UTF-8 is refused, as
// the engine refuses it (JSON would silently turn it into U+FFFD), and so is a type that is
// not one of the eight (a struct that embeds one), which JSON would write as null.
func wireValue(name string, v tabula.Property) (odata.Value, error) {
	value := tabula.ValueOf(v)
	switch {
	case value.Type == 0:
		return value, tabula.ErrInvalidValueType.WithDetail("property %q has type %T, which is not a Tabula property type", name, v)
	case value.Type == odata.String && !utf8.ValidString(value.Str):
		return value, tabula.ErrInvalidInput.WithDetail("property %q: string is not valid UTF-8", name)
	}
	return value, nil
}

// decodeEntity reads an entity of a response, with the types its annotations and JSON
// values give, as `tabula serve` itself reads them.
func decodeEntity(raw []byte) (tabula.Entity, error) {
	we, err := decodeWire(raw, nil)
	if err != nil {
		return tabula.Entity{}, err
	}
	e := tabula.Entity{PartitionKey: we.PartitionKey, RowKey: we.RowKey, Timestamp: we.Timestamp,
		ETag: tabula.ETag(we.ETag), Properties: make(tabula.Properties, len(we.Properties))}
	for _, p := range we.Properties {
		e.Properties[p.Name] = tabula.PropertyOf(p.Value)
	}
	return e, nil
}

// decodeWire reads an entity of a response as the wire codec does, giving its properties to
// visit when it is not nil (wire.DecodeEntityTo).
func decodeWire(raw []byte, visit func(string, odata.Value)) (wire.Entity, error) {
	we, err := wire.DecodeEntityTo(raw, wire.KeysFromResponse, visit)
	if err != nil {
		return we, fmt.Errorf("tabula/remote: the service's entity is unreadable: %w", err)
	}
	return we, nil
}

// sinkEntity decodes an entity of a response into s, the typed read's (entitysink), with
// etag, when not empty, in place of the body's.
func sinkEntity(s entitysink.Sink, raw []byte, etag string) error {
	we, err := decodeWire(raw, s.Property)
	if err != nil {
		return err
	}
	if etag != "" {
		we.ETag = etag
	}
	s.Entity(&we)
	return nil
}

// etagTime reads the Timestamp out of an ETag, W/"datetime'2022-03-01T20%3A40%3A24.4317535Z'"
// as the service writes it; the zero time when it is not of that form.
func etagTime(etag tabula.ETag) time.Time {
	t, _, _ := wire.ETagTime(string(etag))
	return t
}
