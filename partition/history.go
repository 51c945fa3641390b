package partition

import (
	"sync"
	"time"
)

// The throttling history says when throttling began and how it went: entities throttled
// per HistoryInterval over the last HistoryLen intervals (five minutes), on the service's
// clock, for each range partition and for the service (every account's).
const (
	HistoryInterval = 10 * time.Second
	HistoryLen      = 30
)

// history counts entities per HistoryInterval in a ring of HistoryLen slots. slot is the
// interval number (clock / HistoryInterval) of the newest slot; older slots follow it
// backwards around the ring. The zero value is empty.
type history struct {
	slot   int64
	counts [HistoryLen]int64
}

const historyNanos = int64(HistoryInterval)

// ring is the index in the ring of interval s (which may be negative before 1970).
func ring(s int64) int64 { return (s%HistoryLen + HistoryLen) % HistoryLen }

// roll makes the interval holding now the newest slot, clearing the slots it passes over.
// A clock that went back keeps counting in the newest slot.
func (h *history) roll(now int64) {
	s := now / historyNanos
	if s <= h.slot {
		return
	}
	if s-h.slot >= HistoryLen {
		clear(h.counts[:])
	} else {
		for i := h.slot + 1; i <= s; i++ {
			h.counts[ring(i)] = 0
		}
	}
	h.slot = s
}

func (h *history) add(now, n int64) {
	h.roll(now)
	h.counts[ring(h.slot)] += n
}

// series returns the counts at now, oldest first: HistoryLen values, the last for the
// interval holding now. It is nil when the history holds nothing then.
func (h *history) series(now int64) []int64 {
	if h == nil {
		return nil
	}
	c := *h
	c.roll(now)
	out := make([]int64, HistoryLen)
	nonzero := false
	for i := range out {
		out[i] = c.counts[ring(c.slot-HistoryLen+1+int64(i))]
		nonzero = nonzero || out[i] != 0
	}
	if !nonzero {
		return nil
	}
	return out
}

// splitHistory divides a range's history when it splits, keeping the share f on the left
// as the other counters do; it returns the right half's (nil when there is none).
func splitHistory(h **history, f float64) *history {
	if *h == nil {
		return nil
	}
	right := *(*h)
	for i, n := range (*h).counts {
		left := int64(float64(n)*f + 0.5)
		(*h).counts[i], right.counts[i] = left, n-left
	}
	return &right
}

// mergeHistory folds right's history into left's when two ranges merge.
func mergeHistory(left **history, right *history, now int64) {
	if right == nil {
		return
	}
	if *left == nil {
		*left = &history{}
	}
	r := *right
	r.roll(now)
	(*left).roll(now)
	for i, n := range r.counts {
		(*left).counts[i] += n
	}
}

// addHistory counts n throttled entities at now in a range's history, creating it on the
// first throttle: most ranges are never throttled and carry no history.
func addHistory(h **history, now, n int64) {
	if *h == nil {
		*h = &history{}
	}
	(*h).add(now, n)
}

// serviceHistory is the service's throttling history, every account's, by the limit that
// refused.
type serviceHistory struct {
	mu                 sync.Mutex
	partition, account history
}

func (a *serviceHistory) add(now int64, cause Cause, n int64) {
	a.mu.Lock()
	if cause == CauseAccountLimit {
		a.account.add(now, n)
	} else {
		a.partition.add(now, n)
	}
	a.mu.Unlock()
}

// fill sets the report's account histories at now.
func (a *serviceHistory) fill(rep *Report, now int64) {
	a.mu.Lock()
	rep.ThrottledPartitionHistory = a.partition.series(now)
	rep.ThrottledAccountHistory = a.account.series(now)
	a.mu.Unlock()
}
