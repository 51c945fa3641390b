package tabula

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sample values of "Design a scalable partitioning strategy for Azure Table storage".
var seedBackoff = Backoff{Base: 30 * time.Second, Min: 3 * time.Second, Max: 90 * time.Second}

func TestBackoffDelayExactAtTheEndsOfTheJitter(t *testing.T) {
	b := seedBackoff
	// x = 1: 3 s + [24 s, 36 s]
	assert.Equal(t, 27*time.Second, b.Delay(1, 0))
	assert.Equal(t, 39*time.Second, b.Delay(1, 1))
	assert.Equal(t, 33*time.Second, b.Delay(1, 0.5))
	// x = 2: 3 s + 3·[24 s, 36 s] = [75 s, 111 s], capped at 90 s
	assert.Equal(t, 75*time.Second, b.Delay(2, 0))
	assert.Equal(t, 90*time.Second, b.Delay(2, 1))
	// x = 3 and beyond: capped
	assert.Equal(t, 90*time.Second, b.Delay(3, 0))
	assert.Equal(t, 90*time.Second, b.Delay(64, 0))
	assert.Equal(t, 90*time.Second, b.Delay(5000, 1))
	// Out-of-range draws are clamped.
	assert.Equal(t, 27*time.Second, b.Delay(1, -3))
	assert.Equal(t, 39*time.Second, b.Delay(1, 7))

	// Defaults: 100 ms, 10 ms, 5 s.
	d := Backoff{}
	assert.Equal(t, 90*time.Millisecond, d.Delay(1, 0))
	assert.Equal(t, 130*time.Millisecond, d.Delay(1, 1))
	assert.Equal(t, 5*time.Second, d.Delay(10, 0))
	// A negative Min means none.
	assert.Equal(t, 80*time.Millisecond, Backoff{Min: -1}.Delay(1, 0))
}

// seededRand is a deterministic source of draws for Backoff.Rand.
func seededRand(seed uint64) func() float64 { return rand.New(rand.NewPCG(seed, seed)).Float64 }

func TestBackoffDelayWithinBoundsForSeededDraws(t *testing.T) {
	b := seedBackoff
	r := seededRand(99)
	for x := 1; x <= 8; x++ {
		for range 200 {
			d := b.Delay(x, r())
			lo := min(b.Min+time.Duration(0.8*float64(b.Base)*(math.Pow(2, float64(x))-1)), b.Max)
			hi := min(b.Min+time.Duration(1.2*float64(b.Base)*(math.Pow(2, float64(x))-1)), b.Max)
			require.True(t, d >= lo && d <= hi, "x=%d: %v not in [%v, %v]", x, d, lo, hi)
		}
	}
	// The same seed gives the same delays.
	r1, r2 := seededRand(5), seededRand(5)
	for x := 1; x <= 5; x++ {
		assert.Equal(t, b.Delay(x, r1()), b.Delay(x, r2()))
	}
}

// retry is driven here with errors of its own and a predicate for one of them; Retry's
// predicate, IsRetryable, is tested with the service's errors in TestRetry.
var (
	errBusy     = errors.New("ServerBusy")
	errNotFound = errors.New("ResourceNotFound")
)

func isBusy(err error) bool { return errors.Is(err, errBusy) }

func retryAll(error) bool { return true }

// recordSleeps is an injected Sleep that records the delays and never waits.
func recordSleeps(delays *[]time.Duration) func(context.Context, time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		*delays = append(*delays, d)
		return ctx.Err()
	}
}

func TestRetryFollowsTheFormula(t *testing.T) {
	var delays []time.Duration
	calls := 0
	b := seedBackoff
	b.Rand = func() float64 { return 0 }
	b.Sleep = recordSleeps(&delays)
	err := retry(context.Background(), b, func() error {
		calls++
		if calls < 4 {
			return errBusy
		}
		return nil
	}, isBusy)
	require.NoError(t, err)
	assert.Equal(t, 4, calls)
	assert.Equal(t, []time.Duration{27 * time.Second, 75 * time.Second, 90 * time.Second}, delays)
}

func TestRetryGivesUpAfterMaxAttempts(t *testing.T) {
	var delays []time.Duration
	calls := 0
	b := Backoff{MaxAttempts: 3, Rand: func() float64 { return 1 }, Sleep: recordSleeps(&delays)}
	err := retry(context.Background(), b, func() error { calls++; return errBusy }, isBusy)
	assert.Same(t, errBusy, err, "the last error, unchanged")
	assert.Equal(t, 3, calls)
	assert.Equal(t, []time.Duration{130 * time.Millisecond, 370 * time.Millisecond}, delays)

	// Default: six attempts.
	calls, delays = 0, nil
	err = retry(context.Background(), Backoff{Sleep: recordSleeps(&delays)}, func() error { calls++; return errBusy }, retryAll)
	assert.ErrorIs(t, err, errBusy)
	assert.Equal(t, defaultMaxAttempts, calls)
	assert.Len(t, delays, defaultMaxAttempts-1)
}

func TestRetryOnlyRetriesRetryableErrors(t *testing.T) {
	var delays []time.Duration
	calls := 0
	err := retry(context.Background(), Backoff{Sleep: recordSleeps(&delays)}, func() error {
		calls++
		if calls == 1 {
			return errBusy
		}
		return errNotFound
	}, isBusy)
	assert.Same(t, errNotFound, err)
	assert.Equal(t, 2, calls)
	assert.Len(t, delays, 1)
}

func TestRetryStopsWhenTheContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	b := Backoff{Sleep: func(ctx context.Context, d time.Duration) error {
		cancel() // the caller gives up while we wait
		return ctx.Err()
	}}
	err := retry(ctx, b, func() error { calls++; return errBusy }, isBusy)
	assert.Equal(t, 1, calls)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, errBusy, "the last error is kept")

	// Already cancelled: fn is not called.
	calls = 0
	err = retry(ctx, Backoff{}, func() error { calls++; return nil }, isBusy)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, calls)

	// A Sleep that ignores the context is caught after it returns.
	ctx2, cancel2 := context.WithCancel(context.Background())
	calls = 0
	b2 := Backoff{Sleep: func(context.Context, time.Duration) error { cancel2(); return nil }}
	err = retry(ctx2, b2, func() error { calls++; return errBusy }, isBusy)
	assert.Equal(t, 1, calls)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestBackoffSleepContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A cancelled context returns at once even for a long wait.
	assert.ErrorIs(t, sleepContext(ctx, time.Hour), context.Canceled)
	assert.NoError(t, sleepContext(context.Background(), 0))
}
