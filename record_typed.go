package tabula

import (
	"math"
	"strings"
	"time"
	"unsafe"

	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
)

// The typed reads' record decoder: one loop over a stored record (record.go's format) that
// finds each property's field by walking the codec's fields forward (both are in name order)
// and decodes a value of the field's own type straight into it, with no odata.Value, closure
// or name string in between. A value of another type goes through odata.Value and
// structField.set, which makes the same misfit error as the untyped path's conversion;
// FuzzRecordAs holds the two decoders to the same answers.

// decode reads record into the zero struct at base, keeping only the properties sel accepts
// (all when it is nil), and returns the record's Timestamp; the keys, Timestamp and ETag
// are the caller's to set. A property that does not fit its field is a *StructError,
// returned once the whole record has been checked, corruption first.
func (r *recordReader) decode(record []byte, base unsafe.Pointer, sel func(string) bool) (int64, error) {
	if len(record) == 0 || record[0] != recordVersion {
		return 0, errCorrupt("unknown record version")
	}
	d := r.d
	d.b, d.i = record[1:], 0
	r.strs.drop() // the last struct's
	ticks, err := r.properties(base, sel)
	d.b = nil // the bytes belong to the store
	return ticks, err
}

func (r *recordReader) properties(base unsafe.Pointer, sel func(string) bool) (int64, error) {
	c, d := r.c, r.d
	ticks, n, err := d.head()
	if err != nil {
		return 0, err
	}
	var misfit error // the first property that did not fit its field
	next := 0        // the field to look from
	for range n {
		raw, err := d.bytes(mpFixStr)
		if err != nil {
			return 0, err
		}
		name := unsafe.String(unsafe.SliceData(raw), len(raw)) // valid while the record is
		code, err := d.int()
		if err != nil {
			return 0, err
		}
		i := -1
		wanted := sel == nil || sel(name)
		if wanted {
			if next < len(c.fields) && c.fields[next].name == name {
				i = next // the common case: the record has the struct's fields
			} else {
				i = c.field(name, next)
			}
			wanted = i >= 0 || c.rest != noField
		}
		switch {
		case !wanted || misfit != nil:
			// Decoded all the same when wanted, so that a corrupt value is refused
			// whatever came before it, as the untyped decoder refuses it.
			_, err = d.value(code, !wanted)
		case i >= 0:
			next = i + 1
			f := &c.fields[i]
			var done bool
			if done, err = r.direct(f, base, code); err == nil && !done {
				var v odata.Value
				if v, err = d.value(code, false); err == nil {
					if ferr := f.set(base, v); ferr != nil {
						misfit = c.fieldError(f, ferr)
					}
				}
			}
		default:
			var v odata.Value
			if v, err = d.value(code, false); err == nil {
				c.putRest(base, name, v)
			}
		}
		if err != nil {
			return 0, err
		}
	}
	if d.i != len(d.b) {
		return 0, errCorrupt("trailing bytes")
	}
	return ticks, misfit
}

// direct decodes a value of type code into field f at base when the field holds that type
// as it is, and reports whether it did; it refuses what recordDecoder.value refuses.
func (r *recordReader) direct(f *structField, base unsafe.Pointer, code int64) (bool, error) {
	if f.ptr != nil {
		return false, nil
	}
	d := r.d
	p := fieldAt(base, f.offset)
	switch code {
	case codeString:
		if f.kind != kindString {
			return false, nil
		}
		raw, err := d.bytes(mpFixStr)
		if err != nil {
			return true, err
		}
		*(*string)(p) = r.string(raw)
	case codeInt32, codeInt64, codeDateTime:
		switch {
		case code == codeDateTime && f.kind == kindTime:
		case code == codeInt32 && (f.kind == kindInt32 || f.kind == kindInt64 || f.kind == kindInt):
		case code == codeInt64 && f.edm == odata.Int64 && (f.kind == kindInt64 || f.kind == kindInt):
		default:
			return false, nil
		}
		i, err := d.int()
		if err != nil {
			return true, err
		}
		switch f.kind {
		case kindTime:
			*(*time.Time)(p) = timeOfTicks(i)
			return true, nil
		case kindInt32:
			if i < math.MinInt32 || i > math.MaxInt32 {
				return true, errRecordCorrupt // only codeInt32 comes here
			}
			*(*int32)(p) = int32(i)
			return true, nil
		}
		if code == codeInt32 && (i < math.MinInt32 || i > math.MaxInt32) {
			return true, errRecordCorrupt
		}
		if f.kind == kindInt {
			*(*int)(p) = int(i)
		} else {
			*(*int64)(p) = i
		}
	case codeDouble:
		if f.kind != kindFloat64 {
			return false, nil
		}
		raw, err := d.next(1)
		if err != nil || raw[0] != mpFloat64 {
			return true, errRecordCorrupt
		}
		u, err := d.uint(8)
		if err != nil {
			return true, err
		}
		*(*float64)(p) = math.Float64frombits(u)
	case codeBoolean:
		if f.kind != kindBool {
			return false, nil
		}
		raw, err := d.next(1)
		if err != nil || raw[0] != mpTrue && raw[0] != mpFalse {
			return true, errRecordCorrupt
		}
		*(*bool)(p) = raw[0] == mpTrue
	case codeGuid:
		if f.kind != kindGuid && f.kind != kindGuidText {
			return false, nil
		}
		raw, err := d.bytes(mpBin8)
		if err != nil || len(raw) != 16 {
			return true, errCorrupt("guid is not 16 bytes")
		}
		if f.kind == kindGuid {
			*(*[16]byte)(p) = [16]byte(raw)
		} else {
			*(*string)(p) = odata.FormatGuid([16]byte(raw))
		}
	case codeBinary:
		if f.kind != kindBinary {
			return false, nil
		}
		raw, err := d.bytes(mpBin8)
		if err != nil {
			return true, err
		}
		*(*[]byte)(p) = append([]byte{}, raw...) // empty is a value, never nil
	default:
		return false, nil
	}
	return true, nil
}

// string returns raw as a string held in r.strs.
func (r *recordReader) string(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if r.strs.room() < len(raw) {
		// Room for this string, every one after it in the record, and the spare bytes.
		r.strs.grow(len(raw) + len(r.d.b) - r.d.i + r.spare)
	}
	return r.strs.add(raw)
}

// stringArena carves strings out of one allocation. Its bytes are a strings.Builder's,
// which allocates them without clearing them first (make([]byte) clears them: as much work
// as copying a string in), and never changes a byte once written, so the strings carved stay
// valid whatever is added after them.
type stringArena struct{ b strings.Builder }

// room is how many bytes can be added without another allocation.
func (a *stringArena) room() int { return a.b.Cap() - a.b.Len() }

// grow starts a new allocation of n bytes; the strings carved so far keep the old one.
func (a *stringArena) grow(n int) {
	a.b = strings.Builder{}
	a.b.Grow(n)
}

// drop forgets the allocation, which belongs to the strings carved from it.
func (a *stringArena) drop() { a.b = strings.Builder{} }

// add copies p in and returns it as a string.
func (a *stringArena) add(p []byte) string {
	start := a.b.Len()
	a.b.Write(p)
	return a.b.String()[start:]
}

// putRest stores property name, which no field names, in the catch-all at base.
func (c *structCodec) putRest(base unsafe.Pointer, name string, v odata.Value) {
	rest := (*Properties)(fieldAt(base, c.rest))
	if *rest == nil {
		*rest = Properties{}
	}
	(*rest)[strings.Clone(name)] = PropertyOf(v) // name may be a view of a record
}

// etagCache formats the ETags of a scan, whose entities mostly share their Timestamp's
// second (often their whole Timestamp: a batch's entities have one): it keeps the ETag's
// text up to the second's last digit, so that the date and clock are formatted once a
// second rather than once an entity.
type etagCache struct {
	second int64  // the ticks of the second prefix is for; -1 for none
	prefix []byte // AppendETag's text for second, up to the fraction
}

// appendETag appends the ETag of ticks to b, as wire.AppendETag does.
func (e *etagCache) appendETag(b []byte, ticks int64) []byte {
	if ticks < 0 {
		return wire.AppendETag(b, ticks)
	}
	frac := ticks % ticksPerSecond
	if second := ticks - frac; second != e.second || e.prefix == nil {
		// The whole second's ETag ends Z'": the fraction goes before it.
		e.prefix = wire.AppendETag(e.prefix[:0], second)
		e.prefix = e.prefix[:len(e.prefix)-len(`Z'"`)]
		e.second = second
	}
	b = append(b, e.prefix...)
	if frac != 0 {
		var digits [8]byte
		digits[0] = '.'
		for i := 7; i >= 1; i-- {
			digits[i] = byte('0' + frac%10)
			frac /= 10
		}
		n := 8
		for digits[n-1] == '0' {
			n--
		}
		b = append(b, digits[:n]...)
	}
	return append(b, `Z'"`...)
}
