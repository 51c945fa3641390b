package partition

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThrottlingHistory(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Limits: Limits{Mode: LimitEnforce}})
	tb := svc.Table("", "t")
	// Quiet first: a minute within the limit leaves no history.
	offer(clk, tb, 1000, time.Minute, KindInsert, 1, func(int) string { return "hot" })
	rep := svc.Report()
	assert.Nil(t, rep.ThrottledPartitionHistory)
	assert.Nil(t, rep.Tables[0].Ranges[0].ThrottledHistory)

	// Then 30 s at twice the PartitionKey's limit, then a quiet minute.
	_, refused := offer(clk, tb, 4000, 30*time.Second, KindInsert, 1, func(int) string { return "hot" })
	require.Positive(t, refused)
	clk.Advance(time.Minute)
	rep = svc.Report()
	h := rep.ThrottledPartitionHistory
	require.Len(t, h, HistoryLen)
	var sum int64
	for _, n := range h {
		sum += n
	}
	assert.Equal(t, int64(refused), sum, "every refused entity is in the history")
	assert.Equal(t, rep.ThrottledPartition, sum)
	assert.Zero(t, h[HistoryLen-1], "the last minute was quiet")
	assert.Zero(t, h[HistoryLen-6], "so was the interval a minute ago")
	assert.Positive(t, h[HistoryLen-8], "throttling ran 60-90 s ago")
	assert.Nil(t, rep.ThrottledAccountHistory)
	assert.Equal(t, h, rep.Tables[0].Ranges[0].ThrottledHistory, "one range: it holds the account's history")

	// Five minutes later the history has forgotten it.
	clk.Advance(HistoryInterval * HistoryLen)
	rep = svc.Report()
	assert.Nil(t, rep.ThrottledPartitionHistory)
	assert.Nil(t, rep.Tables[0].Ranges[0].ThrottledHistory)
	assert.Equal(t, int64(refused), rep.ThrottledPartition, "the cumulative count stays")
}

func TestThrottlingHistoryAccountLimit(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Limits: Limits{Mode: LimitEnforce, AccountRate: 1000}})
	tb := svc.Table("", "t")
	_, refused := offer(clk, tb, 1500, 10*time.Second, KindInsert, 1, counterKeys(0))
	require.Positive(t, refused)
	rep := svc.Report()
	var sum int64
	for _, n := range rep.ThrottledAccountHistory {
		sum += n
	}
	assert.Equal(t, int64(refused), sum)
	assert.Nil(t, rep.ThrottledPartitionHistory)
}

func TestHistorySplitAndMerge(t *testing.T) {
	now := int64(1_000) * historyNanos
	h := &history{}
	h.add(now, 10)
	h.add(now+historyNanos, 7)
	right := splitHistory(&h, 0.3)
	assert.Equal(t, []int64{3, 2}, h.series(now + historyNanos)[HistoryLen-2:])
	assert.Equal(t, []int64{7, 5}, right.series(now + historyNanos)[HistoryLen-2:])

	// Merging brings both to now first, so slots line up even if one is stale.
	later := now + 3*historyNanos
	right.add(later, 4)
	mergeHistory(&h, right, later)
	assert.Equal(t, []int64{10, 7, 0, 4}, h.series(later)[HistoryLen-4:])

	var none *history
	assert.Nil(t, splitHistory(&none, 0.5))
	mergeHistory(&none, nil, later)
	assert.Nil(t, none)
	assert.Nil(t, none.series(later))

	// A clock before 1970 (negative intervals) still indexes the ring.
	neg := &history{}
	neg.add(-5*historyNanos, 2)
	assert.Equal(t, int64(2), neg.series(-5 * historyNanos)[HistoryLen-1])
}
