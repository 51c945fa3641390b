package partition

import (
	"hash/maphash"
	"math"
	"strings"
	"sync"
)

// Per-PartitionKey token buckets live in the table, in shards of a map
// guarded by their own mutex, so that goroutines working on different keys
// rarely meet. A bucket also carries the key's traffic statistics for the
// heat report. Buckets that are full and idle are dropped by a sweep that
// each shard runs on itself at most once per refill period; so memory follows
// the number of keys busy in the last second or so, not the number of keys
// ever seen.

const (
	keyShards   = 32
	maxFree     = 64  // recycled buckets kept per shard
	maxRetired  = 256 // throttled keys remembered after their bucket is dropped
	hotKeyShown = 10  // hot keys per table in a report
)

type keyBucket struct {
	tat       int64 // token bucket (see gcra.go)
	last      int64 // last use, ns
	offered   int64 // entities offered since the last reset
	throttled int64 // of which refused by the partition limit
	rate      rateCounter
}

type keyShard struct {
	mu        sync.Mutex
	m         map[string]*keyBucket
	free      []*keyBucket
	nextSweep int64
	_         [16]byte // keep neighbouring shards' mutexes apart
}

type retiredKey struct {
	offered, throttled int64
}

type keyTable struct {
	shards    [keyShards]keyShard
	retiredMu sync.Mutex
	retired   map[string]retiredKey
}

func (t *Table) shard(pk string) *keyShard {
	return &t.keys.shards[maphash.String(t.svc.hashSeed, pk)&(keyShards-1)]
}

// takeKey runs pk's bucket for n entities and records the traffic. It
// reports whether the partition limit admits them (and charged them).
func (t *Table) takeKey(pk string, n, now int64) bool {
	svc := t.svc
	p := t.sc.keyLimit.Load()
	sh := t.shard(pk)
	sh.mu.Lock()
	b := t.bucket(sh, pk, now)
	ok := true
	if p.enabled {
		b.tat, ok = p.allow(b.tat, now, n)
	}
	b.last = now
	b.offered += n
	if n > 0 {
		b.rate.add(now, svc.bal.window, float64(n))
	}
	if !ok {
		b.throttled += max(n, 1)
	}
	sh.mu.Unlock()
	return ok
}

// chargeKey charges pk's bucket n entities after the fact.
func (t *Table) chargeKey(pk string, n, now int64) {
	svc := t.svc
	sh := t.shard(pk)
	sh.mu.Lock()
	b := t.bucket(sh, pk, now)
	if p := t.sc.keyLimit.Load(); p.enabled {
		b.tat = p.charge(b.tat, now, n)
	}
	b.last = now
	b.offered += n
	b.rate.add(now, svc.bal.window, float64(n))
	sh.mu.Unlock()
}

// refundKey undoes takeKey's charge when the account limit refused the
// operation after the partition limit admitted it.
func (t *Table) refundKey(pk string, n int64) {
	p := t.sc.keyLimit.Load()
	if !p.enabled {
		return
	}
	sh := t.shard(pk)
	sh.mu.Lock()
	if b := sh.m[pk]; b != nil {
		b.tat -= p.cost(n)
	}
	sh.mu.Unlock()
}

// refillKeys fills every PartitionKey bucket of the table (see SetRates).
func (t *Table) refillKeys() {
	for i := range t.keys.shards {
		sh := &t.keys.shards[i]
		sh.mu.Lock()
		for _, b := range sh.m {
			b.tat = math.MinInt64 / 2
		}
		sh.mu.Unlock()
	}
}

// bucket returns pk's bucket, creating a full one. Called with sh.mu held.
func (t *Table) bucket(sh *keyShard, pk string, now int64) *keyBucket {
	if now >= sh.nextSweep {
		t.sweep(sh, now, false)
	}
	if b := sh.m[pk]; b != nil {
		return b
	}
	if sh.m == nil {
		sh.m = make(map[string]*keyBucket)
	}
	if len(sh.m) >= t.svc.shardCap {
		t.sweep(sh, now, true)
	}
	var b *keyBucket
	if n := len(sh.free); n > 0 {
		b = sh.free[n-1]
		sh.free = sh.free[:n-1]
		*b = keyBucket{}
	} else {
		b = new(keyBucket)
	}
	b.tat = math.MinInt64 / 2 // full
	// Clone: the key outlives the call and must not pin the caller's buffer.
	sh.m[strings.Clone(pk)] = b
	return b
}

// sweep drops buckets that are full and have been idle for a refill period.
// When force is set (the shard is at its cap) and nothing was idle, it drops
// one bucket anyway, preferring a full one. Called with sh.mu held.
func (t *Table) sweep(sh *keyShard, now int64, force bool) {
	idle := t.svc.idleAfter
	sh.nextSweep = now + idle
	dropped := false
	for k, b := range sh.m {
		if b.tat <= now && now-b.last >= idle {
			t.dropBucket(sh, k, b)
			dropped = true
		}
	}
	if !force || dropped {
		return
	}
	var victim string
	var vb *keyBucket
	for k, b := range sh.m {
		victim, vb = k, b
		if b.tat <= now {
			break
		}
	}
	if vb != nil {
		t.dropBucket(sh, victim, vb)
	}
}

func (t *Table) dropBucket(sh *keyShard, k string, b *keyBucket) {
	if b.throttled > 0 {
		t.retire(k, retiredKey{offered: b.offered, throttled: b.throttled})
	}
	delete(sh.m, k)
	if len(sh.free) < maxFree {
		sh.free = append(sh.free, b)
	}
}

// retire remembers a throttled key whose bucket is dropped, so the heat
// report still names it; bounded, keeping the most throttled keys.
func (t *Table) retire(k string, r retiredKey) {
	kt := &t.keys
	kt.retiredMu.Lock()
	defer kt.retiredMu.Unlock()
	if kt.retired == nil {
		kt.retired = make(map[string]retiredKey)
	}
	if old, ok := kt.retired[k]; ok {
		kt.retired[k] = retiredKey{old.offered + r.offered, old.throttled + r.throttled}
		return
	}
	if len(kt.retired) >= maxRetired {
		minK, minV := "", int64(math.MaxInt64)
		for k2, v := range kt.retired {
			if v.throttled < minV {
				minK, minV = k2, v.throttled
			}
		}
		if minV >= r.throttled {
			return
		}
		delete(kt.retired, minK)
	}
	kt.retired[k] = r
}

// trackedKeys reports how many per-key buckets the table holds.
func (t *Table) trackedKeys() int {
	n := 0
	for i := range t.keys.shards {
		sh := &t.keys.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// hotKeys lists the keys whose recent rate reaches hotRate or that were
// throttled, hottest first, at most hotKeyShown.
func (t *Table) hotKeys(now int64, hotRate float64) []KeyInfo {
	svc := t.svc
	byKey := make(map[string]KeyInfo)
	for i := range t.keys.shards {
		sh := &t.keys.shards[i]
		sh.mu.Lock()
		for k, b := range sh.m {
			r := b.rate.rate(now, svc.bal.window)
			if r >= hotRate || b.throttled > 0 {
				byKey[k] = KeyInfo{PartitionKey: k, Rate: r, Offered: b.offered, Throttled: b.throttled}
			}
		}
		sh.mu.Unlock()
	}
	t.keys.retiredMu.Lock()
	for k, v := range t.keys.retired {
		ki := byKey[k]
		ki.PartitionKey = k
		ki.Offered += v.offered
		ki.Throttled += v.throttled
		byKey[k] = ki
	}
	t.keys.retiredMu.Unlock()
	out := make([]KeyInfo, 0, len(byKey))
	for _, ki := range byKey {
		out = append(out, ki)
	}
	sortKeyInfos(out)
	if len(out) > hotKeyShown {
		out = out[:hotKeyShown]
	}
	return out
}

func (t *Table) resetKeyStats() {
	for i := range t.keys.shards {
		sh := &t.keys.shards[i]
		sh.mu.Lock()
		for _, b := range sh.m {
			b.offered, b.throttled = 0, 0
		}
		sh.mu.Unlock()
	}
	t.keys.retiredMu.Lock()
	clear(t.keys.retired)
	t.keys.retiredMu.Unlock()
}
