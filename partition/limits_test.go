package partition

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The stress test of "Design a scalable partitioning strategy for Azure Table storage": one
// PartitionKey offered 3,000 entities/s for a simulated minute against its 2,000 entities/s target.
func TestHotKeyLimitPerMode(t *testing.T) {
	run := func(mode LimitMode) (admitted, refused int, rep Report) {
		clk := newFakeClock()
		svc := NewService(&Options{Now: clk.Now, Limits: Limits{Mode: mode}})
		tb := svc.Table("", "t")
		admitted, refused = offer(clk, tb, 3000, time.Minute, KindInsert, 1, func(int) string { return "hot" })
		return admitted, refused, svc.Report()
	}

	t.Run("enforce", func(t *testing.T) {
		admitted, refused, rep := run(LimitEnforce)
		perSec := float64(admitted) / 60
		assert.True(t, perSec > 1980 && perSec < 2060, "admitted %.1f/s", perSec) // 2,000/s plus the initial burst
		assert.Equal(t, 180000, admitted+refused)
		assert.Equal(t, int64(refused), rep.ThrottledPartition)
		assert.Zero(t, rep.ThrottledAccount)
		require.Len(t, rep.Tables[0].HotKeys, 1)
		hk := rep.Tables[0].HotKeys[0]
		assert.Equal(t, "hot", hk.PartitionKey)
		assert.Equal(t, int64(refused), hk.Throttled)
		assert.InDelta(t, 3000, hk.Rate, 30, "the key's offered rate")
		assert.Equal(t, int64(refused), rep.Tables[0].Ranges[0].Throttled)
	})
	t.Run("observe", func(t *testing.T) {
		admitted, refused, rep := run(LimitObserve)
		assert.Equal(t, 180000, admitted, "observing never refuses")
		assert.Zero(t, refused)
		perSec := float64(rep.ThrottledPartition) / 60
		assert.True(t, perSec > 940 && perSec < 1020, "would-be throttles %.1f/s", perSec)
		assert.Equal(t, rep.ThrottledPartition, rep.Tables[0].HotKeys[0].Throttled)
	})
	t.Run("off", func(t *testing.T) {
		admitted, refused, rep := run(LimitOff)
		assert.Equal(t, 180000, admitted)
		assert.Zero(t, refused)
		assert.Zero(t, rep.ThrottledPartition)
		assert.Zero(t, rep.ThrottledAccount)
		assert.Zero(t, rep.Tables[0].Throttled)
		assert.Empty(t, rep.Tables[0].HotKeys)
		assert.InDelta(t, 3000, rep.Tables[0].Rate, 30, "range statistics are kept in every mode")
	})
}

func TestAccountLimitWithManyKeys(t *testing.T) {
	for _, mode := range []LimitMode{LimitEnforce, LimitObserve} {
		t.Run(mode.String(), func(t *testing.T) {
			clk := newFakeClock()
			svc := NewService(&Options{Now: clk.Now, Limits: Limits{Mode: mode}})
			tb := svc.Table("", "t")
			var last Decision
			// 200 keys at 150 entities/s each: 30,000/s against 20,000/s.
			step := time.Second / 3000
			admitted := 0
			for i := range 3000 * 30 {
				d := tb.Admit(fmt.Sprintf("k%03d", i%200), KindBatch, 10)
				if d.ok() {
					admitted += 10
				}
				if d.Cause != CauseNone {
					last = d
				}
				clk.Advance(step)
			}
			rep := svc.Report()
			assert.Zero(t, rep.ThrottledPartition, "no key is over its own limit")
			assert.Equal(t, CauseAccountLimit, last.Cause)
			if mode == LimitEnforce {
				perSec := float64(admitted) / 30
				assert.True(t, perSec > 19800 && perSec < 20800, "admitted %.1f/s", perSec)
				assert.Equal(t, FaultServerBusy, last.Fault)
				assert.Equal(t, "Operations per second is over the account limit.", last.Message())
				assert.Equal(t, int64(900000-admitted), rep.ThrottledAccount)
			} else {
				assert.Equal(t, 900000, admitted)
				assert.Equal(t, FaultNone, last.Fault)
				perSec := float64(rep.ThrottledAccount) / 30
				assert.True(t, perSec > 9200 && perSec < 10200, "would-be throttles %.1f/s", perSec)
			}
		})
	}
}

// A query is admitted with a zero-cost check, then charged what it scanned;
// the bucket goes into debt and the next operations pay for it.
func TestQueryChargedAfterTheFactGoesIntoDebt(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Limits: Limits{Mode: LimitEnforce}})
	tb := svc.Table("", "t")

	require.True(t, tb.Admit("p", KindQuery, 0).ok())
	tb.Charge("p", 5000) // burst is 2,000: 3,000 in debt, 1.5 s to repay
	d := tb.Admit("p", KindQuery, 0)
	assert.Equal(t, Decision{FaultServerBusy, CausePartitionLimit}, d)
	assert.Equal(t, "The server is busy.", d.Message())
	assert.True(t, tb.Admit("other", KindGet, 1).ok(), "other keys have their own bucket")

	clk.Advance(1400 * time.Millisecond)
	assert.False(t, tb.Admit("p", KindGet, 1).ok(), "still in debt")
	clk.Advance(200 * time.Millisecond)
	assert.True(t, tb.Admit("p", KindGet, 1).ok())

	// Charges reach the account bucket too.
	svc2 := NewService(&Options{Now: clk.Now, Limits: Limits{Mode: LimitEnforce, AccountRate: 1000}})
	tb2 := svc2.Table("", "t")
	tb2.Charge("a", 3000)
	assert.Equal(t, CauseAccountLimit, tb2.Admit("b", KindGet, 1).Cause)
	assert.Equal(t, int64(3001), svc2.Report().Offered, "offered load counts refused operations too")
}

func TestBucketRules(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Limits: Limits{Mode: LimitEnforce, PartitionRate: 100, PartitionBurst: 10}})
	tb := svc.Table("", "t")
	// A batch larger than the burst is admitted from a full bucket...
	assert.True(t, tb.Admit("p", KindBatch, 50).ok())
	// ... and leaves it 40 in debt: 0.4 s to repay, then one token more.
	clk.Advance(400 * time.Millisecond)
	assert.False(t, tb.Admit("p", KindInsert, 1).ok())
	clk.Advance(10 * time.Millisecond)
	assert.True(t, tb.Admit("p", KindInsert, 1).ok())
	// A refused operation costs nothing: the bucket refills as if it had not come.
	clk.Advance(time.Second)
	for range 10 {
		require.True(t, tb.Admit("p", KindInsert, 1).ok())
	}
	assert.False(t, tb.Admit("p", KindInsert, 1).ok())
	clk.Advance(10 * time.Millisecond)
	assert.True(t, tb.Admit("p", KindInsert, 1).ok())

	// An infinite rate disables a limit.
	svc = NewService(&Options{Now: clk.Now, Limits: Limits{Mode: LimitEnforce, PartitionRate: math.Inf(1)}})
	tb = svc.Table("", "t")
	for range 10000 {
		require.True(t, tb.Admit("p", KindInsert, 1).ok())
	}
	assert.Equal(t, "unlimited", num(svc.Report().PartitionRate))
}

func TestSwitchingModesKeepsBuckets(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now})
	assert.Equal(t, LimitObserve, svc.limitMode(), "observe is the default")
	tb := svc.Table("", "t")
	assert.True(t, tb.Admit("p", KindBatch, 2000).ok())
	svc.SetLimitMode(LimitEnforce)
	assert.False(t, tb.Admit("p", KindInsert, 1).ok())
	svc.SetLimitMode(LimitOff)
	assert.True(t, tb.Admit("p", KindInsert, 1).ok())
	assert.Equal(t, LimitOff, svc.Limits().Mode)
	assert.Equal(t, 2000.0, svc.Limits().PartitionBurst)
}

func TestIdleBucketsAreDropped(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now})
	tb := svc.Table("", "t")
	key := guidKeys(5)
	// 100,000 distinct keys, one every millisecond: only those of the last
	// second or two are worth a bucket.
	for range 100000 {
		tb.Admit(key(0), KindInsert, 1)
		clk.Advance(time.Millisecond)
	}
	assert.LessOrEqual(t, tb.trackedKeys(), 2100)
	assert.Greater(t, tb.trackedKeys(), 900)
}

func TestTrackedKeysCappedWhenTheClockStands(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Limits: Limits{MaxKeys: 1024}})
	tb := svc.Table("", "t")
	for i := range 10000 {
		tb.Admit(fmt.Sprint(i), KindInsert, 1)
	}
	assert.LessOrEqual(t, tb.trackedKeys(), 1024)
}

func TestThrottledKeysOutliveTheirBuckets(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Limits: Limits{Mode: LimitEnforce}})
	tb := svc.Table("", "t")
	_, refused := offer(clk, tb, 3000, 5*time.Second, KindInsert, 1, func(int) string { return "hot" })
	require.Positive(t, refused)
	// Other traffic long after: the hot key's bucket is swept away.
	clk.Advance(time.Minute)
	for i := range 1000 {
		tb.Admit(fmt.Sprint(i), KindInsert, 1)
		clk.Advance(time.Millisecond)
	}
	hk := svc.Report().Tables[0].HotKeys
	require.NotEmpty(t, hk)
	assert.Equal(t, "hot", hk[0].PartitionKey)
	assert.Equal(t, int64(refused), hk[0].Throttled)
	assert.Zero(t, hk[0].Rate)
}

// SetRates changes the limits of a running account: the new rates hold at once, every bucket
// starts full under them, and the report and Limits say what is in force.
func TestSetRatesWhileRunning(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Limits: Limits{Mode: LimitEnforce}})
	tb := svc.Table("", "t")

	svc.SetRates(Limits{PartitionRate: 1, AccountRate: 1000})
	assert.True(t, tb.Admit("k", KindInsert, 1).ok(), "a full bucket of one")
	d := tb.Admit("k", KindInsert, 1)
	assert.Equal(t, Decision{FaultServerBusy, CausePartitionLimit}, d, "one entity/s, and the second came at once")

	svc.SetRates(Limits{PartitionRate: 1000, AccountRate: 2})
	assert.True(t, tb.Admit("k", KindInsert, 1).ok(), "the key's debt is forgiven under the new rates")
	assert.True(t, tb.Admit("other", KindInsert, 1).ok())
	d = tb.Admit("third", KindInsert, 1)
	assert.Equal(t, Decision{FaultServerBusy, CauseAccountLimit}, d, "two entities/s for the account")

	l := svc.Limits()
	assert.Equal(t, Limits{Mode: LimitEnforce, PartitionRate: 1000, PartitionBurst: 1000, AccountRate: 2, AccountBurst: 2, MaxKeys: defaultMaxKeys}, l)
	rep := svc.Report()
	assert.Equal(t, 1000.0, rep.PartitionRate)
	assert.Equal(t, 2.0, rep.AccountRate)

	svc.SetRates(Limits{})
	l = svc.Limits()
	assert.Equal(t, DefaultPartitionRate, l.PartitionRate, "zero takes the default")
	assert.Equal(t, DefaultAccountRate, l.AccountBurst, "a second's worth")
}
