package tabula

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/tabuladb/tabula/odata"
)

// The typed writes of the embedded engine: a struct is checked by the rules validateEntity
// applies to an Entity, in the same order and with the same errors, and its properties are
// encoded as a record's body (record.go's format, after the Timestamp) straight from its
// fields, without building Properties. Insert, and Update and Upsert in Replace mode, come
// this way; a Merge builds the Entity, as it merges with the stored one's Properties.

// recordWrites is what the embedded *Table offers the typed writes.
type recordWrites interface {
	// typedBodies reports whether applyBody may be used (no flavour's rules apply).
	typedBodies() bool
	// applyBody applies an Insert, or an Update or Upsert in Replace mode, of the keys of
	// a.Entity, whose record's body is body, and returns the Timestamp written.
	applyBody(ctx context.Context, a Action, body []byte) (int64, error)
}

var _ recordWrites = (*Table)(nil)

// structBody is the scratch of one typed write, pooled.
type structBody struct {
	b         []byte
	vals      []odata.Value // per field, the value to write; of no type when there is none
	restNames []string      // the catch-all's names to write, in byte order
}

var bodyPool = sync.Pool{New: func() any { return new(structBody) }}

func (w *structBody) release() {
	clear(w.vals) // they view the caller's struct
	clear(w.restNames)
	w.vals, w.restNames = w.vals[:0], w.restNames[:0]
	if cap(w.b) > maxArenaKept {
		w.b = nil
	}
	w.b = w.b[:0]
	bodyPool.Put(w)
}

// writeStruct is a typed Insert, or Update or Upsert in Replace mode, of the struct at base
// on src, which takes bodies (typedBodies); it returns the Timestamp written.
func writeStruct(ctx context.Context, src recordWrites, c *structCodec, base unsafe.Pointer, kind ActionKind, ifMatch ETag) (int64, error) {
	w := bodyPool.Get().(*structBody)
	defer w.release()
	body, err := c.appendBody(w, base)
	if err != nil {
		return 0, err
	}
	if kind == ActionUpdate { // as Action.validate: after the entity's rules
		if err := ifMatch.check(); err != nil {
			return 0, err
		}
	}
	a := Action{Kind: kind, Mode: Replace, IfMatch: ifMatch, Entity: Entity{
		PartitionKey: *(*string)(fieldAt(base, c.pk)), RowKey: *(*string)(fieldAt(base, c.rk))}}
	return src.applyBody(ctx, a, body)
}

// appendBody checks the entity of the struct at base as structCodec.entity and then
// validateEntity would, first error first, and encodes its properties into w.b as
// appendRecord does after the Timestamp.
func (c *structCodec) appendBody(w *structBody, base unsafe.Pointer) ([]byte, error) {
	if c.pk == noField || c.rk == noField {
		_, err := c.entity(base) // its error
		return nil, err
	}
	var rest Properties
	if c.rest != noField {
		rest = *(*Properties)(fieldAt(base, c.rest))
	}
	// The struct's own rules, as structCodec.entity applies them.
	w.vals = slices.Grow(w.vals[:0], len(c.fields))[:len(c.fields)]
	count := 0
	for i := range c.fields {
		f := &c.fields[i]
		v, ok, err := f.odataValue(base)
		if err != nil {
			return nil, c.fieldError(f, err)
		}
		if len(rest) > 0 {
			if p, dup := rest[f.name]; dup && (ok || p != nil) {
				return nil, &StructError{Type: c.typ, Field: f.goName,
					Problem: fmt.Sprintf("property %q is also in the catch-all of unnamed properties", f.name)}
			}
		}
		if ok {
			w.vals[i] = v
			count++
		}
	}
	// validateEntity's rules, in its order: keys, the count, properties in name order, size.
	pkLen, err := validateKey(propPartitionKey, *(*string)(fieldAt(base, c.pk)))
	if err != nil {
		return nil, err
	}
	rkLen, err := validateKey(propRowKey, *(*string)(fieldAt(base, c.rk)))
	if err != nil {
		return nil, err
	}
	for name, p := range rest {
		if p != nil {
			w.restNames = append(w.restNames, name)
		}
	}
	slices.Sort(w.restNames)
	count += len(w.restNames)
	if count > MaxProperties {
		return nil, ErrTooManyProperties.WithDetail("entity has %d properties; the limit is %d", count, MaxProperties)
	}
	size := 4 + 2*pkLen + 2*rkLen
	err = c.eachProperty(w, func(i int, name string) error {
		var nameLen, n int
		var err error
		if i < 0 {
			if nameLen, err = validatePropertyName(name); err == nil {
				n, err = validateValue(name, rest[name])
			}
		} else {
			nameLen = c.fields[i].nameLen
			switch v := &w.vals[i]; v.Type {
			case odata.String:
				n, err = validateString(name, v.Str)
			case odata.Binary:
				n, err = len(v.Bytes)+4, validateBinaryLen(name, len(v.Bytes))
			case odata.DateTime: // the time as given, which ticks may have cut into range
				n, err = 8, validateDateTime(name, *(*time.Time)(c.fields[i].addr(base)))
			default:
				n = valueSizeOf(v)
			}
		}
		size += 8 + 2*nameLen + n
		return err
	})
	if err != nil {
		return nil, err
	}
	if size > MaxEntitySize {
		return nil, ErrEntityTooLarge.WithDetail("entity is %d bytes by the service's size formula; the limit is %d", size, MaxEntitySize)
	}

	re := encoderPool.Get().(*recordEncoder)
	defer encoderPool.Put(re)
	re.buf.b = w.b[:0]
	_ = re.enc.EncodeArrayLen(count)
	_ = c.eachProperty(w, func(i int, name string) error {
		if i >= 0 {
			re.property(name, &w.vals[i])
		} else {
			v := ValueOf(rest[name])
			re.property(name, &v)
		}
		return nil
	})
	w.b, re.buf.b = re.buf.b, nil
	return w.b, nil
}

// eachProperty calls visit with every property to write in byte order of names: a field's
// index, or -1 for a name of the catch-all. It stops at visit's first error.
func (c *structCodec) eachProperty(w *structBody, visit func(i int, name string) error) error {
	r := 0
	for i := range c.fields {
		if w.vals[i].Type == 0 {
			continue
		}
		name := c.fields[i].name
		for ; r < len(w.restNames) && w.restNames[r] < name; r++ {
			if err := visit(-1, w.restNames[r]); err != nil {
				return err
			}
		}
		if err := visit(i, name); err != nil {
			return err
		}
	}
	for ; r < len(w.restNames); r++ {
		if err := visit(-1, w.restNames[r]); err != nil {
			return err
		}
	}
	return nil
}

// valueSizeOf is valueSize of a fixed-size value as an odata.Value.
func valueSizeOf(v *odata.Value) int {
	switch v.Type {
	case odata.Boolean:
		return 1
	case odata.Guid:
		return 16
	case odata.Int32:
		return 4
	}
	return 8 // DateTime, Double, Int64
}
