package tabula

import (
	"context"
	"reflect"
	"time"
	"unsafe"
)

// The typed reads of the embedded engine: a stored record is decoded straight into the
// struct, through the codec's recordReader, without building Entity.Properties. The typed
// functions reach it by asserting recordSource on a TableAPI; any other TableAPI (package
// remote) goes through Entities.

// recordSource is what the embedded *Table offers the typed reads.
type recordSource interface {
	// lookupAs reads the entity of pk and rk into g's zero struct.
	lookupAs(ctx context.Context, g *typedGet, pk, rk string) error
	// prepareQuery prepares q as Table.Query does.
	prepareQuery(q Query) (preparedQuery, error)
	// pageTo runs one page, giving its entities to sink (see scanner.go).
	pageTo(ctx context.Context, p *preparedQuery, from Continuation, sink recordSink) (Page, error)
}

var _ recordSource = (*Table)(nil)

// recordSink takes a page's entities as stored records, in place of Page.Entities.
type recordSink interface {
	// reset empties the sink for a page (again, when a page is retried).
	reset()
	// decode reads the record of the next entity the page returns, keeping the properties
	// keep accepts (all when nil), and returns its Timestamp; the record's bytes are valid
	// only during the call.
	decode(record []byte, keep func(string) bool) (int64, error)
	// take gives the entity decoded last its keys and version; rk is a view of the stored
	// key, valid only during the call, when rkView is set.
	take(pk, rk string, rkView bool, ticks int64)
	// reverse reverses the page's order (Options.Flavor's unsorted results).
	reverse()
}

func (t *Table) prepareQuery(q Query) (preparedQuery, error) { return t.db.prepare(t.ns, q) }

// typedGet is the state of one typed point read, pooled per codec (as a typedGetOf) with
// its method bound once.
type typedGet struct {
	r      *recordReader
	base   unsafe.Pointer
	pk, rk string
	dirty  bool  // base holds an earlier attempt's decoding
	err    error // a property that did not fit its field
	// op is the read's own getOp, its sink typedGet.decode: not taken from getOpPool on
	// every read.
	op *getOp
	// etags formats ETags; entities written in the same second, as a batch's or a load's
	// are, share the formatting of its date and clock.
	etags etagCache
}

// typedGetOf is a typedGet with the T it decodes into.
type typedGetOf[T any] struct {
	typedGet
	v T
}

func newTypedGet[T any](c *structCodec) *typedGetOf[T] {
	g := &typedGetOf[T]{typedGet: typedGet{r: c.newRecordReader(), etags: etagCache{second: -1}}}
	g.base = unsafe.Pointer(&g.v)
	g.op = &getOp{sink: g.decode}
	g.op.view, g.op.value = g.op.read, g.op.decode
	if c.etag != noField {
		g.r.spare = maxETagLen // the ETag goes with the struct's strings
	}
	return g
}

func (g *typedGet) decode(record []byte) error {
	c := g.r.c
	if g.dirty { // the table was dropped and recreated under the read: start again
		reflect.NewAt(c.typ, g.base).Elem().SetZero()
	}
	g.dirty = true
	ticks, err := g.r.decode(record, g.base, nil)
	if se, ok := err.(*StructError); ok {
		// Not the store's error, so kept from it: the store would take it for its own.
		g.err = se
		return nil
	}
	if err != nil {
		return err
	}
	c.setKeys(g.base, g.pk, g.rk)
	if c.timestamp != noField {
		*(*time.Time)(fieldAt(g.base, c.timestamp)) = timeOfTicks(ticks)
	}
	if c.etag != noField {
		r := g.r
		if r.strs.room() < maxETagLen {
			r.strs.grow(maxETagLen)
		}
		var buf [maxETagLen]byte
		*(*ETag)(fieldAt(g.base, c.etag)) = ETag(r.strs.add(g.etags.appendETag(buf[:0], ticks)))
	}
	return nil
}

// lookupAs reads the entity of pk and rk into g's zero struct.
func (t *Table) lookupAs(ctx context.Context, g *typedGet, pk, rk string) error {
	if err := validateKeys(pk, rk); err != nil {
		return err
	}
	g.pk, g.rk = pk, rk
	err := t.lookup(ctx, g.op, pk, rk)
	g.op.pk, g.op.rk = "", ""
	if cap(g.op.key) > 1024 {
		g.op.key = nil // as getOp.release
	}
	if err == nil {
		err = g.err
	}
	g.pk, g.rk, g.dirty, g.err = "", "", false, nil
	g.r.strs.drop()
	return err
}

// maxPooledPage bounds the bytes of a page of structs kept for the next query.
const maxPooledPage = 1 << 20

// typedPage is a recordSink collecting a page of Ts.
type typedPage[T any] struct {
	r     *recordReader
	items []T
	// err is the first property that did not fit its field, in items[errAt]; kept from the
	// store, which would take it for its own.
	err   error
	errAt int
	// etags formats the page's ETags; lastETag is the one of the entity taken last, whose
	// Timestamp was lastTicks.
	etags     etagCache
	lastTicks int64
	lastETag  string
}

func (p *typedPage[T]) reset() {
	clear(p.items)
	p.items, p.err, p.lastETag = p.items[:0], nil, ""
	p.r.strs.drop()
}

func (p *typedPage[T]) decode(record []byte, keep func(string) bool) (int64, error) {
	var zero T
	p.items = append(p.items, zero)
	ticks, err := p.r.decode(record, unsafe.Pointer(&p.items[len(p.items)-1]), keep)
	if se, ok := err.(*StructError); ok {
		if p.err == nil {
			p.err, p.errAt = se, len(p.items)-1
		}
		return ticks, nil
	}
	return ticks, err
}

func (p *typedPage[T]) take(pk, rk string, rkView bool, ticks int64) {
	c, r := p.r.c, p.r
	base := unsafe.Pointer(&p.items[len(p.items)-1])
	// The RowKey, when a view of the stored key, and the ETag are carved from the struct's
	// own allocation for its strings when they fit in its spare bytes, else from one of their
	// own: they live and die with the struct. A batch's entities share their Timestamp, and
	// so their ETag.
	copyRK := rkView && c.rk != noField
	sharedETag := ticks == p.lastTicks && p.lastETag != ""
	n := 0
	if copyRK {
		n = len(rk)
	}
	if c.etag != noField {
		r.spare = n + maxETagLen // the next RowKey is likely as long
		if !sharedETag {
			n += maxETagLen
		}
	}
	if r.strs.room() < n {
		r.strs.grow(n)
	}
	if copyRK {
		rk = r.strs.add(unsafe.Slice(unsafe.StringData(rk), len(rk)))
	}
	c.setKeys(base, pk, rk)
	if c.timestamp != noField {
		*(*time.Time)(fieldAt(base, c.timestamp)) = timeOfTicks(ticks)
	}
	if c.etag != noField {
		if !sharedETag {
			var buf [maxETagLen]byte
			p.lastTicks, p.lastETag = ticks, r.strs.add(p.etags.appendETag(buf[:0], ticks))
		}
		*(*ETag)(fieldAt(base, c.etag)) = ETag(p.lastETag)
	}
}

func (p *typedPage[T]) reverse() {
	for i, j := 0, len(p.items)-1; i < j; i, j = i+1, j-1 {
		p.items[i], p.items[j] = p.items[j], p.items[i]
	}
	if p.err != nil {
		p.errAt = len(p.items) - 1 - p.errAt // still the misfit's place
	}
}

// queryRecordsAs is QueryAs on the embedded engine: QueryAll's loop, with each page's
// records decoded into a reused slice of Ts.
func queryRecordsAs[T any](ctx context.Context, src recordSource, c *structCodec, q Query, yield func(T, error) bool) {
	var zero T
	p, err := src.prepareQuery(q)
	if err != nil {
		yield(zero, err)
		return
	}
	// The page, its slice of up to 1,000 Ts and its reader are pooled with the type's
	// mapping: growing the slice again for every query cost more than the structs' strings.
	sink, _ := c.pages.Get().(*typedPage[T])
	if sink == nil {
		sink = &typedPage[T]{r: c.newRecordReader(), etags: etagCache{second: -1}}
	}
	defer func() {
		sink.reset()
		if uintptr(cap(sink.items))*unsafe.Sizeof(zero) <= maxPooledPage {
			c.pages.Put(sink)
		}
	}()
	next := q.Continuation
	for {
		page, err := src.pageTo(ctx, &p, next, sink)
		if err != nil {
			yield(zero, err)
			return
		}
		items := sink.items
		if sink.err != nil {
			items = items[:sink.errAt]
		}
		for i := range items {
			if !yield(items[i], nil) {
				return
			}
		}
		if sink.err != nil {
			yield(zero, sink.err)
			return
		}
		if page.Continuation.IsZero() {
			return
		}
		next = page.Continuation
	}
}

// setKeys sets the key fields the struct at base has.
func (c *structCodec) setKeys(base unsafe.Pointer, pk, rk string) {
	if c.pk != noField {
		*(*string)(fieldAt(base, c.pk)) = pk
	}
	if c.rk != noField {
		*(*string)(fieldAt(base, c.rk)) = rk
	}
}

// setVersion sets the Timestamp and ETag fields the struct at base has.
func (c *structCodec) setVersion(base unsafe.Pointer, ts time.Time, etag ETag) {
	if c.timestamp != noField {
		*(*time.Time)(fieldAt(base, c.timestamp)) = ts
	}
	if c.etag != noField {
		*(*ETag)(fieldAt(base, c.etag)) = etag // an ETag and a string share a layout
	}
}
