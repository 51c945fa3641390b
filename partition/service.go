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

// Service is the simulated Table service, for the root package, which holds one per DB: the
// limits, the fault injection, one Table (range index, statistics, per-key buckets) per table,
// and one account bucket per storage account that has tables. Each account has its own
// target (Limits.AccountRate applies to each), as on the service. All methods are safe for
// concurrent use.
type Service struct {
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
	history            serviceHistory

	bal    balanceParams
	faults atomic.Pointer[faultState]

	mu     sync.RWMutex
	tables map[tableKey]*Table
	scopes map[string]*scope // per account, kept when its tables are dropped (scope.go)
}

// tableKey names a table: its account and its name in that account.
type tableKey struct{ account, name string }

// NewService returns a Service configured by opts (nil means all defaults).
func NewService(opts *Options) *Service {
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
		l.MaxKeys = defaultMaxKeys
	}
	svc := &Service{
		now:      o.Now,
		seed:     o.Seed,
		hashSeed: maphash.MakeSeed(),
		limits:   l,
		shardCap: max(1, (l.MaxKeys+keyShards-1)/keyShards),
		bal:      o.Balance.params(),
		tables:   make(map[tableKey]*Table),
		scopes:   make(map[string]*scope),
	}
	kl, _ := svc.storeRates(l)
	svc.idleAfter = max(kl.refill, int64(time.Second))
	svc.mode.Store(uint32(l.Mode))
	svc.faults.Store(newFaultState(o.Faults))
	return svc
}

// minTime is a bucket time before any clock reading: a full bucket.
const minTime = -1 << 62

func (svc *Service) nowNanos() int64 { return svc.now().UnixNano() }

// Limits returns the limits in force, defaults filled in.
func (svc *Service) Limits() Limits {
	svc.ratesMu.Lock()
	l := svc.limits
	svc.ratesMu.Unlock()
	l.Mode = svc.limitMode()
	return l
}

// limitMode returns the current limit mode.
func (svc *Service) limitMode() LimitMode { return LimitMode(svc.mode.Load()) }

// SetLimitMode switches the limit mode of every storage account; buckets keep their state.
func (svc *Service) SetLimitMode(m LimitMode) {
	svc.mode.Store(uint32(m))
	for _, s := range svc.scopeList() {
		s.mode.Store(uint32(m))
	}
}

// SetRates replaces the rates and bursts of the limits while the service
// runs; l.Mode and l.MaxKeys are ignored (SetLimitMode switches the mode).
// Zero or negative fields take their defaults, as in NewService. Every bucket
// starts full under the new rates, so that a test which slows the service
// down and then speeds it up again sees the new rates at once, with no debt
// carried over from the old ones.
func (svc *Service) SetRates(l Limits) {
	kl, al := svc.storeRates(l)
	for _, s := range svc.scopeList() {
		s.storeRates(kl, al)
		s.bucket.tat.Store(minTime)
	}
	for _, t := range svc.tableList() {
		t.refillKeys()
	}
}

// storeRates installs l's rates and bursts and returns the buckets'
// parameters.
func (svc *Service) storeRates(l Limits) (key, acct *bucketParams) {
	kl, al := rateParams(l)
	svc.ratesMu.Lock()
	svc.limits.PartitionRate, svc.limits.PartitionBurst = kl.rate, kl.burst
	svc.limits.AccountRate, svc.limits.AccountBurst = al.rate, al.burst
	svc.keyLimit.Store(kl)
	svc.acctLimit.Store(al)
	svc.ratesMu.Unlock()
	return kl, al
}

// rateParams are the buckets' parameters for l's rates and bursts, zero or negative rates
// taking their defaults.
func rateParams(l Limits) (key, acct *bucketParams) {
	if !(l.PartitionRate > 0) {
		l.PartitionRate = DefaultPartitionRate
	}
	if !(l.AccountRate > 0) {
		l.AccountRate = DefaultAccountRate
	}
	kl := newBucketParams(l.PartitionRate, l.PartitionBurst)
	al := newBucketParams(l.AccountRate, l.AccountBurst)
	return &kl, &al
}

// SetFaults replaces the fault injection configuration of every storage
// account and restarts its sequence of draws, one sequence that every
// account's operations draw from; the zero Faults turns injection off.
func (svc *Service) SetFaults(f Faults) {
	fs := newFaultState(f)
	svc.faults.Store(fs)
	for _, s := range svc.scopeList() {
		s.faults.Store(fs)
	}
}

// Faults returns the fault injection configuration in force.
func (svc *Service) Faults() Faults {
	if s := svc.faults.Load(); s != nil {
		return s.cfg
	}
	return Faults{}
}

// Table returns the state of the table called name in the storage account
// called account ("" for the default account of a DB without namespaces),
// creating it (one range covering every key) on first use. Its entities
// count against that account's bucket, which the account's first table
// creates and every table of the account shares; tables of other accounts
// never draw on it. name is the table's identity within its account as the
// caller defines it; pass the same spelling every time (the service's table
// names are case-insensitive, so the lower-case name is a good choice). Hold
// the result: its methods are the per-operation calls, and it resolved its
// account's bucket once, here.
func (svc *Service) Table(account, name string) *Table {
	k := tableKey{account, name}
	svc.mu.RLock()
	t := svc.tables[k]
	svc.mu.RUnlock()
	if t != nil {
		return t
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if t = svc.tables[k]; t == nil {
		t = newTable(svc, account, name, svc.scopeLocked(account))
		svc.tables[k] = t
	}
	return t
}

// DropTable forgets a table's ranges and statistics, as when it is
// deleted. A *Table still held keeps working but no longer appears in
// reports. The account's bucket stays, with what it holds, so that deleting
// and creating tables never refills it.
func (svc *Service) DropTable(account, name string) {
	svc.mu.Lock()
	delete(svc.tables, tableKey{account, name})
	svc.mu.Unlock()
}

func (svc *Service) tableList() []*Table {
	svc.mu.RLock()
	ts := make([]*Table, 0, len(svc.tables))
	for _, t := range svc.tables {
		ts = append(ts, t)
	}
	svc.mu.RUnlock()
	slices.SortFunc(ts, func(x, y *Table) int {
		if c := keyorder.CompareKeys(x.name, y.name); c != 0 {
			return c
		}
		return keyorder.CompareKeys(x.account, y.account)
	})
	return ts
}

// AdmitTableOp decides a table-level operation (create, delete or query
// tables) of a storage account. Only the account's fault injection applies:
// these operations touch no entities, so the limits, which count entities,
// do not.
func (svc *Service) AdmitTableOp(account string, kind Kind) Decision {
	if f := svc.scopeOf(account).faults.Load(); f != nil {
		return f.decide(kind)
	}
	return Decision{}
}

// balanceNow runs the load balancer on every table now. It also runs by
// itself inside operations, at most once per Balance.Interval per table;
// tests call this after advancing a fake clock over a quiet period to see
// merges without issuing operations.
func (svc *Service) balanceNow() {
	now := svc.nowNanos()
	for _, t := range svc.tableList() {
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
func (svc *Service) ResetStats() {
	svc.throttledPartition.Store(0)
	svc.throttledAccount.Store(0)
	for _, s := range svc.scopeList() {
		s.throttledPartition.Store(0)
		s.throttledAccount.Store(0)
	}
	for _, t := range svc.tableList() {
		t.resetStats()
	}
}

// fnvSeed derives a table's sampling seed from the service's seed and its name.
func fnvSeed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

func newTableRand(seed uint64, name string) *rand.Rand {
	return rand.New(rand.NewPCG(seed, fnvSeed(name)))
}
