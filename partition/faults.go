package partition

import "sync/atomic"

// FaultKind is the outcome of an admission: none, or the service error the
// root package must return instead of performing the operation.
type FaultKind uint8

const (
	FaultNone FaultKind = iota
	// FaultServerBusy maps to HTTP 503, code "ServerBusy".
	FaultServerBusy
	// FaultOperationTimedOut maps to HTTP 500, code "OperationTimedOut".
	FaultOperationTimedOut
)

func (f FaultKind) String() string {
	switch f {
	case FaultNone:
		return "none"
	case FaultServerBusy:
		return "ServerBusy"
	case FaultOperationTimedOut:
		return "OperationTimedOut"
	}
	return "fault(?)"
}

// Cause says why a decision is what it is.
type Cause uint8

const (
	CauseNone Cause = iota
	// CausePartitionLimit: the PartitionKey's bucket is empty. In Observe
	// mode the decision is still FaultNone and this records the would-be
	// throttle.
	CausePartitionLimit
	// CauseAccountLimit: the account's bucket is empty (same Observe rule).
	CauseAccountLimit
	// CauseInjected: a random fault drawn by fault injection.
	CauseInjected
	// CauseOffline: the range partition is offline while it splits.
	CauseOffline
)

func (c Cause) String() string {
	switch c {
	case CauseNone:
		return "none"
	case CausePartitionLimit:
		return "partition-limit"
	case CauseAccountLimit:
		return "account-limit"
	case CauseInjected:
		return "injected"
	case CauseOffline:
		return "offline"
	}
	return "cause(?)"
}

// Decision is the answer to an admission (Table.Admit, Service.AdmitTableOp), for the root
// package, which turns a refusal into the service's error: two bytes, returned by value.
type Decision struct {
	Fault FaultKind
	Cause Cause
}

// ok reports whether the operation may proceed.
func (d Decision) ok() bool { return d.Fault == FaultNone }

// Message is the service's error message for the decision ("" when OK).
// The account limit has its own ServerBusy message; every other ServerBusy
// says the server is busy.
func (d Decision) Message() string {
	switch d.Fault {
	case FaultServerBusy:
		if d.Cause == CauseAccountLimit {
			return "Operations per second is over the account limit."
		}
		return "The server is busy."
	case FaultOperationTimedOut:
		return "Operation could not be completed within the specified time."
	}
	return ""
}

// faultState is an immutable Faults configuration plus its draw counter;
// SetFaults swaps in a new one, which restarts the sequence.
type faultState struct {
	cfg        Faults
	kinds      KindSet
	busyBelow  uint64 // a 53-bit draw below this is ServerBusy
	faultBelow uint64 // ... below this (and not busy) is OperationTimedOut
	random     bool   // any random fault configured
	offlineFor int64
	n          atomic.Uint64
}

func newFaultState(f Faults) *faultState {
	busy := clamp01(f.ServerBusy)
	timeout := clamp01(f.Timeout)
	if busy+timeout > 1 {
		timeout = 1 - busy
	}
	s := &faultState{
		cfg:        f,
		kinds:      f.Kinds,
		busyBelow:  uint64(busy * (1 << 53)),
		faultBelow: uint64((busy + timeout) * (1 << 53)),
		random:     busy > 0 || timeout > 0,
		offlineFor: int64(f.OfflineFor),
	}
	if s.kinds&AllKinds == 0 {
		s.kinds = AllKinds
	}
	if s.offlineFor <= 0 {
		s.offlineFor = int64(DefaultOfflineFor)
	}
	if f.ContinuationEvery < 0 {
		s.cfg.ContinuationEvery = 0
	}
	if !s.random && s.cfg.ContinuationEvery == 0 && !f.OfflineOnSplit {
		return nil
	}
	return s
}

func clamp01(p float64) float64 {
	if !(p > 0) {
		return 0
	}
	return min(p, 1)
}

// decide draws the random fault, if any, for one operation of kind k. Draws
// are hash(seed, i) for the i-th call that could fault, so the sequence
// depends only on the seed and the order of calls, and costs one atomic add.
func (s *faultState) decide(k Kind) Decision {
	if !s.random || !s.kinds.Has(k) {
		return Decision{}
	}
	x := splitmix64(s.cfg.Seed+s.n.Add(1)*0x9e3779b97f4a7c15) >> 11
	switch {
	case x < s.busyBelow:
		return Decision{FaultServerBusy, CauseInjected}
	case x < s.faultBelow:
		return Decision{FaultOperationTimedOut, CauseInjected}
	}
	return Decision{}
}

// splitmix64 is the finaliser of the SplitMix64 generator: a bijective mix
// whose outputs for consecutive inputs pass as independent uniform draws.
func splitmix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
