package partition

import "sync/atomic"

// Token buckets are kept in the form of the generic cell rate algorithm: one
// int64 per bucket, the "theoretical arrival time" (tat, in ns on the
// injected clock). A bucket is full when tat <= now; it holds
// burst - (tat-now)/nsPer tokens otherwise, and is in debt when
// tat-now > tau. One word per bucket keeps idle-bucket detection trivial and
// lets the account bucket be updated with a compare-and-swap instead of a
// lock that every operation of every goroutine would contend on.

// allow decides whether n entities may start now given the bucket's tat, and
// returns the tat after charging them. An operation needs at least
// min(n, burst) tokens and at least one: a zero-cost check (a query about to
// scan) is refused while the bucket is empty or in debt, and an operation
// larger than the burst is admitted once the bucket is full. Admitted
// operations are charged all n, so the bucket may go into debt.
func (p *bucketParams) allow(tat, now, n int64) (int64, bool) {
	base := max(tat, now)
	need := max(min(n, p.burstN), 1)
	if base-now+int64(float64(need)*p.nsPer) > p.tau {
		return tat, false
	}
	return base + int64(float64(n)*p.nsPer), true
}

// charge charges n entities unconditionally: the after-the-fact cost of a
// query whose scan size was unknown when it was admitted.
func (p *bucketParams) charge(tat, now, n int64) int64 {
	return max(tat, now) + int64(float64(n)*p.nsPer)
}

// cost is what n entities add to a bucket's tat.
func (p *bucketParams) cost(n int64) int64 { return int64(float64(n) * p.nsPer) }

// sharedBucket is a token bucket updated without locks.
type sharedBucket struct {
	tat atomic.Int64
	_   [56]byte // keep the hot word on its own cache line
}

func (b *sharedBucket) take(p *bucketParams, now, n int64) bool {
	for {
		old := b.tat.Load()
		next, ok := p.allow(old, now, n)
		if !ok {
			return false
		}
		if b.tat.CompareAndSwap(old, next) {
			return true
		}
	}
}

func (b *sharedBucket) charge(p *bucketParams, now, n int64) {
	for {
		old := b.tat.Load()
		if b.tat.CompareAndSwap(old, p.charge(old, now, n)) {
			return
		}
	}
}

// refund gives back what take charged when a later check refused the
// operation. Exact while the bucket is not full; when it is, the result is
// a full bucket either way.
func (b *sharedBucket) refund(p *bucketParams, n int64) { b.tat.Add(-p.cost(n)) }
