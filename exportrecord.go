package tabula

import (
	"bytes"
	"errors"
	"unsafe"

	"github.com/tabuladb/tabula/internal/keyorder"
	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
)

// An export writes every stored entity as a line of JSON. Decoding each record into a
// wire.Entity first copied every string and key into the heap only for the encoder to
// read it once; lineTranscoder writes the line straight from the stored key and record
// bytes instead, reading strings and binaries in place, through the same wire functions
// that write an Entity, so that the line is the one wire.Encoder.Entity would write.

// errUnusualRecord is a record the transcoder leaves to the generic decoder: one it cannot
// read, or whose properties are not in strict name order (which encodeRecord always
// writes). The generic decoder then writes the line or names what is wrong.
var errUnusualRecord = errors.New("record left to the generic decoder")

// lineTranscoder writes interchange entity lines from stored entities; keep one per scan.
type lineTranscoder struct {
	d      recordDecoder
	pk, rk []byte // the last entity's keys, decoded
}

// appendLine appends the interchange line, newline included, of the entity stored under
// key with record rec. It returns errUnusualRecord (and b as it was) for a record or key it
// does not transcode.
func (t *lineTranscoder) appendLine(b, key, rec []byte) ([]byte, error) {
	pkEnc, rkEnc, err := cutEntityKey(key)
	if err != nil || len(rec) == 0 || rec[0] != recordVersion {
		return b, errUnusualRecord
	}
	t.pk, t.rk = appendKeyPart(t.pk[:0], pkEnc), appendKeyPart(t.rk[:0], rkEnc)
	d := &t.d
	d.b, d.i, d.views = rec[1:], 0, true
	line, ok := t.appendRecord(b, d)
	d.b = nil // the bytes belong to the store
	if !ok {
		return b, errUnusualRecord
	}
	return line, nil
}

func (t *lineTranscoder) appendRecord(b []byte, d *recordDecoder) ([]byte, bool) {
	ticks, err := d.int()
	if err != nil {
		return b, false
	}
	n, err := d.length(mpFixArray)
	if err != nil || n > MaxProperties {
		return b, false
	}
	// As the generic path does, through a time.Time and back.
	ticks = odata.TicksFromTime(timeOfTicks(ticks))
	b = wire.AppendEntityHead(b, bytesView(t.pk), bytesView(t.rk), ticks)
	var prev []byte
	for i := range n {
		name, err := d.bytes(mpFixStr)
		if err != nil || i > 0 && bytes.Compare(prev, name) >= 0 {
			return b, false
		}
		prev = name
		code, err := d.int()
		if err != nil {
			return b, false
		}
		var v odata.Value
		if code == codeBinary {
			raw, err := d.bytes(mpBin8)
			if err != nil {
				return b, false
			}
			v = odata.BinaryValue(raw)
		} else if v, err = d.value(code, false); err != nil {
			return b, false
		}
		b = wire.AppendEntityProperty(b, bytesView(name), &v)
	}
	if d.i != len(d.b) {
		return b, false
	}
	return append(b, '}', '\n'), true
}

// appendKeyPart appends the key part that storage.CutPart returned, decoded as
// storage.DecodePart decodes it.
func appendKeyPart(dst, encoded []byte) []byte {
	for i := 0; i < len(encoded); i++ {
		c := encoded[i]
		if c == 0 { // CutPart guarantees an escaped NUL here
			dst = append(dst, 0)
			i++
			continue
		}
		dst = append(dst, keyorder.Unweight(c))
	}
	return dst
}

// bytesView is b as a string without copying it: for reading only while b is unchanged.
func bytesView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
