package partition

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRangeIndexLookupBoundariesAndOrder(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now})
	tb := svc.Table("", "t")

	_, ok := tb.NextBoundary("anything")
	assert.False(t, ok, "one range covers everything at first")
	require.Len(t, tb.Ranges(), 1)
	assert.Equal(t, RangeInfo{}.Low, tb.Ranges()[0].Low)
	assert.Equal(t, "", tb.Ranges()[0].High)

	for _, k := range []string{"m", "c", "x", "\uFFFD", "\U0001F600"} {
		require.True(t, tb.SplitAt(k))
	}
	assert.False(t, tb.SplitAt("m"), "a range already starts at m")
	assert.Equal(t, 6, tb.rangeCount())

	// In the service's order the supplementary character comes before U+FFFD.
	var lows []string
	for _, r := range tb.Ranges() {
		lows = append(lows, r.Low)
	}
	assert.Equal(t, []string{"", "c", "m", "x", "\U0001F600", "\uFFFD"}, lows)
	rs := tb.Ranges()
	for i := 0; i+1 < len(rs); i++ {
		assert.Equal(t, rs[i+1].Low, rs[i].High)
	}
	assert.Equal(t, "", rs[len(rs)-1].High)

	for pk, want := range map[string]string{
		"": "c", "a": "c", "c": "m", "cz": "m", "m": "x", "zzz": "\U0001F600",
		"\U0001F600": "\uFFFD", "\U0001F601": "\uFFFD",
	} {
		got, ok := tb.NextBoundary(pk)
		assert.True(t, ok, pk)
		assert.Equal(t, want, got, "next boundary after %q", pk)
	}
	_, ok = tb.NextBoundary("\uFFFD")
	assert.False(t, ok)
	_, ok = tb.NextBoundary("\uFFFF")
	assert.False(t, ok)

	// Statistics land in the range that holds the key.
	tb.RecordWrite("a", 1, 100)
	tb.RecordWrite("cat", 2, 300)
	tb.RecordWrite("\U0001F600x", 1, 50)
	tb.RecordWrite("\uFFFF", 1, 10)
	rs = tb.Ranges()
	assert.Equal(t, []int64{1, 2, 0, 0, 1, 1}, []int64{rs[0].Entities, rs[1].Entities, rs[2].Entities, rs[3].Entities, rs[4].Entities, rs[5].Entities})
	assert.Equal(t, int64(300), rs[1].Bytes)
}

// The append-only pattern ("Design a scalable partitioning strategy for Azure Table storage",
// "Range partitions"; "How to get most out of Windows Azure Tables", "Stay away from append only"):
// increasing keys always land in the last range, which gets hot, splits, and is hot again because
// every new key is beyond the split.
func TestAppendOnlyKeepsHittingTheLastRange(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Seed: 1}) // default balancing: 2,000/s for 5 min
	tb := svc.Table("", "log")

	// 3,000 entities/s as batches of 100, each under a new, larger key.
	next := 0
	key := func(i int) string { return counterKeys(0)(next + i) }
	var lens []int
	for range 4 {
		offer(clk, tb, 30, 6*time.Minute, KindBatch, 100, key)
		next += 30 * 6 * 60
		lens = append(lens, tb.rangeCount())
	}

	rep := svc.Report()
	tr := rep.Tables[0]
	assert.GreaterOrEqual(t, tr.Splits, int64(3), "the last range splits again and again; lens %v", lens)
	rs := tr.Ranges
	last := rs[len(rs)-1]
	assert.InDelta(t, 3000, last.Rate, 300, "all load is on the last range")
	for _, r := range rs[:len(rs)-1] {
		assert.Less(t, r.Rate, 1.0, "ranges behind the tail get nothing: %+v", r)
	}
	// Every split moved the tail: the last range always starts at a key
	// written after the previous split.
	assert.Greater(t, last.Low, counterKeys(0)(30*60*5))
	t.Log("\n" + rep.String())
}

// Random GUID keys spread over the key space: after a few splits the load is
// shared by several ranges, each below the threshold, and splitting stops.
func TestRandomKeysSpreadAcrossRangesAfterSplits(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Seed: 2})
	tb := svc.Table("", "guids")
	key := guidKeys(3)

	offer(clk, tb, 60, 20*time.Minute, KindBatch, 100, func(int) string { return key(0) }) // 6,000 entities/s
	splits := svc.Report().Tables[0].Splits
	offer(clk, tb, 60, 6*time.Minute, KindBatch, 100, func(int) string { return key(0) })

	rep := svc.Report()
	tr := rep.Tables[0]
	require.GreaterOrEqual(t, len(tr.Ranges), 4)
	assert.Equal(t, splits, tr.Splits, "no range is hot any more, so splitting has stopped")
	for _, r := range tr.Ranges {
		assert.Less(t, r.Rate, 2000.0, "every range is below the split threshold: %+v", r)
		assert.Less(t, r.Rate/tr.Rate, 0.4, "no range carries most of the load: %+v", r)
	}
	assert.InDelta(t, 6000, tr.Rate, 300)
	t.Log("\n" + rep.String())
}

// A single hot PartitionKey cannot be split ("Performance and scalability checklist for Table
// storage": a hot partition "cannot be load balanced because it is a single partition").
func TestSingleHotKeyDoesNotSplit(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now})
	tb := svc.Table("", "t")
	offer(clk, tb, 30, 12*time.Minute, KindBatch, 100, func(int) string { return "hot" })
	assert.Equal(t, 1, tb.rangeCount())
}

func TestColdNeighboursMergeAfterConfiguredTime(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Balance: Balance{MergeAfter: 2 * time.Minute}})
	tb := svc.Table("", "t")
	for _, k := range []string{"b", "c", "d"} {
		require.True(t, tb.SplitAt(k))
	}
	// [, b) stays warm at 1,000 entities/s; the three ranges after it idle.
	warm := func(d time.Duration) {
		offer(clk, tb, 10, d, KindBatch, 100, func(int) string { return "a" })
	}
	warm(90 * time.Second)
	assert.Equal(t, 4, tb.rangeCount(), "not cold for long enough yet")
	warm(60 * time.Second)
	assert.Equal(t, 2, tb.rangeCount(), "the cold neighbours merged; the warm range stayed")
	rs := tb.Ranges()
	assert.Equal(t, "b", rs[1].Low)
	assert.Equal(t, "", rs[1].High)
	assert.Equal(t, int64(2), svc.Report().Tables[0].Merges)

	// Once it goes quiet too, the warm range merges as well, even if no
	// operation or balancing pass happens while it is quiet.
	clk.Advance(3 * time.Minute)
	svc.balanceNow()
	assert.Equal(t, 1, tb.rangeCount())
}

func TestMergeNeedsCombinedLoadBelowThreshold(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Balance: Balance{MergeAfter: time.Minute}})
	tb := svc.Table("", "t")
	require.True(t, tb.SplitAt("m"))
	// 150 entities/s on each side: each is cold (< 200) but together they
	// are not, so they stay apart.
	keys := []string{"a", "n"}
	offer(clk, tb, 30, 5*time.Minute, KindInsert, 10, func(i int) string { return keys[i%2] })
	assert.Equal(t, 2, tb.rangeCount())
}

func TestRangeMemoryStaysBounded(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Balance: Balance{SampleSize: 16}})
	tb := svc.Table("", "t")
	key := guidKeys(9)
	for range 20000 {
		k := key(0)
		tb.Admit(k, KindInsert, 1)
		tb.RecordWrite(k, 1, 100)
		clk.Advance(time.Millisecond)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.tree.Ascend(func(r *rangePart) bool {
		assert.LessOrEqual(t, len(r.loadCur.items), 16)
		assert.LessOrEqual(t, len(r.loadPrev.items), 16)
		assert.LessOrEqual(t, len(r.store.items), 8)
		return true
	})
}

// Splits estimate how stored data divides, but the table's totals stay
// exact, and later writes are counted exactly where they land.
func TestEntityTotalsStayExactAcrossSplitsAndMerges(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Balance: Balance{MergeAfter: time.Minute}})
	tb := svc.Table("", "t")
	keys := counterKeys(0)
	for i := range 1000 {
		tb.RecordWrite(keys(i), 1, 1000)
	}
	require.True(t, tb.SplitAt(keys(250)))
	require.True(t, tb.SplitAt(keys(500)))
	rs := tb.Ranges()
	var e, b int64
	for _, r := range rs {
		e += r.Entities
		b += r.Bytes
	}
	assert.Equal(t, int64(1000), e)
	assert.Equal(t, int64(1000*1000), b)
	assert.InDelta(t, 250, rs[0].Entities, 120, "estimated from the sample of inserted keys")
	assert.InDelta(t, 500, rs[2].Entities, 150)

	clk.Advance(5 * time.Minute)
	svc.balanceNow()
	require.Equal(t, 1, tb.rangeCount())
	assert.Equal(t, int64(1000), tb.Ranges()[0].Entities)
	assert.Equal(t, int64(1000*1000), tb.Ranges()[0].Bytes)
}

func TestBalancingDisabledKeepsOneRange(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Balance: Balance{Disabled: true}})
	tb := svc.Table("", "t")
	offer(clk, tb, 30, 12*time.Minute, KindBatch, 100, counterKeys(0))
	assert.Equal(t, 1, tb.rangeCount())
	assert.InDelta(t, 3000, tb.Ranges()[0].Rate, 100)
}

func TestRateCounterSteadyAndDecay(t *testing.T) {
	var c rateCounter
	w := int64(10 * time.Second)
	now := int64(1_000_000 * time.Second)
	for range 30_000 { // 1,000/s for 30 s
		c.add(now, w, 1)
		now += int64(time.Millisecond)
	}
	assert.InDelta(t, 1000, c.rate(now, w), 1)
	assert.InDelta(t, 0, c.rate(now+2*w, w), 1e-9)
	back := c.rate(now-5*w, w) // a clock going back reads the current slot
	assert.True(t, back >= 0 && back <= 2000, "%v", back)
}
