package partition

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tabuladb/tabula/internal/keyorder"
)

// rateCounter estimates a recent rate over a window w with two slots aligned
// on the clock (slot = now/w): the count of the current slot plus the
// previous slot's count weighted by the share of it still inside the window
// that ends now. A steady rate is estimated exactly and a burst fades out
// within two windows. Three words, so every range and every tracked
// PartitionKey can have one. Counts are float64 so that a split can divide
// them.
type rateCounter struct {
	slot      int64
	cur, prev float64
}

func (c *rateCounter) roll(now, w int64) {
	s := now / w
	switch {
	case s <= c.slot: // same slot, or the clock went back: keep counting here
		return
	case s == c.slot+1:
		c.prev, c.cur = c.cur, 0
	default:
		c.prev, c.cur = 0, 0
	}
	c.slot = s
}

func (c *rateCounter) add(now, w int64, n float64) {
	c.roll(now, w)
	c.cur += n
}

// rate returns entities/s at now without changing the counter.
func (c rateCounter) rate(now, w int64) float64 {
	c.roll(now, w)
	f := float64(now-c.slot*w) / float64(w)
	f = min(max(f, 0), 1)
	return (c.prev*(1-f) + c.cur) * 1e9 / float64(w)
}

func (c *rateCounter) scale(f float64) {
	c.cur *= f
	c.prev *= f
}

// merge adds o into c, both brought to now first so that their slots align.
func (c *rateCounter) merge(o rateCounter, now, w int64) {
	c.roll(now, w)
	o.roll(now, w)
	c.cur += o.cur
	c.prev += o.prev
}

// sample is one sampled operation: its PartitionKey and weights (entities
// for load samples; entities and bytes for storage samples).
type sample struct {
	key string
	n   int64
	b   int64
}

// reservoir is a uniform sample of at most cap operations (Algorithm R):
// bounded memory however many distinct keys pass through.
type reservoir struct {
	items []sample
	seen  int64
}

func (r *reservoir) add(s sample, capacity int, rng *rand.Rand) {
	r.seen++
	if len(r.items) < capacity {
		r.items = append(r.items, s)
		return
	}
	if j := rng.Int64N(r.seen); j < int64(capacity) {
		r.items[j] = s
	}
}

func (r *reservoir) reset() {
	clear(r.items) // drop key references
	r.items = r.items[:0]
	r.seen = 0
}

// splitAt moves the samples with key >= at into a new reservoir.
func (r *reservoir) splitAt(at string) reservoir {
	var right reservoir
	kept := r.items[:0]
	for _, s := range r.items {
		if keyorder.CompareKeys(s.key, at) >= 0 {
			right.items = append(right.items, s)
		} else {
			kept = append(kept, s)
		}
	}
	clear(r.items[len(kept):])
	r.items = kept
	// Share the number of operations seen in proportion to the samples, so
	// later additions keep replacing at about the right rate.
	if total := len(kept) + len(right.items); total > 0 {
		right.seen = r.seen * int64(len(right.items)) / int64(total)
		r.seen -= right.seen
	}
	return right
}

// absorb adds o's samples, keeping at most capacity chosen at random.
func (r *reservoir) absorb(o reservoir, capacity int, rng *rand.Rand) {
	r.items = append(r.items, o.items...)
	r.seen += o.seen
	if len(r.items) > capacity {
		rng.Shuffle(len(r.items), func(i, j int) { r.items[i], r.items[j] = r.items[j], r.items[i] })
		clear(r.items[capacity:])
		r.items = r.items[:capacity]
	}
}

// fractionBelow returns the share of weight (entities if bytes is false)
// sampled below key, and whether the sample had any weight at all.
func (r *reservoir) fractionBelow(key string, bytes bool) (float64, bool) {
	var below, total int64
	for _, s := range r.items {
		w := s.n
		if bytes {
			w = s.b
		}
		total += w
		if keyorder.CompareKeys(s.key, key) < 0 {
			below += w
		}
	}
	if total <= 0 {
		return 0, false
	}
	return float64(below) / float64(total), true
}

// rangePart is one range partition: the PartitionKeys [low, next.low).
// Guarded by its table's mutex.
type rangePart struct {
	low string

	entities, bytes int64 // stored data, from RecordWrite
	offered         int64 // entities offered since the last stats reset
	throttled       int64 // of which refused (or, observing, would have been)
	splits          int   // how many splits produced this range
	load            rateCounter

	hot, cold           bool
	hotSince, coldSince int64
	lastActive          int64
	offlineUntil        int64
	throttledHist       *history // nil until the range is first throttled

	// Load samples of the current and previous window, to find the key that
	// halves the recent load; a storage sample of inserts, to estimate how a
	// split divides the stored entities and bytes.
	loadCur, loadPrev reservoir
	sampleSlot        int64
	store             reservoir
}

func newRange(low string, now int64) *rangePart {
	return &rangePart{low: low, lastActive: now, offlineUntil: math.MinInt64}
}

// record counts n offered entities for key at now.
func (r *rangePart) record(t *Table, key string, n int64, throttled bool, now int64) {
	if throttled {
		r.throttled += max(n, 1)
		addHistory(&r.throttledHist, now, max(n, 1))
	}
	if n <= 0 {
		return
	}
	w := t.svc.bal.window
	r.offered += n
	r.load.add(now, w, float64(n))
	r.lastActive = now
	if t.svc.bal.disabled {
		return
	}
	r.rollSamples(now / w)
	r.loadCur.add(sample{key: key, n: n}, t.svc.bal.sampleSize, t.rng)
}

// rollSamples keeps the load samples on the same slots as the rate counter,
// so that a split point reflects the load the split decision was based on.
func (r *rangePart) rollSamples(slot int64) {
	switch {
	case slot <= r.sampleSlot:
		return
	case slot == r.sampleSlot+1:
		r.loadPrev, r.loadCur = r.loadCur, r.loadPrev
		r.loadCur.reset()
	default:
		r.loadPrev.reset()
		r.loadCur.reset()
	}
	r.sampleSlot = slot
}

// chooseSplit returns the sampled key that best halves the range's recent load, with the share of
// load below it. It fails when the sample holds fewer than two distinct keys: a single PartitionKey
// cannot be split, the service's own limit ("Performance and scalability checklist for Table
// storage": a hot partition "cannot be load balanced").
func (r *rangePart) chooseSplit(scratch []sample) (string, float64, []sample, bool) {
	scratch = append(scratch[:0], r.loadCur.items...)
	scratch = append(scratch, r.loadPrev.items...)
	slices.SortFunc(scratch, func(a, b sample) int { return keyorder.CompareKeys(a.key, b.key) })
	var total int64
	for _, s := range scratch {
		total += s.n
	}
	best, bestScore, bestBelow := "", int64(math.MaxInt64), int64(0)
	var below int64
	for i, s := range scratch {
		if i > 0 && s.key != scratch[i-1].key && below > 0 && keyorder.CompareKeys(s.key, r.low) > 0 {
			score := 2*below - total
			if score < 0 {
				score = -score
			}
			if score < bestScore {
				best, bestScore, bestBelow = s.key, score, below
			}
		}
		below += s.n
	}
	clear(scratch) // drop key references
	if bestScore == math.MaxInt64 || total == 0 {
		return "", 0, scratch, false
	}
	return best, float64(bestBelow) / float64(total), scratch, true
}

// coldStart is when the range became cold, as far as the table can tell:
// the first pass that saw it cold, or, if that is later, two windows after
// its last activity (by then the rate counter has forgotten it). The second
// bound keeps merges on time when no pass ran during a quiet period.
func (r *rangePart) coldStart(window int64) int64 {
	idle := r.lastActive + 2*window
	if r.cold {
		return min(r.coldSince, idle)
	}
	return idle
}

// resetStats zeroes the cumulative counters. The recent load and the
// balancer's state stay: they fade by themselves within two windows, and
// clearing statistics must not change what the balancer does next.
func (r *rangePart) resetStats() {
	r.offered, r.throttled, r.splits = 0, 0, 0
}

// splitRange splits r at key, which must lie strictly inside it, giving the
// right part the share 1-f of r's load. Stored entities and bytes are
// divided by the storage sample when it has one (else by f): an estimate,
// since the package never sees the stored keys; the table's totals stay
// exact and later RecordWrite deltas go to the right half exactly.
func (t *Table) splitRange(r *rangePart, key string, f float64, now int64) *rangePart {
	right := newRange(strings.Clone(key), now)
	right.splits = r.splits + 1
	r.splits++

	right.load = r.load
	right.load.scale(1 - f)
	r.load.scale(f)

	fe, ok := r.store.fractionBelow(key, false)
	if !ok {
		fe = f
	}
	fb, ok := r.store.fractionBelow(key, true)
	if !ok {
		fb = fe
	}
	le := int64(math.Round(float64(r.entities) * fe))
	lb := int64(math.Round(float64(r.bytes) * fb))
	right.entities, r.entities = r.entities-le, le
	right.bytes, r.bytes = r.bytes-lb, lb
	lo := int64(math.Round(float64(r.offered) * f))
	right.offered, r.offered = r.offered-lo, lo
	lt := int64(math.Round(float64(r.throttled) * f))
	right.throttled, r.throttled = r.throttled-lt, lt
	right.throttledHist = splitHistory(&r.throttledHist, f)

	right.loadCur = r.loadCur.splitAt(key)
	right.loadPrev = r.loadPrev.splitAt(key)
	right.sampleSlot = r.sampleSlot
	right.store = r.store.splitAt(key)

	// Both halves must prove themselves hot (or cold) again.
	r.hot, r.cold = false, false
	right.lastActive = r.lastActive

	if fs := t.sc.faults.Load(); fs != nil && fs.cfg.OfflineOnSplit {
		r.offlineUntil = now + fs.offlineFor
		right.offlineUntil = r.offlineUntil
	}
	t.tree.ReplaceOrInsert(right)
	t.splits++
	return right
}

// mergeRanges folds right, the next range after left, into left.
func (t *Table) mergeRanges(left, right *rangePart, now int64) {
	b := &t.svc.bal
	left.cold, left.coldSince = true, max(left.coldStart(b.window), right.coldStart(b.window))
	left.hot = false
	left.entities += right.entities
	left.bytes += right.bytes
	left.offered += right.offered
	left.throttled += right.throttled
	mergeHistory(&left.throttledHist, right.throttledHist, now)
	left.splits = max(left.splits, right.splits)
	left.load.merge(right.load, now, b.window)
	left.lastActive = max(left.lastActive, right.lastActive)
	left.offlineUntil = max(left.offlineUntil, right.offlineUntil)
	left.rollSamples(now / b.window)
	right.rollSamples(now / b.window)
	left.loadCur.absorb(right.loadCur, b.sampleSize, t.rng)
	left.loadPrev.absorb(right.loadPrev, b.sampleSize, t.rng)
	left.store.absorb(right.store, b.sampleSize/2, t.rng)
	t.tree.Delete(right)
	t.merges++
}
