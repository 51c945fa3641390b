package tabula

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/tabuladb/tabula/odata"
)

// A stored entity value is a version byte followed by msgpack: the Timestamp in ticks, the
// number of properties, then per property (in byte order of names) its name, a type code and
// its value. The keys live in the storage key, not here.
//
// The type codes are persisted: never renumber them.
const recordVersion = 1

const (
	codeString   = 1
	codeBinary   = 2
	codeBoolean  = 3
	codeDateTime = 4 // ticks
	codeDouble   = 5
	codeGuid     = 6 // 16 bytes
	codeInt32    = 7
	codeInt64    = 8
)

// recordEncoder is a msgpack encoder writing into a byte slice it owns.
type recordEncoder struct {
	enc *msgpack.Encoder
	buf recordBuffer
}

// recordBuffer appends whatever is written to it; msgpack writes bytes one at a time where
// it can, so it implements io.ByteWriter too.
type recordBuffer struct{ b []byte }

func (w *recordBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
func (w *recordBuffer) WriteByte(c byte) error      { w.b = append(w.b, c); return nil }

var encoderPool = sync.Pool{New: func() any {
	e := &recordEncoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}}

// encodeRecord returns a new byte slice holding the record of an entity written at ticks.
// props must have been validated, and names must be its non-nil property names in byte
// order, as validateEntity returns them.
func encodeRecord(ticks int64, props Properties, names []string) []byte {
	// Size the buffer from byte lengths: strings and binaries as they are, a name and its
	// type and framing within 8 bytes, a fixed-size value within 9.
	size := 16
	for _, name := range names {
		size += len(name) + 8
		switch v := props[name].(type) {
		case String:
			size += len(v) + 5
		case Binary:
			size += len(v) + 5
		default:
			size += 17
		}
	}
	re := encoderPool.Get().(*recordEncoder)
	defer encoderPool.Put(re)
	re.buf.b = append(make([]byte, 0, size), recordVersion)
	enc := re.enc
	// Writes to a recordBuffer cannot fail, so the encoder's errors are not checked.
	_ = enc.EncodeInt(ticks)
	_ = enc.EncodeArrayLen(len(names))
	for _, name := range names {
		_ = enc.EncodeString(name)
		switch v := props[name].(type) {
		case String:
			_ = enc.EncodeUint8(codeString)
			_ = enc.EncodeString(string(v))
		case Binary:
			_ = enc.EncodeUint8(codeBinary)
			_ = enc.EncodeBytes(v)
		case Boolean:
			_ = enc.EncodeUint8(codeBoolean)
			_ = enc.EncodeBool(bool(v))
		case DateTime:
			_ = enc.EncodeUint8(codeDateTime)
			_ = enc.EncodeInt(ticksOf(time.Time(v)))
		case Double:
			_ = enc.EncodeUint8(codeDouble)
			_ = enc.EncodeFloat64(float64(v))
		case Guid:
			_ = enc.EncodeUint8(codeGuid)
			_ = enc.EncodeBytes(v[:])
		case Int32:
			_ = enc.EncodeUint8(codeInt32)
			_ = enc.EncodeInt(int64(v))
		case Int64:
			_ = enc.EncodeUint8(codeInt64)
			_ = enc.EncodeInt(int64(v))
		}
	}
	out := re.buf.b
	re.buf.b = nil // the record now belongs to the caller
	return out
}

// recordDecoder reads records; reuse one per goroutine (or take one from decoderPool) to
// avoid allocating a msgpack decoder per entity.
type recordDecoder struct {
	r   bytes.Reader
	dec *msgpack.Decoder
	// names interns property names: a table's entities mostly share them, and a scan would
	// otherwise allocate every name of every entity again.
	names map[string]string
}

// maxInternedNames bounds a decoder's interned names, however varied the entities it reads.
const maxInternedNames = 1024

// name reads a property name, interned.
func (d *recordDecoder) name(rest []byte) (string, error) {
	n, err := d.dec.DecodeBytesLen()
	if err != nil || n < 0 || n > d.r.Len() {
		return "", errCorrupt("bad property name")
	}
	// The decoder reads straight from d.r, so the name's bytes are the next n of rest.
	start := len(rest) - d.r.Len()
	raw := rest[start : start+n]
	if _, err := d.r.Seek(int64(n), io.SeekCurrent); err != nil {
		return "", errCorrupt(err.Error())
	}
	if s, ok := d.names[string(raw)]; ok {
		return s, nil
	}
	s := string(raw)
	if d.names == nil {
		d.names = make(map[string]string)
	}
	if len(d.names) < maxInternedNames {
		d.names[s] = s
	}
	return s, nil
}

var decoderPool = sync.Pool{New: func() any { return newRecordDecoder() }}

func newRecordDecoder() *recordDecoder {
	d := &recordDecoder{}
	d.dec = msgpack.NewDecoder(&d.r)
	return d
}

// each reads the record in b and calls visit with every property keep accepts (all of them
// when keep is nil); the others are skipped without being decoded. With a nil visit only the
// Timestamp is read.
func (d *recordDecoder) each(b []byte, keep func(name string) bool, visit func(name string, v odata.Value)) (ticks int64, err error) {
	if len(b) == 0 || b[0] != recordVersion {
		return 0, errCorrupt("unknown record version")
	}
	rest := b[1:]
	d.r.Reset(rest)
	d.dec.Reset(&d.r)
	if ticks, err = d.dec.DecodeInt64(); err != nil {
		return 0, errCorrupt(err.Error())
	}
	n, err := d.dec.DecodeArrayLen()
	if err != nil || n < 0 || n > MaxProperties {
		return 0, errCorrupt("bad property count")
	}
	for range n {
		name, err := d.name(rest)
		if err != nil {
			return 0, err
		}
		code, err := d.dec.DecodeUint8()
		if err != nil {
			return 0, errCorrupt(err.Error())
		}
		if visit == nil || (keep != nil && !keep(name)) {
			if err := d.dec.Skip(); err != nil {
				return 0, errCorrupt(err.Error())
			}
			continue
		}
		v, err := d.value(code)
		if err != nil {
			return 0, err
		}
		visit(name, v)
	}
	if d.r.Len() != 0 {
		return 0, errCorrupt("trailing bytes")
	}
	return ticks, nil
}

// decode reads the record in b into props (which may be nil to read only the Timestamp),
// keeping only the properties keep accepts when keep is non-nil.
func (d *recordDecoder) decode(b []byte, keep func(name string) bool, props Properties) (int64, error) {
	if props == nil {
		return d.each(b, nil, nil)
	}
	return d.each(b, keep, func(name string, v odata.Value) { props[name] = propertyOf(v) })
}

func (d *recordDecoder) value(code uint8) (odata.Value, error) {
	var (
		v   odata.Value
		err error
	)
	switch code {
	case codeString:
		v.Type = odata.String
		v.Str, err = d.dec.DecodeString()
	case codeBinary:
		v.Type = odata.Binary
		v.Bytes, err = d.dec.DecodeBytes()
		if v.Bytes == nil {
			v.Bytes = []byte{} // an empty Binary is a value, not a missing one
		}
	case codeBoolean:
		var b bool
		b, err = d.dec.DecodeBool()
		v = odata.BooleanValue(b)
	case codeDateTime:
		v.Type = odata.DateTime
		v.Int, err = d.dec.DecodeInt64()
	case codeDouble:
		v.Type = odata.Double
		v.Float, err = d.dec.DecodeFloat64()
	case codeGuid:
		v.Type = odata.Guid
		var n int
		if n, err = d.dec.DecodeBytesLen(); err == nil {
			if n != len(v.Guid) {
				return v, errCorrupt("guid is not 16 bytes")
			}
			err = d.dec.ReadFull(v.Guid[:])
		}
	case codeInt32:
		var i int32
		i, err = d.dec.DecodeInt32()
		v = odata.Int32Value(i)
	case codeInt64:
		v.Type = odata.Int64
		v.Int, err = d.dec.DecodeInt64()
	default:
		return v, errCorrupt(fmt.Sprintf("unknown type code %d", code))
	}
	if err != nil {
		return v, errCorrupt(err.Error())
	}
	return v, nil
}

// propertyOf converts a decoded value to its public type.
func propertyOf(v odata.Value) Property {
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
	default:
		return Int64(v.Int)
	}
}

func errCorrupt(why string) error {
	return ErrInternal.with("stored record is corrupt: %s", why)
}
