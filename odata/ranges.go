package odata

import (
	"slices"
	"strconv"
	"strings"
)

// Bound is one end of a key interval. The zero Bound is unbounded.
type Bound struct {
	Value     string
	Inclusive bool
	Bounded   bool // false: no bound (Value and Inclusive are then ignored)
}

// KeyRange is a set of entity keys: PartitionKey within its bounds and, when
// the range fixes one PartitionKey (low == high, both inclusive), RowKey
// within its bounds. Bounds compare with CompareStrings.
type KeyRange struct {
	PartitionKeyLow, PartitionKeyHigh Bound
	RowKeyLow, RowKeyHigh             Bound // only set when the PartitionKey is fixed
}

// Limits on the work and output of Ranges. Past them the key set is replaced
// by a coarser cover (its hull), which is still a superset.
const (
	maxRanges  = 512     // ranges returned, and boxes kept per intermediate union
	maxProduct = 1 << 16 // box pairs examined by one intersection
)

// Ranges returns key ranges whose union contains every entity e can match,
// sorted in key order and pairwise disjoint, so that scanning them one after
// another yields each candidate once, in key order. The caller must still
// evaluate the whole predicate on each candidate. A nil Expr, or one that
// constrains no key, gives one unbounded range; an Expr that can match
// nothing gives an empty, non-nil slice.
//
// The key set is computed exactly as far as the keys go: PartitionKey and
// RowKey are strings present on every entity, so a comparison on them is
// exactly true or false (a non-string literal is a type mismatch, true for
// ne/lt/le and false otherwise), and not is pushed down to them through De
// Morgan's laws. Any other comparison may be true for any key.
func Ranges(e Expr) []KeyRange {
	boxes := []box{{}}
	if e != nil {
		boxes = keySet(e, false)
	}
	boxes = normalize(boxes)
	if len(boxes) > maxRanges {
		boxes = normalize(hull(boxes))
	}
	out := make([]KeyRange, len(boxes))
	for i, b := range boxes {
		out[i] = KeyRange{PartitionKeyLow: b.pk.lo, PartitionKeyHigh: b.pk.hi}
		if b.pk.isPoint() {
			// A point is written [v, v], whatever form ("" as (-inf, ""]) it took inside.
			out[i].PartitionKeyLow = b.pk.hi
			out[i].RowKeyLow, out[i].RowKeyHigh = b.rk.lo, b.rk.hi
			if b.rk.isPoint() {
				out[i].RowKeyLow = b.rk.hi
			}
		}
	}
	return out
}

// Contains reports whether the key (pk, rk) lies in k.
func (k KeyRange) Contains(pk, rk string) bool {
	return ival{k.PartitionKeyLow, k.PartitionKeyHigh}.contains(pk) &&
		ival{k.RowKeyLow, k.RowKeyHigh}.contains(rk)
}

// String shows k in interval notation, for logs and test failures.
func (k KeyRange) String() string {
	s := "PartitionKey " + ival{k.PartitionKeyLow, k.PartitionKeyHigh}.String()
	if k.RowKeyLow.Bounded || k.RowKeyHigh.Bounded {
		s += " RowKey " + ival{k.RowKeyLow, k.RowKeyHigh}.String()
	}
	return s
}

// ival is an interval of strings; a zero ival is everything.
type ival struct{ lo, hi Bound }

func (i ival) String() string {
	var sb strings.Builder
	if !i.lo.Bounded {
		sb.WriteString("(-inf")
	} else {
		sb.WriteString(map[bool]string{true: "[", false: "("}[i.lo.Inclusive])
		sb.WriteString(strconv.Quote(i.lo.Value))
	}
	sb.WriteString(", ")
	if !i.hi.Bounded {
		sb.WriteString("+inf)")
	} else {
		sb.WriteString(strconv.Quote(i.hi.Value))
		sb.WriteString(map[bool]string{true: "]", false: ")"}[i.hi.Inclusive])
	}
	return sb.String()
}

func (i ival) isFull() bool { return !i.lo.Bounded && !i.hi.Bounded }

func (i ival) isPoint() bool {
	if !i.hi.Bounded || !i.hi.Inclusive {
		return false
	}
	if !i.lo.Bounded { // (-inf, ""] holds "" alone: nothing is below it
		return i.hi.Value == ""
	}
	return i.lo.Inclusive && i.lo.Value == i.hi.Value
}

func (i ival) empty() bool {
	if i.hi.Bounded && !i.hi.Inclusive && i.hi.Value == "" {
		return true // nothing is below ""
	}
	if !i.lo.Bounded || !i.hi.Bounded {
		return false
	}
	c := CompareStrings(i.lo.Value, i.hi.Value)
	return c > 0 || c == 0 && !(i.lo.Inclusive && i.hi.Inclusive)
}

func (i ival) contains(s string) bool {
	if i.lo.Bounded {
		c := CompareStrings(s, i.lo.Value)
		if c < 0 || c == 0 && !i.lo.Inclusive {
			return false
		}
	}
	if i.hi.Bounded {
		c := CompareStrings(s, i.hi.Value)
		if c > 0 || c == 0 && !i.hi.Inclusive {
			return false
		}
	}
	return true
}

// cmpLo orders lower bounds by where they start: unbounded first, then by
// value, inclusive before exclusive.
func cmpLo(a, b Bound) int {
	switch {
	case !a.Bounded && !b.Bounded:
		return 0
	case !a.Bounded:
		return -1
	case !b.Bounded:
		return 1
	}
	if c := CompareStrings(a.Value, b.Value); c != 0 {
		return c
	}
	switch {
	case a.Inclusive == b.Inclusive:
		return 0
	case a.Inclusive:
		return -1
	}
	return 1
}

// cmpHi orders upper bounds by where they end: by value, exclusive before
// inclusive, unbounded last.
func cmpHi(a, b Bound) int {
	switch {
	case !a.Bounded && !b.Bounded:
		return 0
	case !a.Bounded:
		return 1
	case !b.Bounded:
		return -1
	}
	if c := CompareStrings(a.Value, b.Value); c != 0 {
		return c
	}
	switch {
	case a.Inclusive == b.Inclusive:
		return 0
	case a.Inclusive:
		return 1
	}
	return -1
}

func intersectIval(a, b ival) ival {
	r := a
	if cmpLo(b.lo, r.lo) > 0 {
		r.lo = b.lo
	}
	if cmpHi(b.hi, r.hi) < 0 {
		r.hi = b.hi
	}
	return r
}

// box is a set of keys: PartitionKey in pk and RowKey in rk.
type box struct{ pk, rk ival }

func (b box) empty() bool { return b.pk.empty() || b.rk.empty() }

// keySet returns boxes whose union contains every key for which e (negated
// when neg is set) can hold.
func keySet(e Expr, neg bool) []box {
	switch e := e.(type) {
	case Constant:
		if e.Value != neg {
			return []box{{}}
		}
		return nil
	case Not:
		return keySet(e.X, !neg)
	case And:
		if neg {
			return unionAll(e.Terms, neg)
		}
		return intersectAll(e.Terms, neg)
	case Or:
		if neg {
			return intersectAll(e.Terms, neg)
		}
		return unionAll(e.Terms, neg)
	case Comparison:
		return comparisonSet(e, neg)
	}
	return []box{{}}
}

func unionAll(terms []Expr, neg bool) []box {
	var out []box
	coarse := false // once reduced to a hull, keep widening the hull
	for _, t := range terms {
		out = append(out, keySet(t, neg)...)
		switch {
		case coarse:
			out = hull(out)
		case len(out) > maxRanges:
			out = normalize(out)
			if len(out) > maxRanges {
				out, coarse = hull(out), true
			}
		}
	}
	return out
}

func intersectAll(terms []Expr, neg bool) []box {
	out := keySet(terms[0], neg)
	for _, t := range terms[1:] {
		if len(out) == 0 {
			return nil
		}
		out = intersect(out, keySet(t, neg))
	}
	return out
}

func intersect(a, b []box) []box {
	for len(a)*len(b) > maxProduct {
		if len(a) >= len(b) {
			a = hull(a)
		} else {
			b = hull(b)
		}
	}
	var out []box
	for _, x := range a {
		for _, y := range b {
			z := box{pk: intersectIval(x.pk, y.pk), rk: intersectIval(x.rk, y.rk)}
			if !z.empty() {
				out = append(out, z)
			}
		}
	}
	if len(out) > maxRanges {
		out = normalize(out)
		if len(out) > maxRanges {
			out = hull(out)
		}
	}
	return out
}

func comparisonSet(c Comparison, neg bool) []box {
	isPK := c.Property == "PartitionKey"
	if !isPK && c.Property != "RowKey" {
		return []box{{}}
	}
	op := c.Op
	if neg {
		op = op.negate()
	}
	if c.Value.Type != String {
		if op.holds(-1) { // the key is a string: less than any other type
			return []box{{}}
		}
		return nil
	}
	v := c.Value.Str
	incl := func(b bool) Bound { return Bound{Value: v, Inclusive: b, Bounded: true} }
	var ivals []ival
	switch op {
	case Eq:
		ivals = []ival{{incl(true), incl(true)}}
	case Ne:
		ivals = []ival{{hi: incl(false)}, {lo: incl(false)}}
	case Gt:
		ivals = []ival{{lo: incl(false)}}
	case Ge:
		ivals = []ival{{lo: incl(true)}}
	case Lt:
		ivals = []ival{{hi: incl(false)}}
	case Le:
		ivals = []ival{{hi: incl(true)}}
	}
	var out []box
	for _, iv := range ivals {
		if iv.lo.Bounded && iv.lo.Inclusive && iv.lo.Value == "" {
			iv.lo = Bound{} // >= "" is no bound at all
		}
		if iv.empty() {
			continue
		}
		if isPK {
			out = append(out, box{pk: iv})
		} else {
			out = append(out, box{rk: iv})
		}
	}
	return out
}

// hull returns one box containing all of bs.
func hull(bs []box) []box {
	if len(bs) == 0 {
		return nil
	}
	h := bs[0]
	samePoint := h.pk.isPoint()
	for _, b := range bs[1:] {
		if cmpLo(b.pk.lo, h.pk.lo) < 0 {
			h.pk.lo = b.pk.lo
		}
		if cmpHi(b.pk.hi, h.pk.hi) > 0 {
			h.pk.hi = b.pk.hi
		}
		if cmpLo(b.rk.lo, h.rk.lo) < 0 {
			h.rk.lo = b.rk.lo
		}
		if cmpHi(b.rk.hi, h.rk.hi) > 0 {
			h.rk.hi = b.rk.hi
		}
		samePoint = samePoint && b.pk.isPoint() && b.pk.lo.Value == bs[0].pk.lo.Value
	}
	if !samePoint {
		h.rk = ival{}
	}
	return []box{h}
}

// normalize turns any boxes into the shape KeyRange can express (a RowKey
// constraint only under a single PartitionKey; elsewhere it is dropped,
// which only widens the set), then into disjoint boxes sorted in key order:
// PartitionKey intervals merged where they overlap or touch, and
// single-PartitionKey boxes outside them, grouped by PartitionKey with their
// RowKey intervals merged.
func normalize(bs []box) []box {
	var spans []ival // PartitionKey intervals, any RowKey
	var points []box // one PartitionKey, some RowKeys
	for _, b := range bs {
		if b.empty() {
			continue
		}
		if !b.pk.isPoint() || b.rk.isFull() {
			spans = append(spans, b.pk)
			continue
		}
		points = append(points, b)
	}

	// Merge RowKey intervals per PartitionKey; a PartitionKey whose
	// RowKeys cover everything becomes a span.
	slices.SortFunc(points, func(a, b box) int {
		if c := CompareStrings(a.pk.lo.Value, b.pk.lo.Value); c != 0 {
			return c
		}
		return cmpLo(a.rk.lo, b.rk.lo)
	})
	var merged []box
	for _, p := range points {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			if last.pk.lo.Value == p.pk.lo.Value && touches(last.rk, p.rk) {
				if cmpHi(p.rk.hi, last.rk.hi) > 0 {
					last.rk.hi = p.rk.hi
				}
				continue
			}
		}
		merged = append(merged, p)
	}
	points = merged[:0:0]
	for _, p := range merged {
		if p.rk.isFull() {
			spans = append(spans, p.pk)
		} else {
			points = append(points, p)
		}
	}

	spans = mergeIvals(spans)

	out := make([]box, 0, len(spans)+len(points))
	for _, s := range spans {
		out = append(out, box{pk: s})
	}
	for _, p := range points {
		// Keep a point only if no span covers its PartitionKey. Spans are
		// sorted and disjoint: find the last one starting at or before it.
		i, _ := slices.BinarySearchFunc(spans, p.pk.lo, func(s ival, v Bound) int {
			return cmpLo(s.lo, v)
		})
		covered := false
		for _, j := range []int{i - 1, i} {
			if j >= 0 && j < len(spans) && spans[j].contains(p.pk.lo.Value) {
				covered = true
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b box) int {
		if c := cmpLo(a.pk.lo, b.pk.lo); c != 0 {
			return c
		}
		return cmpLo(a.rk.lo, b.rk.lo)
	})
	return out
}

// touches reports whether b starts no later than where a ends (a starting no
// later than b), so that their union is one interval.
func touches(a, b ival) bool {
	if !a.hi.Bounded || !b.lo.Bounded {
		return true
	}
	c := CompareStrings(b.lo.Value, a.hi.Value)
	return c < 0 || c == 0 && (a.hi.Inclusive || b.lo.Inclusive)
}

// mergeIvals sorts intervals and merges those that overlap or touch.
func mergeIvals(ivs []ival) []ival {
	slices.SortFunc(ivs, func(a, b ival) int { return cmpLo(a.lo, b.lo) })
	var out []ival
	for _, iv := range ivs {
		if n := len(out); n > 0 && touches(out[n-1], iv) {
			if cmpHi(iv.hi, out[n-1].hi) > 0 {
				out[n-1].hi = iv.hi
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}
