package tabula

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/tabuladb/tabula/odata"
)

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
	// switches are the query switches of the table's namespace (runtimesettings.go).
	switches *querySwitches
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

// prepare returns the query ready to run; by value, so that a point query need not allocate
// it.
func (db *DB) prepare(ns string, q Query) (preparedQuery, error) {
	top := q.Top
	if top < 0 || top > MaxEntitiesPerPage {
		return preparedQuery{}, ErrInvalidInput.WithDetail("top is %d; it must be 1 to %d", top, MaxEntitiesPerPage)
	}
	if top == 0 {
		top = MaxEntitiesPerPage
	}
	c, plan := pointFilterCompiled, Plan{}
	if pk, rk, ok := pointFilter(q.Filter); ok {
		point := func(v string) odata.Bound { return odata.Bound{Value: v, Inclusive: true, Bounded: true} }
		plan = Plan{Kind: PlanPoint, ServiceKind: PlanPoint, Ranges: []odata.KeyRange{{
			PartitionKeyLow: point(pk), PartitionKeyHigh: point(pk), RowKeyLow: point(rk), RowKeyHigh: point(rk)}}}
	} else {
		var err error
		if c, err = db.compile(q.Filter); err != nil {
			return preparedQuery{}, err
		}
		plan = c.plan
	}
	keep, err := selection(q.Select)
	if err != nil {
		return preparedQuery{}, err
	}
	switches := db.switches(ns)
	if switches.forbidFullScans.Load() && c.plan.ServiceKind == PlanFullScan {
		return preparedQuery{}, ErrFullScanForbidden.WithDetail("filter %q scans the whole table on the service; constrain PartitionKey", q.Filter)
	}
	full := PageEndTop
	if q.Top == 0 || q.Top == MaxEntitiesPerPage {
		full = PageEndMaxEntities
	}
	return preparedQuery{filter: c, plan: plan, keep: keep, top: top, full: full, budget: db.queryBudget, switches: switches}, nil
}

// pointFilter recognizes the filter of a point query as clients write it,
// "PartitionKey eq 'pk' and RowKey eq 'rk'" with no quote inside either literal, and returns
// its keys. Such a query is planned without parsing or the filter cache: the cache would
// cost a lookup in a large map, and one new text per key read churns it
// (TestPointFilterPlansAsParsed checks the plan is the parser's).
func pointFilter(filter string) (pk, rk string, ok bool) {
	rest, ok := strings.CutPrefix(filter, "PartitionKey eq '")
	if !ok {
		return "", "", false
	}
	i := strings.IndexByte(rest, '\'')
	if i < 0 {
		return "", "", false
	}
	pk, rest = rest[:i], rest[i:]
	if rest, ok = strings.CutPrefix(rest, "' and RowKey eq '"); !ok || len(rest) == 0 || rest[len(rest)-1] != '\'' {
		return "", "", false
	}
	rk = rest[:len(rest)-1]
	if strings.IndexByte(rk, '\'') >= 0 || len(filter) > odata.MaxFilterLength {
		return "", "", false
	}
	return pk, rk, true
}

// pointFilterCompiled is the compiled form of every filter pointFilter recognizes, but for
// its plan: its key range is all it says.
var pointFilterCompiled = &compiledFilter{exact: true}

// parseFilter parses a $filter and maps the parser's errors to the service's.
func parseFilter(filter string) (odata.Expr, error) {
	expr, err := odata.Parse(filter)
	var fe *odata.Error
	if errors.As(err, &fe) {
		sentinel := ErrInvalidInput
		if fe.Code == odata.CodeNotImplemented {
			sentinel = ErrNotImplemented
		}
		return nil, sentinel.WithMessage(fe.Message, "%s", strings.TrimPrefix(fe.Error(), "odata: "))
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
			return nil, ErrInvalidInput.WithDetail("select names %q, which is not a property name", n)
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
			return nil, ErrInvalidInput.WithDetail("select lists more than %d distinct property names", MaxSelect)
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
