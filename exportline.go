package tabula

import (
	"bytes"
	"errors"
	"unsafe"

	"github.com/tabuladb/tabula/internal/keyorder"
	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
	"github.com/tabuladb/tabula/storage"
)

// An export writes every stored entity as a line of JSON. Decoding each record into a
// wire.Entity would copy every string and key into the heap only for the encoder to read
// it once, so lineTranscoder writes the line straight from the stored key and record
// bytes, reading strings and binaries in place, through the same wire functions that
// write an Entity, so that the line is the one wire.Encoder.Entity would write.

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

// An export's time goes about half to the store's scan and half to writing the lines, so
// scanAhead runs the scan on a goroutine of its own, on another core, handing the writer
// batches of keys and records copied out of it (the store's bytes are valid only during
// its callback): a few batches of scanBatch bytes in flight bound the memory it takes.
const (
	scanBatch   = 128 << 10
	scanBatches = 4
)

// rawBatch is consecutive entities of a scan: their keys and records, copied.
type rawBatch struct {
	buf  []byte
	ends []int // per entity, where its key and then its record end in buf
	err  error // the scan's error, after the entities before it
}

// scanAhead reads every entity of it on a goroutine of its own and calls each, on the
// caller's goroutine, with each key and record in order, until each returns an error.
// The key and record are valid only during the call.
func scanAhead(it *storage.Iterator, each func(key, rec []byte) error) error {
	full := make(chan *rawBatch, scanBatches)
	free := make(chan *rawBatch, scanBatches)
	for range scanBatches {
		free <- &rawBatch{buf: make([]byte, 0, scanBatch)}
	}
	stop := make(chan struct{})
	go func() {
		defer close(full)
		b := <-free
		send := func() bool {
			select {
			case full <- b:
			case <-stop:
				return false
			}
			select {
			case b = <-free:
			case <-stop:
				return false
			}
			if cap(b.buf) > 4*scanBatch {
				b.buf = make([]byte, 0, scanBatch) // one huge entity does not keep its buffer
			}
			b.buf, b.ends, b.err = b.buf[:0], b.ends[:0], nil
			return true
		}
		for it.Next() {
			b.buf = append(b.buf, it.Key()...)
			k := len(b.buf)
			if b.err = it.Value(func(v []byte) error {
				b.buf = append(b.buf, v...)
				return nil
			}); b.err != nil {
				break
			}
			b.ends = append(b.ends, k, len(b.buf))
			if len(b.buf) >= scanBatch && !send() {
				return
			}
		}
		if len(b.ends) > 0 || b.err != nil {
			select {
			case full <- b:
			case <-stop:
			}
		}
	}()
	var err error
	for b := range full {
		start := 0
		for i := 0; i < len(b.ends) && err == nil; i += 2 {
			k, end := b.ends[i], b.ends[i+1]
			err = each(b.buf[start:k], b.buf[k:end])
			start = end
		}
		if err == nil {
			err = b.err
		}
		if err != nil {
			close(stop)
			for range full { // until the scan has stopped: the caller closes it next
			}
			return err
		}
		free <- b
	}
	return nil
}
