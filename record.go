package tabula

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

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
	return appendRecord(make([]byte, 0, recordSize(props, names)), ticks, props, names)
}

// recordSize bounds the bytes of a record from byte lengths: strings and binaries as they
// are, a name and its type and framing within 8 bytes, a fixed-size value within 9.
func recordSize(props Properties, names []string) int {
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
	return size
}

// appendRecord appends to dst the record encodeRecord returns.
func appendRecord(dst []byte, ticks int64, props Properties, names []string) []byte {
	re := encoderPool.Get().(*recordEncoder)
	defer encoderPool.Put(re)
	re.buf.b = appendRecordHead(dst, ticks)
	// Writes to a recordBuffer cannot fail, so the encoder's errors are not checked.
	_ = re.enc.EncodeArrayLen(len(names))
	for _, name := range names {
		v := ValueOf(props[name])
		re.property(name, &v)
	}
	out := re.buf.b
	re.buf.b = nil // the record now belongs to the caller
	return out
}

// appendRecordHead appends what a record holds before its properties' count: the version
// and the Timestamp. The typed writes encode the rest before the write's Timestamp is known
// (structCodec.appendBody).
func appendRecordHead(dst []byte, ticks int64) []byte {
	re := encoderPool.Get().(*recordEncoder)
	defer encoderPool.Put(re)
	re.buf.b = append(dst, recordVersion)
	_ = re.enc.EncodeInt(ticks)
	out := re.buf.b
	re.buf.b = nil
	return out
}

// property writes one property of a record: its name, type code and value.
func (re *recordEncoder) property(name string, v *odata.Value) {
	enc := re.enc
	_ = enc.EncodeString(name)
	switch v.Type {
	case odata.String:
		_ = enc.EncodeUint8(codeString)
		_ = enc.EncodeString(v.Str)
	case odata.Binary:
		_ = enc.EncodeUint8(codeBinary)
		_ = enc.EncodeBytes(v.Bytes)
	case odata.Boolean:
		_ = enc.EncodeUint8(codeBoolean)
		_ = enc.EncodeBool(v.Int != 0)
	case odata.DateTime, odata.Int32, odata.Int64: // DateTimes in ticks
		code := uint8(codeInt64)
		switch v.Type {
		case odata.DateTime:
			code = codeDateTime
		case odata.Int32:
			code = codeInt32
		}
		_ = enc.EncodeUint8(code)
		_ = enc.EncodeInt(v.Int)
	case odata.Double:
		_ = enc.EncodeUint8(codeDouble)
		_ = enc.EncodeFloat64(v.Float)
	case odata.Guid:
		_ = enc.EncodeUint8(codeGuid)
		// As EncodeBytes writes it, without handing the array to its io.Writer (which
		// would move the Value to the heap).
		_ = enc.EncodeBytesLen(len(v.Guid))
		re.buf.b = append(re.buf.b, v.Guid[:]...)
	}
}

// writeArena holds the keys and records of one call's writes, which the store references
// until the call's commit is over, in one buffer reused from call to call: a write then
// allocates no key or record of its own (the in-memory store copies them; Badger copies them
// when it commits). A slice carved out earlier stays valid when the buffer grows, since it
// keeps the array it was carved from.
type writeArena struct{ b []byte }

// maxArenaKept bounds the buffer an arena keeps for its next call, so that one large entity
// does not pin its size in a pool.
const maxArenaKept = 256 << 10

// arenaPool holds the arenas of transactions (a single write's is in its writeOp).
var arenaPool = sync.Pool{New: func() any { return new(writeArena) }}

// carve returns what was appended to the arena since it held start bytes, capped so that
// appending to it cannot overwrite what is carved next.
func (a *writeArena) carve(start int) []byte { return a.b[start:len(a.b):len(a.b)] }

// reset makes the arena ready for the next call, once the store no longer references what
// it holds.
func (a *writeArena) reset() {
	if cap(a.b) > maxArenaKept {
		a.b = nil
	}
	a.b = a.b[:0]
}

// Records are read by hand rather than through msgpack's Decoder: the format is small and
// fixed, and reading straight from the stored bytes copies each string once (the Decoder
// copies it into a buffer first) and each name not at all (names are interned). The
// encodings read are exactly those encodeRecord's msgpack.Encoder writes.

// recordDecoder reads records; take one from decoderPool, or keep one per scan.
type recordDecoder struct {
	b []byte // the record being read, after its version byte
	i int    // read position in b
	// names interns property names: a table's entities mostly share them, and a scan would
	// otherwise allocate every name of every entity again.
	names map[string]string
	// views makes string values views of the record's bytes rather than copies: valid only
	// while those bytes are, for a filter to read before anything is built (see
	// scanner.decodeRecord, which copies what it keeps).
	views bool
	// props is where decode puts properties, through put (recordDecoder.putProp, bound
	// once): a closure per decode would be an allocation per read.
	props Properties
	put   func(name string, v odata.Value)
}

// maxInternedNames bounds a decoder's interned names, however varied the entities it reads.
const maxInternedNames = 1024

var decoderPool = sync.Pool{New: func() any { return newRecordDecoder() }}

func newRecordDecoder() *recordDecoder {
	d := &recordDecoder{}
	d.put = d.putProp
	return d
}

func (d *recordDecoder) putProp(name string, v odata.Value) { d.props[name] = PropertyOf(v) }

// msgpack type bytes, as the msgpack specification numbers them.
const (
	mpNil, mpFalse, mpTrue         = 0xc0, 0xc2, 0xc3
	mpBin8, mpBin16, mpBin32       = 0xc4, 0xc5, 0xc6
	mpFloat64                      = 0xcb
	mpUint8, mpUint16, mpUint32    = 0xcc, 0xcd, 0xce
	mpUint64                       = 0xcf
	mpInt8, mpInt16, mpInt32       = 0xd0, 0xd1, 0xd2
	mpInt64                        = 0xd3
	mpStr8, mpStr16, mpStr32       = 0xd9, 0xda, 0xdb
	mpArray16, mpArray32           = 0xdc, 0xdd
	mpFixStr, mpFixArray, mpNegFix = 0xa0, 0x90, 0xe0
	mpFixStrMax, mpFixArrayMax     = 0xbf, 0x9f
	mpPosFixMax                    = 0x7f
)

var errRecordCorrupt = errCorrupt("malformed msgpack")

// next returns the next n bytes.
func (d *recordDecoder) next(n int) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.i {
		return nil, errRecordCorrupt
	}
	out := d.b[d.i : d.i+n]
	d.i += n
	return out, nil
}

// uint reads a big-endian unsigned integer of n bytes.
func (d *recordDecoder) uint(n int) (uint64, error) {
	raw, err := d.next(n)
	var u uint64
	for _, c := range raw {
		u = u<<8 | uint64(c)
	}
	return u, err
}

// int reads any msgpack integer that fits an int64.
func (d *recordDecoder) int() (int64, error) {
	raw, err := d.next(1)
	if err != nil {
		return 0, err
	}
	switch c := raw[0]; {
	case c <= mpPosFixMax:
		return int64(c), nil
	case c >= mpNegFix:
		return int64(int8(c)), nil
	case c >= mpUint8 && c <= mpUint64:
		u, err := d.uint(1 << (c - mpUint8))
		if u > math.MaxInt64 {
			return 0, errRecordCorrupt
		}
		return int64(u), err
	case c >= mpInt8 && c <= mpInt64:
		n := 1 << (c - mpInt8)
		u, err := d.uint(n)
		shift := 64 - 8*n // sign-extend from n bytes
		return int64(u<<shift) >> shift, err
	}
	return 0, errRecordCorrupt
}

// length reads the header of a string, binary or array and returns its length; kind says
// which of them is expected.
func (d *recordDecoder) length(kind byte) (int, error) {
	raw, err := d.next(1)
	if err != nil {
		return 0, err
	}
	c := raw[0]
	var size int // bytes of the length that follows the type byte
	switch {
	case kind == mpFixStr && c >= mpFixStr && c <= mpFixStrMax:
		return int(c - mpFixStr), nil
	case kind == mpFixArray && c >= mpFixArray && c <= mpFixArrayMax:
		return int(c - mpFixArray), nil
	case kind == mpFixStr && c >= mpStr8 && c <= mpStr32:
		size = 1 << (c - mpStr8)
	case kind == mpBin8 && c >= mpBin8 && c <= mpBin32:
		size = 1 << (c - mpBin8)
	case kind == mpBin8 && c == mpNil: // msgpack writes an empty or nil []byte as nil
		return 0, nil
	case kind == mpFixArray && (c == mpArray16 || c == mpArray32):
		size = 2 << (c - mpArray16)
	default:
		return 0, errRecordCorrupt
	}
	u, err := d.uint(size)
	if u > uint64(len(d.b)) {
		return 0, errRecordCorrupt
	}
	return int(u), err
}

// bytes reads a string's or a binary's bytes, without copying them.
func (d *recordDecoder) bytes(kind byte) ([]byte, error) {
	n, err := d.length(kind)
	if err != nil {
		return nil, err
	}
	return d.next(n)
}

// name reads a property name, interned.
func (d *recordDecoder) name() (string, error) {
	raw, err := d.bytes(mpFixStr)
	if err != nil {
		return "", err
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

// head reads what a record holds before its properties: the Timestamp's ticks and how
// many properties follow.
func (d *recordDecoder) head() (ticks int64, n int, err error) {
	if ticks, err = d.int(); err != nil {
		return 0, 0, err
	}
	n, err = d.length(mpFixArray)
	if err != nil || n > MaxProperties {
		return 0, 0, errCorrupt("bad property count")
	}
	return ticks, n, nil
}

// each reads the record in b and calls visit with every property keep accepts (all of them
// when keep is nil); the others are skipped without being decoded. With a nil visit only the
// Timestamp is read.
func (d *recordDecoder) each(b []byte, keep func(name string) bool, visit func(name string, v odata.Value)) (int64, error) {
	if len(b) == 0 || b[0] != recordVersion {
		return 0, errCorrupt("unknown record version")
	}
	d.b, d.i = b[1:], 0
	defer func() { d.b = nil }() // the bytes belong to the store
	ticks, n, err := d.head()
	if err != nil {
		return 0, err
	}
	for range n {
		name, err := d.name()
		if err != nil {
			return 0, err
		}
		code, err := d.int()
		if err != nil {
			return 0, err
		}
		v, err := d.value(code, visit == nil || keep != nil && !keep(name))
		if err != nil {
			return 0, err
		}
		if v.Type != 0 {
			visit(name, v)
		}
	}
	if d.i != len(d.b) {
		return 0, errCorrupt("trailing bytes")
	}
	return ticks, nil
}

// count reads how many properties the record in b holds, for sizing the map it is decoded
// into.
func (d *recordDecoder) count(b []byte) (int, error) {
	if len(b) == 0 || b[0] != recordVersion {
		return 0, errCorrupt("unknown record version")
	}
	d.b, d.i = b[1:], 0
	defer func() { d.b = nil }()
	if _, err := d.int(); err != nil {
		return 0, err
	}
	n, err := d.length(mpFixArray)
	if err != nil || n > MaxProperties {
		return 0, errCorrupt("bad property count")
	}
	return n, nil
}

// decode reads the record in b into props (which may be nil to read only the Timestamp),
// keeping only the properties keep accepts when keep is non-nil.
func (d *recordDecoder) decode(b []byte, keep func(name string) bool, props Properties) (int64, error) {
	if props == nil {
		return d.each(b, nil, nil)
	}
	d.props = props
	defer func() { d.props = nil }()
	return d.each(b, keep, d.put)
}

// value reads a value of the type code; skipping, it returns the zero Value and allocates
// nothing.
func (d *recordDecoder) value(code int64, skip bool) (odata.Value, error) {
	var v odata.Value
	switch code {
	case codeString:
		raw, err := d.bytes(mpFixStr)
		if err != nil || skip {
			return v, err
		}
		if d.views {
			return odata.StringValue(unsafe.String(unsafe.SliceData(raw), len(raw))), nil
		}
		return odata.StringValue(string(raw)), nil
	case codeBinary:
		raw, err := d.bytes(mpBin8)
		if err != nil || skip {
			return v, err
		}
		return odata.BinaryValue(append([]byte{}, raw...)), nil // empty is a value, never nil
	case codeBoolean:
		raw, err := d.next(1)
		if err != nil || raw[0] != mpTrue && raw[0] != mpFalse {
			return v, errRecordCorrupt
		}
		if skip {
			return v, nil
		}
		return odata.BooleanValue(raw[0] == mpTrue), nil
	case codeDateTime, codeInt32, codeInt64:
		i, err := d.int()
		if err != nil || skip {
			return v, err
		}
		switch code {
		case codeDateTime:
			return odata.DateTimeValue(i), nil
		case codeInt32:
			if i < math.MinInt32 || i > math.MaxInt32 {
				return v, errRecordCorrupt
			}
			return odata.Int32Value(int32(i)), nil
		}
		return odata.Int64Value(i), nil
	case codeDouble:
		raw, err := d.next(1)
		if err != nil || raw[0] != mpFloat64 {
			return v, errRecordCorrupt
		}
		u, err := d.uint(8)
		if err != nil || skip {
			return v, err
		}
		return odata.DoubleValue(math.Float64frombits(u)), nil
	case codeGuid:
		raw, err := d.bytes(mpBin8)
		if err != nil || len(raw) != 16 {
			return v, errCorrupt("guid is not 16 bytes")
		}
		if skip {
			return v, nil
		}
		return odata.GuidValue([16]byte(raw)), nil
	}
	return v, errCorrupt(fmt.Sprintf("unknown type code %d", code))
}

func errCorrupt(why string) error {
	return ErrInternal.WithDetail("stored record is corrupt: %s", why)
}
