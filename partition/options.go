package partition

import (
	"math"
	"time"
)

// Options configure a Service. The zero value is ready to use: every zero
// (or negative) field takes the default named in its comment.
type Options struct {
	// Now is the clock. Every rate, window and wait in the package is
	// measured on it, so tests can drive minutes of simulated load in
	// milliseconds with a fake clock. Default time.Now.
	Now func() time.Time

	// Seed seeds the sampling that picks split points. The same seed and the
	// same sequence of calls give the same range layout.
	Seed uint64

	Limits  Limits
	Balance Balance
	Faults  Faults
}

// LimitMode says what the rate limits do.
type LimitMode uint8

const (
	// LimitObserve never refuses but counts every operation Enforce would
	// have refused. The zero value and the default, so that a test suite sees
	// what would have been throttled without being slowed down by it.
	LimitObserve LimitMode = iota
	// LimitEnforce refuses operations over a limit with ServerBusy.
	LimitEnforce
	// LimitOff keeps no buckets and counts nothing; the cheapest mode.
	LimitOff
)

func (m LimitMode) String() string {
	switch m {
	case LimitObserve:
		return "observe"
	case LimitEnforce:
		return "enforce"
	case LimitOff:
		return "off"
	}
	return "mode(?)"
}

// Limits are the service's scalability targets as token buckets. They count
// entities the way the service does: every entity inserted, updated, deleted
// or scanned is one, so a transaction of N actions is N and a query costs the
// entities it scanned, returned or not.
type Limits struct {
	Mode LimitMode

	// PartitionRate is the target per PartitionKey, in entities/s. Default
	// 2,000 ("Performance and scalability checklist for Table storage").
	PartitionRate float64
	// PartitionBurst is the bucket size per PartitionKey, in entities.
	// Default one second's worth of PartitionRate.
	PartitionBurst float64
	// AccountRate is the target of each account, in entities/s: every
	// account (see Service.Table) has a bucket of its own at this
	// rate. Default 20,000 ("Performance and scalability checklist for Table
	// storage").
	AccountRate float64
	// AccountBurst is the size of each account's bucket. Default one
	// second's worth.
	AccountBurst float64

	// MaxKeys bounds the per-PartitionKey buckets tracked per table. Idle
	// buckets are dropped anyway (a full bucket is the same as no bucket);
	// this cap only matters when more distinct keys than this are busy at
	// once, and then one bucket is forgotten (a full one if there is one),
	// forgiving any debt. Default 65,536.
	MaxKeys int
}

// Balance configures the simulated load balancer: range partitions that stay hot split, neighbours
// that stay cold merge. The defaults follow the service's documentation: it waits minutes before
// acting ("a few minutes" in "Design a scalable partitioning strategy for Azure Table storage";
// "5-10 minutes" in "How to get most out of Windows Azure Tables").
type Balance struct {
	// Disabled stops splits and merges. Statistics are still kept, on the
	// single range that then covers each table.
	Disabled bool

	// SplitAbove is the load, in offered entities/s, above which a range is hot. Default 2,000, the
	// per-partition target of "Performance and scalability checklist for Table storage".
	SplitAbove float64
	// SplitAfter is how long a range must stay hot before it splits.
	// Default 5 minutes.
	SplitAfter time.Duration
	// MergeBelow is the load below which a range is cold; two adjacent
	// ranges merge when both are cold and their combined load is below it
	// too, so a merge never creates a hot range. Default 200 entities/s
	// (a tenth of SplitAbove).
	MergeBelow float64
	// MergeAfter is how long both ranges must stay cold before they merge.
	// Default 10 minutes: longer than SplitAfter so layouts do not flap.
	MergeAfter time.Duration

	// Window is the span over which recent load (entities/s) is measured,
	// for ranges and for PartitionKeys. Default 10 seconds.
	Window time.Duration
	// Interval is how often, on the injected clock, the balancer looks at a
	// table. It runs lazily inside the operations of that table, never on a
	// goroutine of its own.
	// Default 1 second.
	Interval time.Duration
	// SampleSize bounds the per-range sample of PartitionKeys used to find
	// the key that halves a range's load. Default 128.
	SampleSize int
	// MaxRanges bounds the range partitions per table. Default 1,024.
	MaxRanges int
}

// Faults configure fault injection. The zero value injects nothing.
// Decisions are drawn from a counter-based generator seeded by Seed, so the
// same seed and the same sequence of calls give the same faults.
type Faults struct {
	Seed uint64
	// ServerBusy and Timeout are the probabilities, per admitted operation
	// of a kind in Kinds, of a ServerBusy and of an OperationTimedOut.
	ServerBusy float64
	Timeout    float64
	// Kinds are the operation kinds the two probabilities apply to. Zero
	// means every kind.
	Kinds KindSet
	// ContinuationEvery forces a query page to end (with a continuation
	// token) after this many scanned entities; see Table.MustEndPage.
	// Zero disables it.
	ContinuationEvery int
	// OfflineOnSplit takes the two halves of a splitting range offline for
	// OfflineFor: operations there get ServerBusy, as they do while the
	// service moves a partition.
	OfflineOnSplit bool
	// OfflineFor defaults to 3 seconds ("Design a scalable partitioning strategy for Azure Table
	// storage": "a few seconds"; "How to get most out of Windows Azure Tables" saw 10-20 seconds in
	// 2010).
	OfflineFor time.Duration
}

// The defaults of the limits and faults, which server's management API and
// cmd/tabula's flags show.
const (
	DefaultPartitionRate = 2000.0
	DefaultAccountRate   = 20000.0
	DefaultOfflineFor    = 3 * time.Second
)

// The other defaults, named so that tests can refer to them.
const (
	defaultMaxKeys    = 1 << 16
	defaultSplitAfter = 5 * time.Minute
	defaultMergeAfter = 10 * time.Minute
	defaultWindow     = 10 * time.Second
	defaultInterval   = time.Second
	defaultSampleSize = 128
	defaultMaxRanges  = 1024
)

// bucketParams is one token bucket's configuration in the units the hot path
// uses: nanoseconds of the generic cell rate algorithm (see gcra.go).
type bucketParams struct {
	rate    float64 // entities/s
	burst   float64 // entities
	nsPer   float64 // ns of bucket time one entity costs
	tau     int64   // burst in ns
	burstN  int64   // whole entities a single admission may need at most
	refill  int64   // ns for an empty bucket to fill up
	enabled bool
}

func newBucketParams(rate, burst float64) bucketParams {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return bucketParams{}
	}
	if !(burst > 0) {
		burst = rate
	}
	burst = max(burst, 1)
	nsPer := 1e9 / rate
	return bucketParams{
		rate:    rate,
		burst:   burst,
		nsPer:   nsPer,
		tau:     int64(burst * nsPer),
		burstN:  int64(burst),
		refill:  int64(burst * nsPer),
		enabled: true,
	}
}

// balanceParams is Balance with defaults applied and durations in ns.
type balanceParams struct {
	disabled   bool
	splitAbove float64
	splitAfter int64
	mergeBelow float64
	mergeAfter int64
	window     int64
	interval   int64
	sampleSize int
	maxRanges  int
}

func (b Balance) params() balanceParams {
	p := balanceParams{
		disabled:   b.Disabled,
		splitAbove: b.SplitAbove,
		splitAfter: int64(b.SplitAfter),
		mergeBelow: b.MergeBelow,
		mergeAfter: int64(b.MergeAfter),
		window:     int64(b.Window),
		interval:   int64(b.Interval),
		sampleSize: b.SampleSize,
		maxRanges:  b.MaxRanges,
	}
	if !(p.splitAbove > 0) {
		p.splitAbove = DefaultPartitionRate
	}
	if p.splitAfter <= 0 {
		p.splitAfter = int64(defaultSplitAfter)
	}
	if !(p.mergeBelow > 0) {
		p.mergeBelow = p.splitAbove / 10
	}
	if p.mergeAfter <= 0 {
		p.mergeAfter = int64(defaultMergeAfter)
	}
	if p.window <= 0 {
		p.window = int64(defaultWindow)
	}
	if p.interval <= 0 {
		p.interval = int64(defaultInterval)
	}
	if p.sampleSize <= 0 {
		p.sampleSize = defaultSampleSize
	}
	if p.maxRanges <= 0 {
		p.maxRanges = defaultMaxRanges
	}
	return p
}
