package tabula

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula/odata"
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
	// PlanUnavailable is the Kind of the zero Plan: a backend that cannot know how a query
	// ran (a remote service) leaves Page.Plan zero, and its Kind says so rather than naming
	// a plan.
	PlanUnavailable PlanKind = iota
	// PlanEmpty: the filter cannot match anything, so nothing is read (a Tabula shortcut;
	// the service would scan).
	PlanEmpty
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
	PlanUnavailable: "Unavailable",
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
var ErrFullScanForbidden = NewError("FullScanForbidden", 400,
	"The query would scan the whole table on the service, and full scans are forbidden by Options.ForbidFullScans.")

// Explain plans a query without running it.
func (t *Table) Explain(q Query) (Plan, error) {
	p, err := t.db.prepare(t.ns, q)
	if err != nil {
		return Plan{}, err
	}
	return p.plan, nil
}

// Query returns one page of the entities matching q, in key order. Follow
// Page.Continuation for the rest, or use QueryAll.
func (t *Table) Query(ctx context.Context, q Query) (Page, error) {
	p, err := t.db.prepare(t.ns, q)
	if err != nil {
		return Page{}, err
	}
	return t.page(ctx, &p, q.Continuation)
}

// QueryAll iterates over every entity matching q (from q.Continuation on), following
// continuation tokens from page to page. Memory stays bounded by one page.
func (t *Table) QueryAll(ctx context.Context, q Query) iter.Seq2[Entity, error] {
	return func(yield func(Entity, error) bool) {
		p, err := t.db.prepare(t.ns, q)
		if err != nil {
			yield(Entity{}, err)
			return
		}
		next := q.Continuation
		for {
			page, err := t.page(ctx, &p, next)
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
