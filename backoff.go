package tabula

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is the exponential backoff of "Design a scalable partitioning strategy for Azure Table
// storage" (its "Retry strategy"), the policy Retry waits by. The delay before retry x (x = 1
// for the first retry) is
//
//	y = Rand(0.8·Base, 1.2·Base) · (2^x − 1)
//	delay = min(Min + y, Max)
//
// Its sample values are Base (z) = 30 s, Min (zmin) = 3 s and Max (zmax) = 90 s: tuned for a
// remote service that takes seconds to move a partition. Against a local engine those would
// stall a test suite for minutes, so the defaults keep the seed's shape at a local scale: Base
// 100 ms, Min 10 ms, Max 5 s, and 6 attempts in all, whose five waits add up to 4.6–6.9 s,
// enough to outlast a partition taken offline for the default 3 s (partition.DefaultOfflineFor).
// To use the seed's values, set them.
//
// Zero fields take the defaults; set Min to a negative value for no minimum. The zero Backoff
// is a sensible policy for a local engine.
type Backoff struct {
	Base, Min, Max time.Duration
	// MaxAttempts counts every call of fn, the first one included.
	MaxAttempts int
	// Rand returns numbers in [0, 1] that place each delay between 0.8 and 1.2 times Base.
	// Default: math/rand/v2's global source, which is safe for concurrent use and seeded at
	// random (so that clients retrying together spread out, the point of the jitter). For
	// deterministic delays pass a function of your own; a function shared by goroutines must
	// be safe for concurrent use.
	Rand func() float64
	// Sleep waits for d or until ctx is done, returning ctx.Err() in the latter case.
	// Default: a real timer; tests inject a fake.
	Sleep func(ctx context.Context, d time.Duration) error
}

// The defaults of a Backoff's zero fields.
const (
	defaultBackoffBase = 100 * time.Millisecond
	defaultBackoffMin  = 10 * time.Millisecond
	defaultBackoffMax  = 5 * time.Second
	defaultMaxAttempts = 6
)

// withDefaults fills in zero fields.
func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = defaultBackoffBase
	}
	switch {
	case b.Min == 0:
		b.Min = defaultBackoffMin
	case b.Min < 0:
		b.Min = 0
	}
	if b.Max <= 0 {
		b.Max = defaultBackoffMax
	}
	if b.MaxAttempts <= 0 {
		b.MaxAttempts = defaultMaxAttempts
	}
	if b.Rand == nil {
		b.Rand = rand.Float64
	}
	if b.Sleep == nil {
		b.Sleep = sleepContext
	}
	return b
}

// Delay returns the wait before retry x (x >= 1) for a random draw u in [0, 1] (clamped):
// u = 0 gives the shortest delay, 0.8·Base·(2^x−1) + Min, and u = 1 the longest,
// 1.2·Base·(2^x−1) + Min, both capped at Max.
func (b Backoff) Delay(x int, u float64) time.Duration {
	b = b.withDefaults()
	if math.IsNaN(u) {
		u = 0.5
	}
	u = min(max(u, 0), 1)
	z := float64(b.Base)
	y := (0.8*z + 0.4*z*u) * (math.Pow(2, float64(max(x, 0))) - 1)
	d := min(float64(b.Min)+y, float64(b.Max))
	return time.Duration(d)
}

// retry calls fn until it succeeds, returns an error retryable rejects, or MaxAttempts calls
// have been made, waiting Delay(x, Rand()) before retry x with the policy's Sleep. It returns
// nil, or fn's last error unchanged, or, when ctx is done before or while waiting, an error
// that wraps both ctx.Err() and fn's last error (errors.Is finds either).
func retry(ctx context.Context, policy Backoff, fn func() error, retryable func(error) bool) error {
	p := policy.withDefaults()
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	for attempt := 1; ; attempt++ {
		if err = fn(); err == nil {
			return nil
		}
		if !retryable(err) || attempt >= p.MaxAttempts {
			return err
		}
		if serr := p.Sleep(ctx, p.Delay(attempt, p.Rand())); serr != nil {
			return retryStopped(ctx, serr, err)
		}
		if cerr := ctx.Err(); cerr != nil {
			return retryStopped(ctx, cerr, err)
		}
	}
}

func retryStopped(ctx context.Context, why, last error) error {
	if cerr := ctx.Err(); cerr != nil {
		why = cerr
	}
	return fmt.Errorf("tabula: retry stopped: %w (last error: %w)", why, last)
}

// sleepContext waits for d on a real timer, or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
