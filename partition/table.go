package partition

import (
	"math/rand/v2"
	"sync"

	"github.com/google/btree"

	"github.com/tabuladb/tabula/internal/keyorder"
)

// Table is one table's range partitions, their statistics and its
// per-PartitionKey buckets, for the root package. Get it from Service.Table
// and keep it: its methods are the per-operation calls.
type Table struct {
	name    string
	account string
	svc     *Service
	sc      *scope // the account's settings, bucket and counters (scope.go)

	mu       sync.Mutex // guards everything below
	tree     *btree.BTreeG[*rangePart]
	first    *rangePart // the range starting at "", never merged away
	pivot    *rangePart // reusable search key: no allocation per lookup
	found    *rangePart
	findFn   func(*rangePart) bool
	rng      *rand.Rand
	nextPass int64
	splits   int64
	merges   int64
	scratch  []sample
	ranges   []*rangePart

	keys keyTable
}

func newTable(svc *Service, account, name string, sc *scope) *Table {
	now := svc.nowNanos()
	t := &Table{
		name:     name,
		account:  account,
		svc:      svc,
		sc:       sc,
		tree:     btree.NewG(16, func(x, y *rangePart) bool { return keyorder.CompareKeys(x.low, y.low) < 0 }),
		first:    newRange("", now),
		pivot:    &rangePart{},
		rng:      newTableRand(svc.seed, name),
		nextPass: now + svc.bal.interval,
	}
	t.findFn = func(r *rangePart) bool { t.found = r; return false }
	t.tree.ReplaceOrInsert(t.first)
	return t
}

// lookup returns the range holding pk: the last range whose low <= pk.
// O(log n); called with t.mu held.
func (t *Table) lookup(pk string) *rangePart {
	if t.tree.Len() == 1 {
		return t.first
	}
	t.pivot.low = pk
	t.tree.DescendLessOrEqual(t.pivot, t.findFn)
	r := t.found
	t.found, t.pivot.low = nil, ""
	return r
}

// Admit decides whether an operation on pk costing n entities may run, and
// charges n to the limits and to the statistics. It is the one call per
// operation, made before touching storage:
//
//   - insert, update, merge, upsert, delete: n = 1
//   - get (point query): n = 1 (the service counts the entity scanned)
//   - entity group transaction of N actions: n = N
//   - query page: n = 0 before the scan (refused while pk's bucket or the
//     account's is empty or in debt), then Charge with the entities scanned
//
// Fault injection is consulted first, then the limits (PartitionKey, then
// account), then the range partition (offline while splitting). A refused
// operation is charged nothing; in Observe mode nothing is refused and the
// decision's Cause tells what Enforce would have done. A refused zero-cost
// check counts as one throttled entity.
func (t *Table) Admit(pk string, kind Kind, n int) Decision {
	svc, sc := t.svc, t.sc
	if f := sc.faults.Load(); f != nil {
		if d := f.decide(kind); !d.ok() {
			return d
		}
	}
	now := svc.nowNanos()
	nn := int64(max(n, 0))
	var d Decision
	charged := false
	if mode := LimitMode(sc.mode.Load()); mode != LimitOff {
		d.Cause, charged = t.limit(pk, nn, now)
		if d.Cause != CauseNone && mode == LimitEnforce {
			d.Fault = FaultServerBusy
		}
	}

	t.mu.Lock()
	r := t.lookup(pk)
	if d.Fault == FaultNone && r.offlineUntil > now {
		t.mu.Unlock()
		if charged {
			t.refund(pk, nn)
		}
		return Decision{FaultServerBusy, CauseOffline}
	}
	r.record(t, pk, nn, d.Cause != CauseNone, now)
	if now >= t.nextPass {
		t.balance(now)
	}
	t.mu.Unlock()
	return d
}

// limit runs pk's bucket and then its account's for n entities. It returns
// the limit that refused (or would refuse) the operation and whether both
// buckets were charged.
func (t *Table) limit(pk string, n, now int64) (Cause, bool) {
	svc, sc := t.svc, t.sc
	if !t.takeKey(pk, n, now) {
		svc.throttledPartition.Add(max(n, 1))
		svc.history.add(now, CausePartitionLimit, max(n, 1))
		sc.throttledPartition.Add(max(n, 1))
		sc.history.add(now, CausePartitionLimit, max(n, 1))
		return CausePartitionLimit, false
	}
	if al := sc.acctLimit.Load(); al.enabled && !sc.bucket.take(al, now, n) {
		t.refundKey(pk, n)
		svc.throttledAccount.Add(max(n, 1))
		svc.history.add(now, CauseAccountLimit, max(n, 1))
		sc.throttledAccount.Add(max(n, 1))
		sc.history.add(now, CauseAccountLimit, max(n, 1))
		return CauseAccountLimit, false
	}
	return CauseNone, true
}

func (t *Table) refund(pk string, n int64) {
	t.refundKey(pk, n)
	if al := t.sc.acctLimit.Load(); al.enabled {
		t.sc.bucket.refund(al, n)
	}
}

// Charge adds n entities to pk's bucket, the account's and pk's range after
// the fact: the entities a query page scanned, known only once the scan is
// done. It never refuses; the buckets may go into debt, which later
// admissions pay for. A page that crosses several PartitionKeys may be
// charged in one call under its first key, or per key if the executor
// tracks them: the account's count is exact either way.
func (t *Table) Charge(pk string, n int) {
	if n <= 0 {
		return
	}
	svc := t.svc
	now := svc.nowNanos()
	nn := int64(n)
	if LimitMode(t.sc.mode.Load()) != LimitOff {
		t.chargeKey(pk, nn, now)
		if al := t.sc.acctLimit.Load(); al.enabled {
			t.sc.bucket.charge(al, now, nn)
		}
	}
	t.mu.Lock()
	t.lookup(pk).record(t, pk, nn, false, now)
	if now >= t.nextPass {
		t.balance(now)
	}
	t.mu.Unlock()
}

// RecordWrite reports a change in stored data after a successful write:
// +1 entity and its size for an insert, -1 and minus its size for a delete,
// 0 and the size difference for a replace or merge. It feeds the range
// statistics only; the limits were charged by Admit.
func (t *Table) RecordWrite(pk string, deltaEntities, deltaBytes int64) {
	svc := t.svc
	t.mu.Lock()
	r := t.lookup(pk)
	r.entities += deltaEntities
	r.bytes += deltaBytes
	if deltaEntities > 0 && !svc.bal.disabled {
		r.store.add(sample{key: pk, n: deltaEntities, b: max(deltaBytes, 0)}, storeSampleSize(svc.bal.sampleSize), t.rng)
	}
	t.mu.Unlock()
}

func storeSampleSize(loadSize int) int { return max(loadSize/2, 1) }

// NextBoundary returns the low key of the first range partition after pk's,
// and false when pk's range is the last. A query executor that honours range
// boundaries ends its page before that key.
func (t *Table) NextBoundary(pk string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tree.Len() == 1 {
		return "", false
	}
	t.pivot.low = pk
	var next *rangePart
	t.tree.AscendGreaterOrEqual(t.pivot, func(r *rangePart) bool {
		if r.low == pk {
			return true
		}
		next = r
		return false
	})
	t.pivot.low = ""
	if next == nil {
		return "", false
	}
	return next.low, true
}

// SplitAt splits the range partition holding key so that a new range starts
// at key, as the load balancer would. It reports false if a range already
// starts there or the table has Balance.MaxRanges ranges. Meant for tests
// that need known boundaries (the service itself cannot be told to split;
// "Design a scalable partitioning strategy for Azure Table storage" advises against priming it).
func (t *Table) SplitAt(key string) bool {
	now := t.svc.nowNanos()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.lookup(key)
	if r.low == key || t.tree.Len() >= t.svc.bal.maxRanges {
		return false
	}
	r.load.roll(now, t.svc.bal.window)
	f, ok := r.loadCur.fractionBelow(key, false)
	if !ok {
		f = 0.5
	}
	t.splitRange(r, key, f, now)
	return true
}

// rangeCount returns the number of range partitions.
func (t *Table) rangeCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tree.Len()
}

// Ranges returns the range partitions in key order with their statistics; the root package's
// invariant check compares their totals with the data stored.
func (t *Table) Ranges() []RangeInfo {
	now := t.svc.nowNanos()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rangeInfos(now)
}

func (t *Table) rangeInfos(now int64) []RangeInfo {
	w := t.svc.bal.window
	out := make([]RangeInfo, 0, t.tree.Len())
	t.tree.Ascend(func(r *rangePart) bool {
		if n := len(out); n > 0 {
			out[n-1].High = r.low
		}
		out = append(out, RangeInfo{
			Low:       r.low,
			Entities:  r.entities,
			Bytes:     r.bytes,
			Rate:      r.load.rate(now, w),
			Offered:   r.offered,
			Throttled: r.throttled,
			Splits:    r.splits,
			Offline:   r.offlineUntil > now,

			ThrottledHistory: r.throttledHist.series(now),
		})
		return true
	})
	return out
}

// snapshot lists the ranges in order into a reused slice; t.mu held.
func (t *Table) snapshot() []*rangePart {
	rs := t.ranges[:0]
	t.tree.Ascend(func(r *rangePart) bool { rs = append(rs, r); return true })
	t.ranges = rs
	return rs
}

// balance is one pass of the simulated load balancer; t.mu held. A range
// whose load has stayed above SplitAbove for SplitAfter splits at the
// sampled key that halves its load; then adjacent ranges that have both
// stayed below MergeBelow for MergeAfter, and together are below it too,
// merge. Cost: O(ranges) plus a sort of the sample per split.
func (t *Table) balance(now int64) {
	b := &t.svc.bal
	t.nextPass = now + b.interval
	if b.disabled {
		return
	}
	rs := t.snapshot()
	n := len(rs)
	for _, r := range rs {
		rate := r.load.rate(now, b.window)
		if rate > b.splitAbove {
			if !r.hot {
				r.hot, r.hotSince = true, now
			} else if now-r.hotSince >= b.splitAfter && n < b.maxRanges {
				r.rollSamples(now / b.window)
				key, f, scratch, ok := r.chooseSplit(t.scratch)
				t.scratch = scratch
				if ok {
					t.splitRange(r, key, f, now)
					n++
					continue
				}
			}
		} else {
			r.hot = false
		}
		if rate < b.mergeBelow {
			if !r.cold {
				r.cold, r.coldSince = true, now
			}
		} else {
			r.cold = false
		}
	}
	if n < 2 {
		clear(t.ranges)
		return
	}
	rs = t.snapshot()
	for i := 0; i+1 < len(rs); {
		left, right := rs[i], rs[i+1]
		if left.cold && right.cold &&
			now-left.coldStart(b.window) >= b.mergeAfter &&
			now-right.coldStart(b.window) >= b.mergeAfter &&
			left.load.rate(now, b.window)+right.load.rate(now, b.window) < b.mergeBelow {
			t.mergeRanges(left, right, now)
			rs = append(rs[:i+1], rs[i+2:]...)
			continue
		}
		i++
	}
	clear(t.ranges[:cap(t.ranges)]) // drop references to merged ranges
}

func (t *Table) resetStats() {
	t.mu.Lock()
	t.splits, t.merges = 0, 0
	t.tree.Ascend(func(r *rangePart) bool { r.resetStats(); return true })
	t.mu.Unlock()
	t.resetKeyStats()
}
