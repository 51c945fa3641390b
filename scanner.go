package tabula

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// page runs one page of a prepared query from a continuation.
func (t *Table) page(ctx context.Context, p *preparedQuery, from Continuation) (Page, error) {
	return t.pageTo(ctx, p, from, nil)
}

// pageTo is page, giving the page's entities to sink as stored records rather than
// building Page.Entities when sink is not nil (the typed scan, QueryAs).
func (t *Table) pageTo(ctx context.Context, p *preparedQuery, from Continuation, sink recordSink) (Page, error) {
	var (
		start   []byte // encoded position to resume at, without the table prefix
		startPK string // the PartitionKey the page starts in, as the service sees it
	)
	if !from.IsZero() {
		pk, rk, err := decodeContinuation(from)
		if err != nil {
			return Page{}, err
		}
		start = storage.AppendPart(storage.AppendSeparator(storage.AppendPart(nil, pk)), rk)
		startPK = pk
	} else if len(p.plan.Ranges) > 0 {
		startPK = p.plan.Ranges[0].PartitionKeyLow.Value
	}
	// What Table.read does, without a closure per page.
	for {
		ot, err := t.resolve(ctx)
		if err != nil {
			return Page{}, err
		}
		if sink != nil {
			sink.reset()
		}
		page, err := t.db.runPage(ctx, ot, p, start, startPK, sink)
		if ot.dropped.Load() {
			continue
		}
		if err != nil {
			return Page{}, err
		}
		if r := t.db.flavor; r != nil && r.unsortedResults {
			slices.Reverse(page.Entities)
			if sink != nil {
				sink.reverse()
			}
		}
		return page, nil
	}
}

// runPage runs one page of a prepared query on a resolved table, from start (nil for the
// beginning) in the partition startPK; see pageTo for sink.
func (db *DB) runPage(ctx context.Context, ot *openTable, p *preparedQuery, start []byte, startPK string, sink recordSink) (Page, error) {
	pt := ot.service
	// A page is admitted before it runs and charged, after, for what it scanned.
	if err := admit(pt.Admit(startPK, partition.KindQuery, 0), "query"); err != nil {
		return Page{}, err
	}
	s := scannerPool.Get().(*scanner)
	defer s.release()
	// The query is copied rather than pointed to, so that a caller's preparedQuery can stay
	// on its stack: a point query would otherwise allocate it.
	s.p, s.ctx, s.id, s.start = *p, ctx, ot.rec.ID, start
	s.page = Page{Plan: p.plan}
	s.clock, s.service, s.sink = db.clock, pt, sink
	if p.plan.Kind != PlanPoint || start != nil {
		s.began = db.clock() // a lookup has no budget to measure
	}
	defer func() { pt.Charge(startPK, s.page.Plan.Scanned) }()
	if p.switches.boundaries.Load() {
		if b, ok := pt.NextBoundary(startPK); ok {
			s.boundary, s.boundaryPK = storage.AppendPart(tablePrefix(s.id), b), b
		}
	}
	if err := db.view(ctx, s.view); err != nil {
		return Page{}, err
	}
	page := s.page
	if len(s.ents) > 0 {
		// One allocation of the page's size, rather than a slice grown by appending.
		page.Entities = slices.Clone(s.ents)
	}
	return page, nil
}

// scanner fills one page. Scanners are pooled, with their decoder, their record and the
// closures they hand the store bound once, so that a page allocates little beyond what it
// returns.
type scanner struct {
	p       preparedQuery
	ctx     context.Context
	id      uint64 // the table's
	start   []byte // where the page resumes, without the table prefix; nil at the beginning
	tx      *storage.Txn
	page    Page
	ents    []Entity // the page's entities so far, copied out when it ends; reused
	clock   func() time.Time
	began   time.Time
	service *partition.Table
	// boundary is the first key of the next range partition, whose low PartitionKey is
	// boundaryPK, when pages end at range boundaries (Options.BoundaryContinuations); nil
	// otherwise. A page that ends there may be empty: it still moves forward, because the
	// boundary lies beyond where the page started.
	boundary   []byte
	boundaryPK string
	dec        *recordDecoder
	rec        scanRecord
	key        []byte                   // a Point plan's key
	decode     func(value []byte) error // decodeRecord, bound once rather than per entity
	view       func(*storage.Txn) error // run, bound once
	full       bool                     // the page holds Top entities; the next key seen becomes the token
	matched    bool                     // the filter accepts the record decoded last
	sink       recordSink               // takes the matched records in place of ents, when set
}

var scannerPool = sync.Pool{New: func() any {
	s := &scanner{dec: newRecordDecoder()}
	s.rec.init()
	s.decode, s.view = s.decodeRecord, s.run
	return s
}}

// release returns the scanner to its pool, keeping nothing of the page.
func (s *scanner) release() {
	clear(s.rec.values)
	s.rec.reset(nil)
	// pk and pkEnc go together (see decodeKeys), and a Point plan sets pk alone.
	s.rec.pk, s.rec.rk, s.rec.pkEnc = "", "", nil
	clear(s.ents)
	*s = scanner{dec: s.dec, rec: s.rec, key: s.key[:0], ents: s.ents[:0], decode: s.decode, view: s.view}
	scannerPool.Put(s)
}

// run fills the page from the store; it is the page's View closure.
func (s *scanner) run(tx *storage.Txn) error {
	s.tx = tx
	p := &s.p
	if p.plan.Kind == PlanPoint && s.start == nil {
		// One key: a lookup, not an iterator (whose Seek costs more than the read). Its
		// keys are the plan's, so they need no decoding from the stored key.
		r := p.plan.Ranges[0]
		pk, rk := r.PartitionKeyLow.Value, r.RowKeyLow.Value
		s.key = appendEntityKey(s.key[:0], s.id, pk, rk)
		s.rec.reset(s.key)
		s.rec.pk, s.rec.rk, s.rec.keys = pk, rk, true
		found, err := tx.Get(s.key, s.decode)
		if err != nil || !found {
			return err
		}
		return s.examined()
	}
	for _, r := range p.plan.Ranges {
		lower, upper := rangeBounds(s.id, r)
		if s.start != nil {
			resume := append(tablePrefix(s.id), s.start...)
			if upper != nil && bytes.Compare(resume, upper) >= 0 {
				continue
			}
			if bytes.Compare(resume, lower) > 0 {
				lower = resume
			}
		}
		if done, err := s.scan(s.ctx, lower, upper); done || err != nil {
			return err
		}
	}
	return nil
}

// decodeRecord decodes a value into the record under examination and decides the filter.
// A residual filter is evaluated on views of the stored bytes, valid only during this call;
// only a record it accepts has its strings copied, so a scan that rejects most records does
// not copy their strings.
func (s *scanner) decodeRecord(value []byte) (err error) {
	if s.p.filter.exact && s.sink != nil {
		s.rec.ticks, err = s.sink.decode(value, s.p.keep)
		s.matched = err == nil
		return err
	}
	if s.p.filter.exact {
		// Every entity in an exact filter's ranges is returned: decode it straight into its
		// Properties, skipping the properties $select leaves out.
		n, err := s.dec.count(value)
		if err != nil {
			s.matched = false
			return err
		}
		s.rec.props = make(Properties, n)
		s.rec.ticks, err = s.dec.decode(value, s.p.keep, s.rec.props)
		s.matched = err == nil
		return err
	}
	s.dec.views = true
	s.rec.ticks, err = s.dec.each(value, nil, s.rec.add)
	s.dec.views = false
	if err != nil {
		s.matched = false
		return err
	}
	s.matched = s.p.filter.pred.Match(&s.rec)
	if s.matched && s.sink != nil {
		clear(s.rec.values) // the sink reads the record itself, while its bytes are valid
		_, err = s.sink.decode(value, s.p.keep)
		s.matched = err == nil
		return err
	}
	if s.matched {
		for i, v := range s.rec.values {
			if v.Type == odata.String {
				s.rec.values[i].Str = strings.Clone(v.Str)
			}
		}
	} else {
		clear(s.rec.values) // drop the views before the bytes go back to the store
	}
	return nil
}

// examined counts the entity just decoded into s.rec and keeps it if the filter matches.
func (s *scanner) examined() error {
	s.page.Plan.Scanned++
	if !s.matched {
		return nil
	}
	if s.sink != nil {
		if err := s.rec.decodeKeys(); err != nil {
			return err
		}
		s.sink.take(s.rec.pk, s.rec.rk, s.rec.rkView, s.rec.ticks)
		s.page.Plan.Returned++
		s.full = s.page.Plan.Returned == s.p.top
		return nil
	}
	e, err := s.rec.entity(s.p.keep)
	if err != nil {
		return err
	}
	s.ents = append(s.ents, e)
	s.page.Plan.Returned++
	s.full = len(s.ents) == s.p.top
	return nil
}

// scan examines [lower, upper) and reports whether the page is done.
func (s *scanner) scan(ctx context.Context, lower, upper []byte) (bool, error) {
	it := s.tx.Scan(lower, upper)
	defer it.Close()
	for it.Next() {
		key := it.Key()
		if s.boundary != nil && bytes.Compare(key, s.boundary) >= 0 {
			// The range partition ends here. Like the service, name the next range's
			// start rather than the next entity: if that range is empty, the next page is
			// an empty page with a token.
			s.page.Continuation = Continuation{NextPartitionKey: wire.EncodeToken(s.boundaryPK), NextRowKey: wire.EncodeToken("")}
			s.page.End = PageEndRangeBoundary
			return true, nil
		}
		if end := s.mustStop(); end != PageEndResults {
			s.page.End = end
			return true, s.stopAt(key)
		}
		if err := ctx.Err(); err != nil {
			return true, err
		}
		s.rec.reset(key)
		if err := it.Value(s.decode); err != nil {
			return true, err
		}
		if err := s.examined(); err != nil {
			return true, err
		}
	}
	return false, nil
}

// mustStop says why the page ends before examining the next key, PageEndResults if it goes
// on: it is full, or (once the page has made progress) fault injection forces a continuation
// or the budget is spent.
func (s *scanner) mustStop() PageEnd {
	if s.full {
		return s.p.full
	}
	n := s.page.Plan.Scanned
	switch {
	case n == 0:
		return PageEndResults
	case s.service.MustEndPage(n):
		return PageEndForced
	case (n < budgetStride || n%budgetStride == 0) && s.expired():
		return PageEndBudget
	}
	return PageEndResults
}

// budgetStride is how many entities a page examines between readings of the clock, once it
// has examined that many: a budget is seconds, and reading the clock for every entity cost
// a twentieth of a partition scan. The first entities read it each, so that a page ends
// where a clock that moves with every reading (a test's) says it must.
const budgetStride = 16

// expired reports whether the page has used up its execution budget.
func (s *scanner) expired() bool {
	return s.p.budget > 0 && s.clock().Sub(s.began) >= s.p.budget
}

// stopAt ends the page with a token naming key, the next entity to examine.
func (s *scanner) stopAt(key []byte) error {
	pk, rk, err := decodeEntityKey(key)
	if err != nil {
		return err
	}
	s.page.Continuation = Continuation{NextPartitionKey: wire.EncodeToken(pk), NextRowKey: wire.EncodeToken(rk)}
	return nil
}

// rangeBounds turns a key range into the encoded [lower, upper) of a table's keys.
func rangeBounds(id uint64, r odata.KeyRange) (lower, upper []byte) {
	part := func(s string) []byte { return storage.AppendPart(tablePrefix(id), s) }
	if isPoint(r.PartitionKeyLow, r.PartitionKeyHigh) {
		pk := part(r.PartitionKeyLow.Value)
		rows := storage.AppendSeparator(slices.Clip(pk))
		row := func(s string) []byte { return storage.AppendPart(slices.Clip(rows), s) }
		switch lo := r.RowKeyLow; {
		case !lo.Bounded:
			lower = rows
		case lo.Inclusive:
			lower = row(lo.Value)
		default:
			lower = storage.SuccessorOf(row(lo.Value))
		}
		switch hi := r.RowKeyHigh; {
		case !hi.Bounded:
			upper = storage.AppendPartEnd(pk)
		case hi.Inclusive:
			upper = storage.SuccessorOf(row(hi.Value))
		default:
			upper = row(hi.Value)
		}
		return lower, upper
	}
	switch lo := r.PartitionKeyLow; {
	case !lo.Bounded:
		lower = tablePrefix(id)
	case lo.Inclusive:
		lower = part(lo.Value)
	default:
		lower = storage.AppendPartEnd(part(lo.Value))
	}
	switch hi := r.PartitionKeyHigh; {
	case !hi.Bounded:
		_, upper = tableBounds(id)
	case hi.Inclusive:
		upper = storage.AppendPartEnd(part(hi.Value))
	default:
		upper = part(hi.Value)
	}
	return lower, upper
}

// scanRecord is the entity under the scanner, as the filter sees it. It is reused from
// entity to entity so that evaluating a filter allocates nothing beyond decoding.
type scanRecord struct {
	key    []byte
	pk, rk string
	keys   bool // pk and rk are decoded from key
	// rkView says rk is a view of key's bytes, valid only while they are: a filter reads it
	// as it is, and entity copies it.
	rkView bool
	pkEnc  []byte // the encoded form of pk, to reuse pk while a scan stays in one partition
	ticks  int64
	names  []string
	values []odata.Value
	add    func(name string, v odata.Value)
	// props holds the properties instead of names and values when the filter is exact
	// (see scanner.decodeRecord); the entity takes it.
	props Properties
}

func (r *scanRecord) init() {
	r.add = func(name string, v odata.Value) {
		r.names = append(r.names, name)
		r.values = append(r.values, v)
	}
}

func (r *scanRecord) reset(key []byte) {
	r.key, r.keys, r.rkView, r.props = key, false, false, nil
	r.names, r.values = r.names[:0], r.values[:0]
}

func (r *scanRecord) decodeKeys() error {
	if r.keys {
		return nil
	}
	pkEnc, rkEnc, err := cutEntityKey(r.key)
	if err != nil {
		return err
	}
	if r.pkEnc == nil || !bytes.Equal(pkEnc, r.pkEnc) {
		r.pk = storage.DecodePart(pkEnc)
		r.pkEnc = append(r.pkEnc[:0], pkEnc...)
	}
	if storage.IsPlainPart(rkEnc) {
		r.rk, r.rkView = unsafe.String(unsafe.SliceData(rkEnc), len(rkEnc)), true
	} else {
		r.rk = storage.DecodePart(rkEnc)
	}
	r.keys = true
	return nil
}

// Property implements odata.Record.
func (r *scanRecord) Property(name string) (odata.Value, bool) {
	switch name {
	case propPartitionKey:
		if r.decodeKeys() != nil {
			return odata.Value{}, false
		}
		return odata.StringValue(r.pk), true
	case propRowKey:
		if r.decodeKeys() != nil {
			return odata.Value{}, false
		}
		return odata.StringValue(r.rk), true
	case propTimestamp:
		return odata.DateTimeValue(r.ticks), true
	}
	// Records store properties in byte order of their names.
	if i, ok := slices.BinarySearch(r.names, name); ok {
		return r.values[i], true
	}
	return odata.Value{}, false
}

// entity builds the returned entity, keeping the selected properties.
func (r *scanRecord) entity(keep func(string) bool) (Entity, error) {
	if err := r.decodeKeys(); err != nil {
		return Entity{}, err
	}
	// The RowKey, when it is still a view of the stored key, and the ETag share one
	// allocation: they live and die with the entity.
	n := maxETagLen
	if r.rkView {
		n += len(r.rk)
	}
	buf := make([]byte, 0, n)
	if r.rkView {
		buf = append(buf, r.rk...)
	}
	rkLen := len(buf)
	buf = wire.AppendETag(buf, r.ticks)
	rk := r.rk
	if r.rkView {
		rk = unsafe.String(unsafe.SliceData(buf), rkLen)
	}
	e := Entity{PartitionKey: r.pk, RowKey: rk, Timestamp: timeOfTicks(r.ticks),
		ETag: ETag(unsafe.String(unsafe.SliceData(buf[rkLen:]), len(buf)-rkLen)), Properties: r.props}
	if r.props != nil {
		r.props = nil // the entity's now
		return e, nil
	}
	e.Properties = make(Properties, len(r.names))
	for i, name := range r.names {
		if keep == nil || keep(name) {
			e.Properties[name] = PropertyOf(r.values[i])
		}
	}
	return e, nil
}
