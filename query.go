package tabula

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula/odata"
	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// MaxEntitiesPerPage is the most entities one query page holds, as on the service.
const MaxEntitiesPerPage = 1000

// DefaultQueryBudget is how long one page may execute before it ends early with a
// continuation token, as on the service.
const DefaultQueryBudget = 5 * time.Second

// Query selects entities of a table, in the service's terms.
type Query struct {
	// Filter is an OData $filter in the service's dialect, such as
	// "PartitionKey eq 'Action' and Rating gt 4.0". Empty means every entity.
	Filter string
	// Select lists the properties to return ($select); nil returns them all. The keys,
	// Timestamp and ETag are always set on returned entities.
	Select []string
	// Top caps the entities per page ($top), 1 to 1000; 0 means 1000. As on the service it is
	// a per-page cap: a page holding Top entities still carries a continuation token when
	// more may follow.
	Top int
	// Continuation resumes a query where an earlier page ended; the zero value starts it.
	Continuation Continuation
}

// Continuation is a position in a table: the next entity a query would examine, inclusive.
// Its two strings are the service's NextPartitionKey and NextRowKey tokens
// ("1!<length>!<base64>"); treat them as opaque. Because a token is a key position and not
// a snapshot, it stays valid across restarts and concurrent writes: a query resumed with it
// continues with the first entity at or after that position in the data as it is then.
type Continuation struct {
	NextPartitionKey string
	NextRowKey       string
}

// IsZero reports whether c is the start of a query (no continuation).
func (c Continuation) IsZero() bool { return c == Continuation{} }

// Page is one response to a query.
type Page struct {
	// Entities matched, in key order (PartitionKey, then RowKey, by UTF-16 code units).
	Entities []Entity
	// Continuation is non-zero when the query has more to examine. A page may hold fewer
	// than Top entities, or none at all, and still carry one: follow it until it is zero.
	Continuation Continuation
	// Plan says how the page was found and how much it cost.
	Plan Plan
	// End says why the page ended: PageEndResults when the query is done, and otherwise
	// what cut it short, so that a test of paging logic need not guess.
	End PageEnd
}

// PageEnd is why a query page ended.
type PageEnd int

const (
	// PageEndResults: nothing more matches; the continuation is zero.
	PageEndResults PageEnd = iota
	// PageEndTop: the page holds the Top entities the query asked for.
	PageEndTop
	// PageEndMaxEntities: the page holds MaxEntitiesPerPage (1,000) entities, the most the
	// service returns at once, and the query set no smaller Top.
	PageEndMaxEntities
	// PageEndBudget: the page ran for its execution budget (Options.QueryBudget, 5 s).
	PageEndBudget
	// PageEndRangeBoundary: the scan reached the end of a range partition
	// (Options.BoundaryContinuations).
	PageEndRangeBoundary
	// PageEndForced: fault injection forced a continuation (Options.Faults).
	PageEndForced
	// PageEndUnknown: the page was cut short for a reason its backend cannot see. A remote
	// service's response does not say why a page short of Top and 1,000 entities carries a
	// continuation (its time budget, a partition boundary); only the embedded engine knows.
	PageEndUnknown
)

var pageEndNames = [...]string{
	PageEndResults: "Results", PageEndTop: "Top", PageEndMaxEntities: "MaxEntities",
	PageEndBudget: "Budget", PageEndRangeBoundary: "RangeBoundary", PageEndForced: "Forced",
	PageEndUnknown: "Unknown",
}

func (e PageEnd) String() string {
	if e >= 0 && int(e) < len(pageEndNames) {
		return pageEndNames[e]
	}
	return "PageEnd(" + strconv.Itoa(int(e)) + ")"
}

// PlanKind names a way of running a query, from cheapest to dearest.
type PlanKind int

const (
	// PlanEmpty: the filter cannot match anything, so nothing is read (a Tabula shortcut;
	// the service would scan).
	PlanEmpty PlanKind = iota + 1
	// PlanPoint: one PartitionKey and one RowKey; a single lookup.
	PlanPoint
	// PlanRowRange: one PartitionKey, a range of RowKeys (possibly all of them).
	PlanRowRange
	// PlanPartitionRange: a range of PartitionKeys.
	PlanPartitionRange
	// PlanMultiRange: a union of the above in key order (a Tabula shortcut for an OR of key
	// conditions; the service scans the whole table there, and returns the same results).
	PlanMultiRange
	// PlanFullScan: every entity of the table is examined.
	PlanFullScan
)

var planKindNames = map[PlanKind]string{
	PlanEmpty: "Empty", PlanPoint: "Point", PlanRowRange: "RowRange",
	PlanPartitionRange: "PartitionRange", PlanMultiRange: "MultiRange", PlanFullScan: "FullScan",
	PlanUnavailable: "Unavailable", // a remote backend's page (api.go)
}

func (k PlanKind) String() string {
	if s, ok := planKindNames[k]; ok {
		return s
	}
	return "PlanKind(" + strconv.Itoa(int(k)) + ")"
}

// Plan explains a query: how Tabula runs it, how the service would, and (after a page ran)
// how many entities were examined to return how many, the service's "query density".
type Plan struct {
	// Kind is how Tabula runs the query.
	Kind PlanKind
	// ServiceKind is how the Azure Table service runs it: Point, RowRange, PartitionRange or
	// FullScan. It differs from Kind where Tabula does better (MultiRange, Empty); the
	// results are the same.
	ServiceKind PlanKind
	// Ranges are the key ranges scanned, in order.
	Ranges []odata.KeyRange
	// Scanned and Returned count the entities the page examined and returned.
	Scanned, Returned int
}

func (p Plan) String() string {
	var b strings.Builder
	b.WriteString(p.Kind.String())
	for i, r := range p.Ranges {
		if i == 0 {
			b.WriteString(" ")
		} else {
			b.WriteString(" ∪ ")
		}
		b.WriteString(rangeString(r))
	}
	fmt.Fprintf(&b, " (service: %s); scanned %d, returned %d", p.ServiceKind, p.Scanned, p.Returned)
	return b.String()
}

// ErrFullScanForbidden is Tabula's own error (not the service's) for a query the service would
// run as a full table scan, returned only when Options.ForbidFullScans is set.
var ErrFullScanForbidden = newError("FullScanForbidden", 400,
	"The query would scan the whole table on the service, and full scans are forbidden by Options.ForbidFullScans.")

// preparedQuery is a query parsed, planned and compiled once, reused for every page.
type preparedQuery struct {
	filter *compiledFilter
	plan   Plan                   // the filter's plan, with this page's counts
	keep   func(name string) bool // nil keeps every property
	top    int
	// full is why a page holding top entities ends: PageEndTop, or PageEndMaxEntities
	// when the query set no Top below the service's maximum.
	full   PageEnd
	budget time.Duration
}

// compiledFilter is what a filter text alone decides; it is immutable, so one serves every
// query with the same filter (see DB.compile).
type compiledFilter struct {
	pred *odata.Predicate
	// exact is set when the plan's key ranges are the filter: every entity they hold
	// matches, so the predicate need not run on each.
	exact bool
	plan  Plan
}

// filterCacheBytes bounds the memory of the cache of compiled filters. Applications use a
// handful of filter shapes, but nothing stops one from building a new text per query, nor
// from sending 250 KB filters: a bound by count let 1,100 of those hold 1.4 GB.
const filterCacheBytes = 16 << 20

// filterCost estimates what a compiled filter holds in memory: its text as the cache's key,
// and a parsed tree that measures about three times the text (see
// TestFilterCacheIsBoundedByBytes), plus a fixed part.
func filterCost(filter string) int64 { return 4*int64(len(filter)) + 512 }

// compile returns the compiled form of a filter, from the DB's cache when it is there, so
// that a point query repeated with the same text (the common case) parses nothing; a hit
// takes no lock.
func (db *DB) compile(filter string) (*compiledFilter, error) {
	if v, ok := db.filters.Load(filter); ok {
		return v.(*compiledFilter), nil
	}
	expr, err := parseFilter(filter)
	if err != nil {
		return nil, err
	}
	c := &compiledFilter{pred: odata.Compile(expr), exact: keysOnly(expr)}
	c.plan.Ranges = odata.Ranges(expr)
	c.plan.Kind = planKind(c.plan.Ranges)
	c.plan.ServiceKind = serviceKind(expr)
	db.cacheFilter(filter, c)
	return c, nil
}

// cacheFilter keeps a compiled filter within the cache's byte bound. A filter that would take
// more than a sixteenth of the bound is not kept (parsing it costs little next to running
// it); when the cache is full it is emptied and fills again with the filters in use, which
// keeps hits lock-free and costs each filter in use one parse per generation.
func (db *DB) cacheFilter(filter string, c *compiledFilter) {
	cost := filterCost(filter)
	if cost > db.filterCacheBytes/16 {
		return
	}
	db.filterMu.Lock()
	defer db.filterMu.Unlock()
	if _, ok := db.filters.Load(filter); ok {
		return
	}
	if db.filterBytes+cost > db.filterCacheBytes {
		db.filters.Clear()
		db.filterBytes = 0
	}
	db.filters.Store(filter, c)
	db.filterBytes += cost
}

func (db *DB) prepare(q Query) (*preparedQuery, error) {
	top := q.Top
	if top < 0 || top > MaxEntitiesPerPage {
		return nil, ErrInvalidInput.with("top is %d; it must be 1 to %d", top, MaxEntitiesPerPage)
	}
	if top == 0 {
		top = MaxEntitiesPerPage
	}
	c, err := db.compile(q.Filter)
	if err != nil {
		return nil, err
	}
	keep, err := selection(q.Select)
	if err != nil {
		return nil, err
	}
	if db.forbidFullScans.Load() && c.plan.ServiceKind == PlanFullScan {
		return nil, ErrFullScanForbidden.with("filter %q scans the whole table on the service; constrain PartitionKey", q.Filter)
	}
	full := PageEndTop
	if q.Top == 0 || q.Top == MaxEntitiesPerPage {
		full = PageEndMaxEntities
	}
	return &preparedQuery{filter: c, plan: c.plan, keep: keep, top: top, full: full, budget: db.queryBudget}, nil
}

// parseFilter parses a $filter and maps the parser's errors to the service's.
func parseFilter(filter string) (odata.Expr, error) {
	expr, err := odata.Parse(filter)
	var fe *odata.Error
	if errors.As(err, &fe) {
		sentinel := ErrInvalidInput
		if fe.Code == odata.CodeNotImplemented {
			sentinel = ErrNotImplemented
		}
		return nil, sentinel.withMessage(fe.Message, "%s", strings.TrimPrefix(fe.Error(), "odata: "))
	}
	return expr, err
}

// MaxSelect is the most distinct property names a $select may list: the service projects at
// most 255 properties, the most an entity has (252 and the three system properties), as
// "Writing LINQ queries against the Table service" says. A name listed twice counts once.
const MaxSelect = 255

// selection turns a $select list into a property filter; "*" selects everything.
func selection(names []string) (func(string) bool, error) {
	if len(names) == 0 || slices.Contains(names, "*") {
		return nil, nil
	}
	for _, n := range names {
		if _, err := validatePropertyName(n); err != nil && n != propPartitionKey && n != propRowKey && n != propTimestamp {
			return nil, ErrInvalidInput.with("select names %q, which is not a property name", n)
		}
	}
	return selectFilter(names)
}

// selectFilter turns a list of names into a membership test, once per request: the names are
// deduplicated and capped at MaxSelect, and a long list is looked up in a set, so that what a
// request costs per entity is bounded whatever its $select (a 16,000-name list used to be
// searched name by name for every property of every entity).
func selectFilter(names []string) (func(string) bool, error) {
	if len(names) <= 8 {
		names = slices.Clone(names)
		return func(name string) bool { return slices.Contains(names, name) }, nil
	}
	set := make(map[string]struct{}, min(len(names), MaxSelect+1))
	for _, n := range names {
		set[n] = struct{}{}
		if len(set) > MaxSelect {
			return nil, ErrInvalidInput.with("select lists more than %d distinct property names", MaxSelect)
		}
	}
	return func(name string) bool { _, ok := set[name]; return ok }, nil
}

// rangeString prints a key range for people: "PartitionKey = 'a', RowKey in ['b', 'c')".
func rangeString(r odata.KeyRange) string {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	interval := func(name string, lo, hi odata.Bound) string {
		if isPoint(lo, hi) {
			return name + " = " + quote(lo.Value)
		}
		s := name + " in "
		switch {
		case !lo.Bounded:
			s += "(-∞"
		case lo.Inclusive:
			s += "[" + quote(lo.Value)
		default:
			s += "(" + quote(lo.Value)
		}
		switch {
		case !hi.Bounded:
			return s + ", +∞)"
		case hi.Inclusive:
			return s + ", " + quote(hi.Value) + "]"
		default:
			return s + ", " + quote(hi.Value) + ")"
		}
	}
	if !r.PartitionKeyLow.Bounded && !r.PartitionKeyHigh.Bounded {
		return "all keys"
	}
	s := interval(propPartitionKey, r.PartitionKeyLow, r.PartitionKeyHigh)
	if r.RowKeyLow.Bounded || r.RowKeyHigh.Bounded {
		s += ", " + interval(propRowKey, r.RowKeyLow, r.RowKeyHigh)
	}
	return s
}

// keysOnly reports whether a filter says nothing but what its key ranges say: a conjunction of
// comparisons of the keys with string literals (ne excepted), RowKey ones only next to a
// PartitionKey equality, since odata.Ranges keeps RowKey bounds only under a fixed PartitionKey.
// Such a filter is the efficient query of "How to get most out of Windows Azure Tables", a point or
// a range.
func keysOnly(expr odata.Expr) bool {
	if expr == nil {
		return true
	}
	terms := []odata.Expr{expr}
	if and, ok := expr.(odata.And); ok {
		terms = and.Terms
	}
	var pkFixed, rowKey bool
	for _, t := range terms {
		c, ok := t.(odata.Comparison)
		if !ok || c.Value.Type != odata.String || c.Op == odata.Ne {
			return false
		}
		switch c.Property {
		case propPartitionKey:
			pkFixed = pkFixed || c.Op == odata.Eq
		case propRowKey:
			rowKey = true
		default:
			return false
		}
	}
	return pkFixed || !rowKey
}

func planKind(ranges []odata.KeyRange) PlanKind {
	switch {
	case len(ranges) == 0:
		return PlanEmpty
	case len(ranges) > 1:
		return PlanMultiRange
	}
	r := ranges[0]
	switch {
	case isPoint(r.PartitionKeyLow, r.PartitionKeyHigh):
		if isPoint(r.RowKeyLow, r.RowKeyHigh) {
			return PlanPoint
		}
		return PlanRowRange
	case r.PartitionKeyLow.Bounded || r.PartitionKeyHigh.Bounded:
		return PlanPartitionRange
	default:
		return PlanFullScan
	}
}

func isPoint(low, high odata.Bound) bool {
	return low.Bounded && high.Bounded && low.Inclusive && high.Inclusive && low.Value == high.Value
}

// serviceKind classifies a filter the way the service plans it: only comparisons of the keys
// with string literals joined by a top-level "and" narrow its scan (seed 003: an "or" of two
// PartitionKeys, or a "ne", scans the whole table).
func serviceKind(expr odata.Expr) PlanKind {
	terms := []odata.Expr{expr}
	if and, ok := expr.(odata.And); ok {
		terms = and.Terms
	}
	var pkEq, pkRange, rkEq bool
	for _, t := range terms {
		c, ok := t.(odata.Comparison)
		if !ok || c.Value.Type != odata.String || c.Op == odata.Ne {
			continue
		}
		switch {
		case c.Property == propPartitionKey && c.Op == odata.Eq:
			pkEq = true
		case c.Property == propPartitionKey:
			pkRange = true
		case c.Property == propRowKey && c.Op == odata.Eq:
			rkEq = true
		}
	}
	switch {
	case pkEq && rkEq:
		return PlanPoint
	case pkEq:
		return PlanRowRange
	case pkRange:
		return PlanPartitionRange
	default:
		return PlanFullScan
	}
}

// Explain plans a query without running it.
func (t *Table) Explain(q Query) (Plan, error) {
	p, err := t.db.prepare(q)
	if err != nil {
		return Plan{}, err
	}
	return p.plan, nil
}

// Query returns one page of the entities matching q, in key order. Follow
// Page.Continuation for the rest, or use QueryAll.
func (t *Table) Query(ctx context.Context, q Query) (Page, error) {
	p, err := t.db.prepare(q)
	if err != nil {
		return Page{}, err
	}
	return t.page(ctx, p, q.Continuation)
}

// QueryAll iterates over every entity matching q (from q.Continuation on), following
// continuation tokens from page to page. Memory stays bounded by one page.
func (t *Table) QueryAll(ctx context.Context, q Query) iter.Seq2[Entity, error] {
	return func(yield func(Entity, error) bool) {
		p, err := t.db.prepare(q)
		if err != nil {
			yield(Entity{}, err)
			return
		}
		next := q.Continuation
		for {
			page, err := t.page(ctx, p, next)
			if err != nil {
				yield(Entity{}, err)
				return
			}
			for _, e := range page.Entities {
				if !yield(e, nil) {
					return
				}
			}
			if page.Continuation.IsZero() {
				return
			}
			next = page.Continuation
		}
	}
}

// page runs one page of a prepared query from a continuation.
func (t *Table) page(ctx context.Context, p *preparedQuery, from Continuation) (Page, error) {
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
	var page Page
	err := t.read(ctx, func(ot *openTable) (err error) {
		page, err = t.db.runPage(ctx, ot, p, start, startPK)
		return err
	})
	if err != nil {
		return Page{}, err
	}
	return page, nil
}

// runPage runs one page of a prepared query on a resolved table, from start (nil for the
// beginning) in the partition startPK.
func (db *DB) runPage(ctx context.Context, ot *openTable, p *preparedQuery, start []byte, startPK string) (Page, error) {
	pt, rec := ot.service, ot.rec
	// A page is admitted before it runs and charged, after, for what it scanned.
	if err := admit(pt.Admit(startPK, partition.KindQuery, 0), "query"); err != nil {
		return Page{}, err
	}
	page := Page{Plan: p.plan}
	defer func() { pt.Charge(startPK, page.Plan.Scanned) }()
	err := db.view(ctx, func(tx *storage.Txn) error {
		s := scanner{p: p, tx: tx, page: &page, clock: db.clock, began: db.clock(), service: db.service}
		if db.boundaries.Load() {
			if b, ok := pt.NextBoundary(startPK); ok {
				s.boundary, s.boundaryPK = storage.AppendPart(tablePrefix(rec.ID), b), b
			}
		}
		s.dec = decoderPool.Get().(*recordDecoder)
		defer decoderPool.Put(s.dec)
		s.rec.init()
		s.decode = s.decodeRecord
		if p.plan.Kind == PlanPoint && start == nil {
			// One key: a lookup, not an iterator (whose Seek costs more than the read).
			r := p.plan.Ranges[0]
			key := entityKey(rec.ID, r.PartitionKeyLow.Value, r.RowKeyLow.Value)
			s.rec.reset(key)
			found, err := tx.Get(key, s.decode)
			if err != nil || !found {
				return err
			}
			return s.examined()
		}
		for _, r := range p.plan.Ranges {
			lower, upper := rangeBounds(rec.ID, r)
			if start != nil {
				resume := append(tablePrefix(rec.ID), start...)
				if upper != nil && bytes.Compare(resume, upper) >= 0 {
					continue
				}
				if bytes.Compare(resume, lower) > 0 {
					lower = resume
				}
			}
			if done, err := s.scan(ctx, lower, upper); done || err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Page{}, err
	}
	return page, nil
}

// scanner fills one page.
type scanner struct {
	p       *preparedQuery
	tx      *storage.Txn
	page    *Page
	clock   func() time.Time
	began   time.Time
	service *partition.Account
	// boundary is the first key of the next range partition, whose low PartitionKey is
	// boundaryPK, when pages end at range boundaries (Options.BoundaryContinuations); nil
	// otherwise. A page that ends there may be empty: it still moves forward, because the
	// boundary lies beyond where the page started.
	boundary   []byte
	boundaryPK string
	dec        *recordDecoder
	rec        scanRecord
	decode     func(value []byte) error // decodeRecord, bound once rather than per entity
	full       bool                     // the page holds Top entities; the next key seen becomes the token
	matched    bool                     // the filter accepts the record decoded last
}

// decodeRecord decodes a value into the record under examination and decides the filter.
// A residual filter is evaluated on views of the stored bytes, valid only during this call;
// only a record it accepts has its strings copied, so a scan that rejects most records does
// not copy their strings.
func (s *scanner) decodeRecord(value []byte) (err error) {
	if s.p.filter.exact {
		s.rec.ticks, err = s.dec.each(value, nil, s.rec.add)
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
	e, err := s.rec.entity(s.p.keep)
	if err != nil {
		return err
	}
	if s.page.Entities == nil {
		n := min(s.p.top, 64) // pages grow from here; most are short
		if s.p.plan.Kind == PlanPoint {
			n = 1
		}
		s.page.Entities = make([]Entity, 0, n)
	}
	s.page.Entities = append(s.page.Entities, e)
	s.page.Plan.Returned++
	s.full = len(s.page.Entities) == s.p.top
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
			s.page.Continuation = Continuation{NextPartitionKey: encodeToken(s.boundaryPK), NextRowKey: encodeToken("")}
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
	case s.expired():
		return PageEndBudget
	}
	return PageEndResults
}

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
	s.page.Continuation = Continuation{NextPartitionKey: encodeToken(pk), NextRowKey: encodeToken(rk)}
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
	keys   bool   // pk and rk are decoded from key
	pkEnc  []byte // the encoded form of pk, to reuse pk while a scan stays in one partition
	ticks  int64
	names  []string
	values []odata.Value
	add    func(name string, v odata.Value)
}

func (r *scanRecord) init() {
	r.add = func(name string, v odata.Value) {
		r.names = append(r.names, name)
		r.values = append(r.values, v)
	}
}

func (r *scanRecord) reset(key []byte) {
	r.key, r.keys = key, false
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
	r.rk, r.keys = storage.DecodePart(rkEnc), true
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
	e := Entity{PartitionKey: r.pk, RowKey: r.rk, Timestamp: timeOfTicks(r.ticks), ETag: etagOf(r.ticks),
		Properties: make(Properties, len(r.names))}
	for i, name := range r.names {
		if keep == nil || keep(name) {
			e.Properties[name] = propertyOf(r.values[i])
		}
	}
	return e, nil
}

// Continuation tokens use the service's form: "1!" + the length of the encoded part + "!" +
// the key's UTF-8 bytes in base64 with '=' padding written as '-'.
func encodeToken(key string) string {
	b64 := strings.ReplaceAll(base64.StdEncoding.EncodeToString([]byte(key)), "=", "-")
	return "1!" + strconv.Itoa(len(b64)) + "!" + b64
}

func decodeToken(field, token string) (string, error) {
	bad := func(why string) (string, error) {
		return "", ErrInvalidInput.with("continuation token %s %q is malformed: %s", field, token, why)
	}
	rest, ok := strings.CutPrefix(token, "1!")
	if !ok {
		return bad(`it does not start with "1!"`)
	}
	length, b64, ok := strings.Cut(rest, "!")
	n, err := strconv.Atoi(length)
	if !ok || err != nil || n != len(b64) {
		return bad("its length does not match")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(b64, "-", "="))
	if err != nil {
		return bad("it is not base64")
	}
	key := string(raw)
	if _, err := validateKey(field, key); err != nil {
		return bad("it does not hold a valid key")
	}
	return key, nil
}

// decodeContinuation reads both tokens; a missing NextRowKey means the start of the partition.
func decodeContinuation(c Continuation) (pk, rk string, err error) {
	if c.NextPartitionKey == "" {
		return "", "", ErrInvalidInput.with("continuation has a NextRowKey but no NextPartitionKey")
	}
	if pk, err = decodeToken("NextPartitionKey", c.NextPartitionKey); err != nil {
		return "", "", err
	}
	if c.NextRowKey != "" {
		if rk, err = decodeToken("NextRowKey", c.NextRowKey); err != nil {
			return "", "", err
		}
	}
	return pk, rk, nil
}
