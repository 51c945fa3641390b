package partition

import (
	"hash/fnv"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula/internal/keyorder"
)

// Account is the simulated service the root package holds per DB: the limits,
// the fault injection, one Table (range index, statistics, per-key buckets)
// per table, and one account bucket per storage account that has tables.
// Each account has its own target (Limits.AccountRate applies to each), as
// on the service; Table's tables belong to the default account, "", and
// AccountTable's to the account named. All methods are safe for concurrent
// use.
type Account struct {
	now      func() time.Time
	seed     uint64
	hashSeed maphash.Seed

	mode      atomic.Uint32 // LimitMode
	limits    Limits
	ratesMu   sync.Mutex // guards limits' rates and bursts (see SetRates)
	keyLimit  atomic.Pointer[bucketParams]
	acctLimit atomic.Pointer[bucketParams]
	shardCap  int   // per-key buckets per shard
	idleAfter int64 // ns a full bucket must be idle before it is dropped

	throttledPartition atomic.Int64 // entities refused by partition limits
	throttledAccount   atomic.Int64 // entities refused by the account limits, every account's
	history            accountHistory

	bal    balanceParams
	faults atomic.Pointer[faultState]

	mu      sync.RWMutex
	tables  map[tableKey]*Table
	buckets map[string]*sharedBucket // per account, kept when its tables are dropped
}

// tableKey names a table: its account and its name in that account.
type tableKey struct{ account, name string }

// New returns an Account configured by opts (nil means all defaults).
func New(opts *Options) *Account {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	l := o.Limits
	if !(l.PartitionRate > 0) {
		l.PartitionRate = DefaultPartitionRate
	}
	if !(l.AccountRate > 0) {
		l.AccountRate = DefaultAccountRate
	}
	if l.MaxKeys <= 0 {
		l.MaxKeys = DefaultMaxKeys
	}
	a := &Account{
		now:      o.Now,
		seed:     o.Seed,
		hashSeed: maphash.MakeSeed(),
		limits:   l,
		shardCap: max(1, (l.MaxKeys+keyShards-1)/keyShards),
		bal:      o.Balance.params(),
		tables:   make(map[tableKey]*Table),
		buckets:  make(map[string]*sharedBucket),
	}
	kl, _ := a.storeRates(l)
	a.idleAfter = max(kl.refill, int64(time.Second))
	a.mode.Store(uint32(l.Mode))
	a.faults.Store(newFaultState(o.Faults))
	return a
}

// minTime is a bucket time before any clock reading: a full bucket.
const minTime = -1 << 62

func (a *Account) nowNanos() int64 { return a.now().UnixNano() }

// Limits returns the limits in force, defaults filled in.
func (a *Account) Limits() Limits {
	a.ratesMu.Lock()
	l := a.limits
	a.ratesMu.Unlock()
	l.Mode = a.LimitMode()
	return l
}

// LimitMode returns the current limit mode.
func (a *Account) LimitMode() LimitMode { return LimitMode(a.mode.Load()) }

// SetLimitMode switches the limit mode; buckets keep their state.
func (a *Account) SetLimitMode(m LimitMode) { a.mode.Store(uint32(m)) }

// SetRates replaces the rates and bursts of the limits while the account
// runs; l.Mode and l.MaxKeys are ignored (SetLimitMode switches the mode).
// Zero or negative fields take their defaults, as in New. Every bucket
// starts full under the new rates, so that a test which slows the service
// down and then speeds it up again sees the new rates at once, with no debt
// carried over from the old ones.
func (a *Account) SetRates(l Limits) {
	if !(l.PartitionRate > 0) {
		l.PartitionRate = DefaultPartitionRate
	}
	if !(l.AccountRate > 0) {
		l.AccountRate = DefaultAccountRate
	}
	a.storeRates(l)
	a.mu.RLock()
	for _, b := range a.buckets {
		b.tat.Store(minTime)
	}
	a.mu.RUnlock()
	for _, t := range a.tableList() {
		t.refillKeys()
	}
}

// storeRates installs l's rates and bursts and returns the buckets'
// parameters.
func (a *Account) storeRates(l Limits) (key, acct *bucketParams) {
	kl := newBucketParams(l.PartitionRate, l.PartitionBurst)
	al := newBucketParams(l.AccountRate, l.AccountBurst)
	a.ratesMu.Lock()
	a.limits.PartitionRate, a.limits.PartitionBurst = l.PartitionRate, kl.burst
	a.limits.AccountRate, a.limits.AccountBurst = l.AccountRate, al.burst
	a.keyLimit.Store(&kl)
	a.acctLimit.Store(&al)
	a.ratesMu.Unlock()
	return &kl, &al
}

// SetFaults replaces the fault injection configuration and restarts its
// sequence of draws; the zero Faults turns injection off.
func (a *Account) SetFaults(f Faults) { a.faults.Store(newFaultState(f)) }

// Faults returns the fault injection configuration in force.
func (a *Account) Faults() Faults {
	if s := a.faults.Load(); s != nil {
		return s.cfg
	}
	return Faults{}
}

// Table returns the state of a table of the default account, "": the same as
// AccountTable("", name).
func (a *Account) Table(name string) *Table { return a.AccountTable("", name) }

// AccountTable returns the state of the table called name in the storage
// account called account, creating it (one range covering every key) on
// first use. Its entities count against that account's bucket, which the
// account's first table creates and every table of the account shares;
// tables of other accounts never draw on it. name is the table's identity
// within its account as the caller defines it; pass the same spelling every
// time (the service's table names are case-insensitive, so the lower-case
// name is a good choice). Hold the result: its methods are the per-operation
// calls, and it resolved its account's bucket once, here.
func (a *Account) AccountTable(account, name string) *Table {
	k := tableKey{account, name}
	a.mu.RLock()
	t := a.tables[k]
	a.mu.RUnlock()
	if t != nil {
		return t
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if t = a.tables[k]; t == nil {
		b := a.buckets[account]
		if b == nil {
			b = new(sharedBucket)
			b.tat.Store(minTime)
			a.buckets[account] = b
		}
		t = newTable(a, account, name, b)
		a.tables[k] = t
	}
	return t
}

// DropTable forgets a table of the default account: DropAccountTable("", name).
func (a *Account) DropTable(name string) { a.DropAccountTable("", name) }

// DropAccountTable forgets a table's ranges and statistics, as when it is
// deleted. A *Table still held keeps working but no longer appears in
// reports. The account's bucket stays, with what it holds, so that deleting
// and creating tables never refills it.
func (a *Account) DropAccountTable(account, name string) {
	a.mu.Lock()
	delete(a.tables, tableKey{account, name})
	a.mu.Unlock()
}

func (a *Account) tableList() []*Table {
	a.mu.RLock()
	ts := make([]*Table, 0, len(a.tables))
	for _, t := range a.tables {
		ts = append(ts, t)
	}
	a.mu.RUnlock()
	slices.SortFunc(ts, func(x, y *Table) int {
		if c := keyorder.Compare(x.name, y.name); c != 0 {
			return c
		}
		return keyorder.Compare(x.account, y.account)
	})
	return ts
}

// AdmitTableOp decides a table-level operation (create, delete or query
// tables). Only fault injection applies: these operations touch no entities,
// so the limits, which count entities, do not.
func (a *Account) AdmitTableOp(kind Kind) Decision {
	if f := a.faults.Load(); f != nil {
		return f.decide(kind)
	}
	return Decision{}
}

// MustEndPage reports whether a query page that has scanned this many
// entities must end now with a continuation token (fault injection's forced
// continuation). Two loads and a compare: cheap enough to ask per entity.
func (a *Account) MustEndPage(scanned int) bool {
	f := a.faults.Load()
	return f != nil && f.cfg.ContinuationEvery > 0 && scanned >= f.cfg.ContinuationEvery
}

// Balance runs the load balancer on every table now. It also runs by itself
// inside operations, at most once per Balance.Interval per table; call this
// after advancing a fake clock over a quiet period to see merges without
// issuing operations.
func (a *Account) Balance() {
	now := a.nowNanos()
	for _, t := range a.tableList() {
		t.mu.Lock()
		t.balance(now)
		t.mu.Unlock()
	}
}

// ResetStats zeroes the cumulative traffic counters: offered and throttled
// entities, split and merge counts, remembered throttled keys; so that one
// phase of a stress test can be examined apart from the one before. It keeps
// what describes the data or drives behaviour: stored entities and bytes,
// the range partitions, the buckets' tokens, and the recent rates (which
// fade by themselves within two Balance.Windows) with the balancer's state.
// Resetting statistics never changes what happens next.
func (a *Account) ResetStats() {
	a.throttledPartition.Store(0)
	a.throttledAccount.Store(0)
	for _, t := range a.tableList() {
		t.resetStats()
	}
}

// fnvSeed derives a table's sampling seed from the account seed and its name.
func fnvSeed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

func newTableRand(seed uint64, name string) *rand.Rand {
	return rand.New(rand.NewPCG(seed, fnvSeed(name)))
}
