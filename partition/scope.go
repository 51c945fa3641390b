package partition

import (
	"sync"
	"sync/atomic"
)

// scope is one storage account's share of the simulated service: its limit mode, its rates
// and bursts, its fault injection, its account bucket and its throttling counters. Each
// account has one, made from the service's settings when the account is first seen, so that
// one account can be throttled, faulted or reset while every other runs untouched; the
// service-wide setters change every account's at once.
type scope struct {
	mode      atomic.Uint32 // LimitMode
	ratesMu   sync.Mutex    // guards limits' rates and bursts
	limits    Limits
	keyLimit  atomic.Pointer[bucketParams]
	acctLimit atomic.Pointer[bucketParams]
	faults    atomic.Pointer[faultState]

	bucket sharedBucket // the account bucket, shared by the account's tables

	throttledPartition atomic.Int64 // entities of this account refused by partition limits
	throttledAccount   atomic.Int64 // ... by its account limit
	history            serviceHistory
}

// newScope makes an account's scope from the service's settings now.
func (svc *Service) newScope() *scope {
	s := &scope{}
	s.bucket.tat.Store(minTime)
	svc.ratesMu.Lock()
	s.limits = svc.limits
	s.keyLimit.Store(svc.keyLimit.Load())
	s.acctLimit.Store(svc.acctLimit.Load())
	svc.ratesMu.Unlock()
	s.mode.Store(svc.mode.Load())
	s.faults.Store(svc.faults.Load())
	return s
}

// scopeOf returns the scope of the account called account, making it on first use. Callers
// hold neither svc.mu nor svc.ratesMu.
func (svc *Service) scopeOf(account string) *scope {
	svc.mu.RLock()
	s := svc.scopes[account]
	svc.mu.RUnlock()
	if s != nil {
		return s
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	return svc.scopeLocked(account)
}

// scopeLocked is scopeOf with svc.mu held.
func (svc *Service) scopeLocked(account string) *scope {
	s := svc.scopes[account]
	if s == nil {
		s = svc.newScope()
		svc.scopes[account] = s
	}
	return s
}

// scopeList returns every account's scope.
func (svc *Service) scopeList() []*scope {
	svc.mu.RLock()
	defer svc.mu.RUnlock()
	out := make([]*scope, 0, len(svc.scopes))
	for _, s := range svc.scopes {
		out = append(out, s)
	}
	return out
}

// storeRates installs l's rates and bursts in the scope.
func (s *scope) storeRates(kl, al *bucketParams) {
	s.ratesMu.Lock()
	s.limits.PartitionRate, s.limits.PartitionBurst = kl.rate, kl.burst
	s.limits.AccountRate, s.limits.AccountBurst = al.rate, al.burst
	s.keyLimit.Store(kl)
	s.acctLimit.Store(al)
	s.ratesMu.Unlock()
}

// AccountLimits returns the limits in force for the storage account called account, defaults
// filled in: the service's (Limits) unless SetAccountRates or SetAccountLimitMode changed
// them for the account since.
func (svc *Service) AccountLimits(account string) Limits {
	s := svc.scopeOf(account)
	s.ratesMu.Lock()
	l := s.limits
	s.ratesMu.Unlock()
	l.Mode = LimitMode(s.mode.Load())
	return l
}

// SetAccountLimitMode switches the limit mode of one storage account's tables; every other
// account's stays as it is. Buckets keep their state.
func (svc *Service) SetAccountLimitMode(account string, m LimitMode) {
	svc.scopeOf(account).mode.Store(uint32(m))
}

// SetAccountRates replaces the rates and bursts of one storage account's limits, as SetRates
// does for every account: zero fields take their defaults, and the account's buckets (its
// account bucket and its tables' per-key buckets) start full under the new rates.
func (svc *Service) SetAccountRates(account string, l Limits) {
	kl, al := rateParams(l)
	s := svc.scopeOf(account)
	s.storeRates(kl, al)
	s.bucket.tat.Store(minTime)
	for _, t := range svc.tableList() {
		if t.sc == s {
			t.refillKeys()
		}
	}
}

// AccountFaults returns the fault injection in force for one storage account.
func (svc *Service) AccountFaults(account string) Faults {
	if f := svc.scopeOf(account).faults.Load(); f != nil {
		return f.cfg
	}
	return Faults{}
}

// SetAccountFaults replaces the fault injection of one storage account's operations and
// restarts its sequence of draws; the zero Faults turns it off for the account. Every other
// account's stays as it is.
func (svc *Service) SetAccountFaults(account string, f Faults) {
	svc.scopeOf(account).faults.Store(newFaultState(f))
}

// ResetAccountStats is ResetStats for one storage account: its tables' counters and its
// throttling counts; every other account's stay.
func (svc *Service) ResetAccountStats(account string) {
	s := svc.scopeOf(account)
	s.throttledPartition.Store(0)
	s.throttledAccount.Store(0)
	for _, t := range svc.tableList() {
		if t.sc == s {
			t.resetStats()
		}
	}
}

// AccountReport is Report for one storage account: its tables only, with its limits, its
// throttling counts and histories. Its tables' TableReport.Account is the account.
func (svc *Service) AccountReport(account string) Report {
	return svc.report(svc.scopeOf(account))
}

// DropAccount forgets a storage account: its tables' ranges and statistics, its bucket and
// its settings, as when the account is deleted. An account of the name seen later starts
// afresh, under the service's settings.
func (svc *Service) DropAccount(account string) {
	svc.mu.Lock()
	for k := range svc.tables {
		if k.account == account {
			delete(svc.tables, k)
		}
	}
	delete(svc.scopes, account)
	svc.mu.Unlock()
}

// MustEndPage reports whether a query page of the table that has scanned this many entities
// must end now with a continuation token (the fault injection of the table's account forces
// a continuation). Two loads and a compare: cheap enough to ask per entity.
func (t *Table) MustEndPage(scanned int) bool {
	f := t.sc.faults.Load()
	return f != nil && f.cfg.ContinuationEvery > 0 && scanned >= f.cfg.ContinuationEvery
}
