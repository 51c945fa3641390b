package tabula

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/tabuladb/tabula/odata"
)

// The mapping of a struct type to entities: worked out once per type by reflection, checked,
// and cached; reading and writing then go through field offsets, without reflection per value.

// StructError reports a struct type that does not map to entities, or a value that does not
// fit its field: the type, the Go field (a path through embedded structs, such as
// "Base.Created"), and what is wrong. Where a rule of the service is broken (a property name
// it refuses), it unwraps to that rule's *Error, so errors.Is works as on an Entity.
type StructError struct {
	Type    reflect.Type
	Field   string // empty when the problem is the type's as a whole
	Problem string
	Err     error // the rule broken, when it is the service's
}

func (e *StructError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("tabula: struct %v: %s", e.Type, e.Problem)
	}
	return fmt.Sprintf("tabula: struct %v field %s: %s", e.Type, e.Field, e.Problem)
}

func (e *StructError) Unwrap() error { return e.Err }

// fieldKind says how a field's Go value is read and written.
type fieldKind uint8

const (
	kindString   fieldKind = iota + 1 // string kinds, as String
	kindGuidText                      // string kinds, as a Guid in its text form
	kindBinary                        // []byte
	kindBool                          // bool
	kindTime                          // time.Time or DateTime, as DateTime
	kindFloat64                       // float64
	kindGuid                          // [16]byte kinds
	kindInt32                         // int32 kinds
	kindInt64                         // int64 kinds
	kindInt                           // int kinds
)

// structField is one property a struct maps.
type structField struct {
	name      string // the property's
	nameLen   int    // name's length in UTF-16 code units
	goName    string // the field's path, for errors
	offset    uintptr
	kind      fieldKind
	edm       odata.Type // the property's type
	omitempty bool
	ptr       reflect.Type // the field's type when it is a pointer to the value, else nil
}

// structCodec is the mapping of one struct type.
type structCodec struct {
	typ    reflect.Type
	fields []structField // by property name, in byte order: records' order
	// offsets of the system fields and the catch-all; noField when the struct has none.
	pk, rk, timestamp, etag, rest uintptr
	err                           error
	// gets and pages pool the typedGetOfs and typedPages of the type's reads.
	gets, pages sync.Pool
}

const noField = ^uintptr(0)

var structCodecs sync.Map // reflect.Type → *structCodec

// codecOf returns the cached mapping of T, or the error that T does not map.
func codecOf[T any]() (*structCodec, error) {
	typ := reflect.TypeFor[T]()
	if c, ok := structCodecs.Load(typ); ok {
		c := c.(*structCodec)
		return c, c.err
	}
	c := newStructCodec(typ)
	got, _ := structCodecs.LoadOrStore(typ, c)
	c = got.(*structCodec)
	return c, c.err
}

var (
	typeTime       = reflect.TypeFor[time.Time]()
	typeDateTime   = reflect.TypeFor[DateTime]()
	typeETag       = reflect.TypeFor[ETag]()
	typeProperties = reflect.TypeFor[Properties]()
)

// newStructCodec works out the mapping of typ; a type that does not map gets a codec whose
// err says why.
func newStructCodec(typ reflect.Type) *structCodec {
	c := &structCodec{typ: typ, pk: noField, rk: noField, timestamp: noField, etag: noField, rest: noField}
	fail := func(field, format string, args ...any) *structCodec {
		c.err = &StructError{Type: typ, Field: field, Problem: fmt.Sprintf(format, args...)}
		return c
	}
	if typ.Kind() != reflect.Struct {
		return fail("", "is a %v, not a struct", typ.Kind())
	}
	seen := map[string]string{} // property name → field
	var walk func(t reflect.Type, base uintptr, path string) *structCodec
	walk = func(t reflect.Type, base uintptr, path string) *structCodec {
		for i := range t.NumField() {
			f := t.Field(i)
			goName := path + f.Name
			tag, hasTag := f.Tag.Lookup("tabula")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct && f.Type != typeTime && f.Type != typeDateTime {
				if r := walk(f.Type, base+f.Offset, goName+"."); r != nil {
					return r
				}
				continue
			}
			if !f.IsExported() {
				if hasTag {
					return fail(goName, "is unexported, so it cannot be tagged")
				}
				continue
			}
			off := base + f.Offset
			system := func(slot *uintptr, what string, ok bool, want string) *structCodec {
				if !ok {
					return fail(goName, "is the %s, so it must be a %s, not %v", what, want, f.Type)
				}
				if *slot != noField {
					return fail(goName, "is a second %s field", what)
				}
				if opts != "" {
					return fail(goName, "is the %s, which takes no options (%q)", what, opts)
				}
				*slot = off
				return nil
			}
			var r *structCodec
			switch {
			case f.Type == typeProperties:
				r = system(&c.rest, "catch-all of unnamed properties", name == "", "Properties without a name")
			case f.Type == typeETag || name == "" && f.Name == "ETag":
				r = system(&c.etag, "ETag", f.Type.Kind() == reflect.String, "tabula.ETag or string")
			case name == propPartitionKey || name == "" && f.Name == propPartitionKey:
				r = system(&c.pk, propPartitionKey, f.Type.Kind() == reflect.String, "string")
			case name == propRowKey || name == "" && f.Name == propRowKey:
				r = system(&c.rk, propRowKey, f.Type.Kind() == reflect.String, "string")
			case name == propTimestamp || name == "" && f.Name == propTimestamp:
				r = system(&c.timestamp, propTimestamp, f.Type == typeTime, "time.Time")
			default:
				if name == "" {
					name = f.Name
				}
				sf, err := newStructField(f, name, opts)
				if err != nil {
					return fail(goName, "%s", err.Problem).withErr(err.Err)
				}
				sf.goName, sf.offset = goName, off
				if prev, dup := seen[name]; dup {
					return fail(goName, "maps to property %q, as field %s does", name, prev)
				}
				seen[name] = goName
				c.fields = append(c.fields, sf)
			}
			if r != nil {
				return r
			}
		}
		return nil
	}
	if r := walk(typ, 0, ""); r != nil {
		return r
	}
	slices.SortFunc(c.fields, func(a, b structField) int { return strings.Compare(a.name, b.name) })
	return c
}

func (c *structCodec) withErr(err error) *structCodec {
	c.err.(*StructError).Err = err
	return c
}

// newStructField maps one field to a property of the given name; the options are the tag's
// after the name: omitempty, and an EDM type where Go's type does not say it.
func newStructField(f reflect.StructField, name, opts string) (structField, *StructError) {
	sf := structField{name: name}
	n, err := validatePropertyName(name)
	if err != nil {
		var te *Error
		errors.As(err, &te)
		return sf, &StructError{Problem: te.Detail, Err: err} // the detail names the property
	}
	sf.nameLen = n
	var edm EdmType
	for opt := range strings.SplitSeq(opts, ",") {
		switch {
		case opt == "":
		case opt == "omitempty":
			sf.omitempty = true
		case strings.HasPrefix(opt, "Edm.") && edm == "":
			edm = EdmType(opt)
		default:
			return sf, &StructError{Problem: fmt.Sprintf("tag option %q is neither omitempty nor one EDM type such as Edm.Int64", opt)}
		}
	}
	t := f.Type
	if t.Kind() == reflect.Pointer && t != typeProperties {
		sf.ptr = t
		t = t.Elem()
	}
	switch {
	case t == typeTime || t == typeDateTime:
		sf.kind, sf.edm = kindTime, odata.DateTime
	case t.Kind() == reflect.String:
		sf.kind, sf.edm = kindString, odata.String
		if edm == EdmGuid {
			sf.kind, sf.edm = kindGuidText, odata.Guid
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		sf.kind, sf.edm = kindBinary, odata.Binary
	case t.Kind() == reflect.Array && t.Elem().Kind() == reflect.Uint8 && t.Len() == 16:
		sf.kind, sf.edm = kindGuid, odata.Guid
	case t.Kind() == reflect.Bool:
		sf.kind, sf.edm = kindBool, odata.Boolean
	case t.Kind() == reflect.Float64:
		sf.kind, sf.edm = kindFloat64, odata.Double
	case t.Kind() == reflect.Int32:
		sf.kind, sf.edm = kindInt32, odata.Int32
	case t.Kind() == reflect.Int64:
		sf.kind, sf.edm = kindInt64, odata.Int64
	case t.Kind() == reflect.Int:
		sf.kind, sf.edm = kindInt, odata.Int64
	default:
		return sf, &StructError{Problem: fmt.Sprintf("type %v maps to no EDM type (string, []byte, bool, float64, int32, int64, int, [16]byte, time.Time, or a pointer to one)", f.Type)}
	}
	if edm != "" && edm != EdmType(sf.edm.String()) {
		switch {
		case edm == EdmInt32 && (sf.kind == kindInt64 || sf.kind == kindInt):
			sf.edm = odata.Int32
		case edm == EdmInt64 && sf.kind == kindInt32:
			sf.edm = odata.Int64
		default:
			return sf, &StructError{Problem: fmt.Sprintf("type %v cannot be stored as %s", f.Type, edm)}
		}
	}
	return sf, nil
}

// fieldAt is the address of the field at offset off of the struct at base.
func fieldAt(base unsafe.Pointer, off uintptr) unsafe.Pointer { return unsafe.Add(base, off) }

// value returns the field's property at base, and whether it is there to write: a nil
// pointer, and an empty value with omitempty, are not.
func (f *structField) value(base unsafe.Pointer) (Property, bool, error) {
	v, ok, err := f.odataValue(base)
	if !ok || err != nil {
		return nil, ok, err
	}
	if f.kind == kindTime { // as given, not yet cut to the service's ticks
		return DateTime(*(*time.Time)(f.addr(base))), true, nil
	}
	return PropertyOf(v), true, nil
}

// addr is the address of the field's value at base; nil for a nil pointer.
func (f *structField) addr(base unsafe.Pointer) unsafe.Pointer {
	p := fieldAt(base, f.offset)
	if f.ptr != nil {
		p = *(*unsafe.Pointer)(p)
	}
	return p
}

// odataValue is value as an odata.Value, which holds a DateTime in ticks, without boxing it:
// the typed writes encode it so.
func (f *structField) odataValue(base unsafe.Pointer) (odata.Value, bool, error) {
	var v odata.Value
	p := f.addr(base)
	if p == nil {
		return v, false, nil
	}
	empty := false
	switch f.kind {
	case kindString:
		s := *(*string)(p)
		v, empty = odata.StringValue(s), s == ""
	case kindGuidText:
		s := *(*string)(p)
		if s == "" && f.omitempty {
			return v, false, nil
		}
		g, err := ParseGuid(s)
		if err != nil {
			return v, false, err
		}
		v = odata.GuidValue(g)
	case kindBinary:
		b := *(*[]byte)(p)
		v, empty = odata.BinaryValue(b), len(b) == 0
	case kindBool:
		b := *(*bool)(p)
		v, empty = odata.BooleanValue(b), !b
	case kindTime:
		t := (*time.Time)(p)
		v, empty = odata.DateTimeValue(ticksOf(*t)), t.IsZero()
	case kindFloat64:
		d := *(*float64)(p)
		v, empty = odata.DoubleValue(d), d == 0
	case kindGuid:
		g := *(*Guid)(p)
		v, empty = odata.GuidValue(g), g == Guid{}
	case kindInt32:
		i := *(*int32)(p)
		v, empty = odata.Int32Value(i), i == 0
		if f.edm == odata.Int64 {
			v = odata.Int64Value(int64(i))
		}
	case kindInt64, kindInt:
		var i int64
		if f.kind == kindInt {
			i = int64(*(*int)(p))
		} else {
			i = *(*int64)(p)
		}
		v, empty = odata.Int64Value(i), i == 0
		if f.edm == odata.Int32 {
			if i < math.MinInt32 || i > math.MaxInt32 {
				return odata.Value{}, false, fmt.Errorf("value %d does not fit the field's Edm.Int32", i)
			}
			v = odata.Int32Value(int32(i))
		}
	}
	if empty && f.omitempty && f.ptr == nil {
		return odata.Value{}, false, nil
	}
	return v, true, nil
}

// set stores v, a property of the field's name, in the field at base. A value of another
// type is an error, but for an Int32 read into a field of Edm.Int64, which it always fits.
func (f *structField) set(base unsafe.Pointer, v odata.Value) error {
	if v.Type != f.edm && !(v.Type == odata.Int32 && f.edm == odata.Int64) {
		return fmt.Errorf("property %q is %s, not the field's %s", f.name, v.Type, f.edm)
	}
	p := fieldAt(base, f.offset)
	if f.ptr != nil {
		elem := reflect.New(f.ptr.Elem()).UnsafePointer()
		*(*unsafe.Pointer)(p) = elem
		p = elem
	}
	switch f.kind {
	case kindString:
		*(*string)(p) = v.Str
	case kindGuidText:
		*(*string)(p) = odata.FormatGuid(v.Guid)
	case kindBinary:
		*(*[]byte)(p) = v.Bytes
	case kindBool:
		*(*bool)(p) = v.Int != 0
	case kindTime:
		*(*time.Time)(p) = timeOfTicks(v.Int)
	case kindFloat64:
		*(*float64)(p) = v.Float
	case kindGuid:
		*(*[16]byte)(p) = v.Guid
	case kindInt32:
		if v.Int < math.MinInt32 || v.Int > math.MaxInt32 {
			return fmt.Errorf("property %q is %d, which does not fit the field's int32", f.name, v.Int)
		}
		*(*int32)(p) = int32(v.Int)
	case kindInt64:
		*(*int64)(p) = v.Int
	case kindInt:
		*(*int)(p) = int(v.Int)
	}
	return nil
}

// fieldError attributes err, met at field f of c's type, to it.
func (c *structCodec) fieldError(f *structField, err error) error {
	if se, ok := err.(*StructError); ok {
		return se
	}
	var te *Error
	if errors.As(err, &te) {
		return &StructError{Type: c.typ, Field: f.goName, Problem: te.Detail, Err: err}
	}
	return &StructError{Type: c.typ, Field: f.goName, Problem: err.Error()}
}

// entity returns the entity of the struct at base: its keys, and a property for every field
// that has one to write and every property of the catch-all. A property both a field and the
// catch-all hold is an error, rather than one of them silently lost.
func (c *structCodec) entity(base unsafe.Pointer) (Entity, error) {
	var e Entity
	if c.pk == noField || c.rk == noField {
		missing := propPartitionKey
		if c.pk != noField {
			missing = propRowKey
		}
		return e, &StructError{Type: c.typ, Problem: "has no " + missing + " field, so it cannot be written"}
	}
	e.PartitionKey = *(*string)(fieldAt(base, c.pk))
	e.RowKey = *(*string)(fieldAt(base, c.rk))
	var rest Properties
	if c.rest != noField {
		rest = *(*Properties)(fieldAt(base, c.rest))
	}
	e.Properties = make(Properties, len(c.fields)+len(rest))
	for name, v := range rest {
		e.Properties[name] = v
	}
	for i := range c.fields {
		f := &c.fields[i]
		v, ok, err := f.value(base)
		if err != nil {
			return Entity{}, c.fieldError(f, err)
		}
		if _, dup := rest[f.name]; dup && (ok || rest[f.name] != nil) {
			return Entity{}, &StructError{Type: c.typ, Field: f.goName,
				Problem: fmt.Sprintf("property %q is also in the catch-all of unnamed properties", f.name)}
		}
		if ok {
			e.Properties[f.name] = v
		}
	}
	return e, nil
}

// fill sets the struct at base from e: keys, Timestamp, ETag, the fields e has properties
// for, and the catch-all with the properties no field names. The struct must be zero.
func (c *structCodec) fill(base unsafe.Pointer, e *Entity) error {
	c.setKeys(base, e.PartitionKey, e.RowKey)
	c.setVersion(base, e.Timestamp, e.ETag)
	// In name order, as records hold them, so that both report the same first misfit.
	for _, name := range sortedNames(e.Properties) {
		if err := c.put(base, name, ValueOf(e.Properties[name]), -1); err != nil {
			return err
		}
	}
	return nil
}

// field returns the index of the field of property name, or -1. Records and fields are both
// in name order, so the search starts at from, the field after the one found last, unless
// name does not come after that one (a record out of order, which only a corrupt one is).
func (c *structCodec) field(name string, from int) int {
	if from > 0 && c.fields[from-1].name >= name {
		from = 0
	}
	for i := from; i < len(c.fields); i++ {
		switch n := c.fields[i].name; {
		case n == name:
			return i
		case n > name:
			return -1
		}
	}
	return -1
}

// put stores property name in the field of that name (i, when known, else -1), or in the
// catch-all, or drops it when the struct has neither.
func (c *structCodec) put(base unsafe.Pointer, name string, v odata.Value, i int) error {
	if i < 0 {
		i = c.field(name, 0)
	}
	if i >= 0 {
		f := &c.fields[i]
		if err := f.set(base, v); err != nil {
			return c.fieldError(f, err)
		}
		return nil
	}
	if c.rest != noField {
		c.putRest(base, name, v)
	}
	return nil
}

// recordReader decodes stored records into structs of one codec (record_typed.go). It is
// pooled per codec, so that a read allocates only what the struct keeps.
type recordReader struct {
	c *structCodec
	d *recordDecoder
	// strs holds the strings of the struct decoded last, one allocation for all of them
	// (and, in a scan, its RowKey and ETag): sized, at its first string, for the rest of the
	// record and spare bytes. It is a struct's own, so keeping a struct keeps no other's.
	strs  stringArena
	spare int // the bytes strs has beyond the record's: a scan's last RowKey and ETag
}

func (c *structCodec) newRecordReader() *recordReader {
	return &recordReader{c: c, d: newRecordDecoder()}
}
