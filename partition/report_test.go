package partition

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeatReport(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now})
	events := svc.Table("", "events")
	users := svc.Table("", "users")
	require.True(t, events.SplitAt("m"))
	for i := range 50 {
		events.RecordWrite(counterKeys(0)(i), 1, 1024)
	}
	users.RecordWrite("u\n1", 1, 300)
	offer(clk, events, 3000, 20*time.Second, KindInsert, 1, func(int) string { return "hot" })
	offer(clk, users, 100, 5*time.Second, KindGet, 1, func(i int) string { return "cold" })

	rep := svc.Report()
	require.Len(t, rep.Tables, 2)
	assert.Equal(t, "events", rep.Tables[0].Name, "tables in key order")
	ev := rep.Tables[0]
	assert.Equal(t, int64(50), ev.Entities)
	assert.Equal(t, int64(50*1024), ev.Bytes)
	assert.Equal(t, int64(60000), ev.Offered)
	assert.Equal(t, int64(1), ev.Splits)
	assert.Len(t, ev.Ranges, 2)
	require.Len(t, ev.HotKeys, 1, "only the key near its limit is hot")
	assert.Equal(t, "hot", ev.HotKeys[0].PartitionKey)
	assert.Positive(t, ev.HotKeys[0].Throttled)
	assert.Equal(t, rep.ThrottledPartition, ev.Throttled)
	assert.Empty(t, rep.Tables[1].HotKeys)
	assert.Equal(t, rep.Entities, int64(51))
	assert.InDelta(t, rep.Tables[0].Rate+rep.Tables[1].Rate, rep.Rate, 1e-9)

	text := rep.String()
	t.Log("\n" + text)
	for _, want := range []string{
		"limits: observe, 2000/s per PartitionKey, 20000/s per account",
		`table "events": 2 range partitions, 50 entities, 50.0 KiB`,
		"(start)", `"m"`, "(end)", "hot partition keys:", `"hot"`,
		`table "users"`, "300 B",
	} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "u\n1", "keys are quoted so a newline cannot break the table")

	// Every row of a range table has the same width.
	var widths []int
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "     0  ") || strings.HasPrefix(line, "     1  ") || strings.HasPrefix(line, "     #  ") {
			widths = append(widths, len(line))
		}
	}
	require.NotEmpty(t, widths)
	for _, w := range widths {
		assert.Equal(t, widths[0], w)
	}

	var sb strings.Builder
	n, err := rep.WriteTo(&sb)
	require.NoError(t, err)
	assert.Equal(t, int64(len(text)), n)
	assert.Equal(t, text, sb.String())
}

func TestQuoteKeyTruncates(t *testing.T) {
	assert.Equal(t, `"abc"`, quoteKey("abc"))
	long := quoteKey(strings.Repeat("x", 100))
	assert.Len(t, long, keyWidth)
	assert.True(t, strings.HasSuffix(long, "..."))
	assert.Equal(t, `"\U0001f600"`, quoteKey("\U0001F600"))
	assert.Equal(t, "1.5 KiB", size(1536))
	assert.Equal(t, "3.0 GiB", size(3<<30))
}

func TestResetStats(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Limits: Limits{Mode: LimitEnforce}})
	tb := svc.Table("", "t")
	tb.RecordWrite("a", 10, 1000)
	require.True(t, tb.SplitAt("m"))
	offer(clk, tb, 3000, 10*time.Second, KindInsert, 1, func(int) string { return "hot" })
	before := svc.Report()
	require.Positive(t, before.ThrottledPartition)

	svc.ResetStats()
	rep := svc.Report()
	tr := rep.Tables[0]
	assert.Zero(t, rep.ThrottledPartition)
	assert.Zero(t, rep.Offered)
	assert.Zero(t, tr.Splits)
	assert.InDelta(t, 3000, rep.Rate, 1, "recent rates are not counters: they stay")
	require.Len(t, tr.HotKeys, 1, "still hot by its rate")
	assert.Zero(t, tr.HotKeys[0].Throttled)
	assert.Zero(t, tr.HotKeys[0].Offered)
	for _, r := range tr.Ranges {
		assert.Zero(t, r.Throttled)
		assert.Zero(t, r.Splits)
	}
	// Data and layout stay, and so do the buckets: "hot" is still empty.
	assert.Equal(t, int64(10), tr.Entities)
	assert.Len(t, tr.Ranges, 2)
	assert.False(t, tb.Admit("hot", KindInsert, 1).ok())

	svc.DropTable("", "t")
	assert.Empty(t, svc.Report().Tables)
	assert.NotSame(t, tb, svc.Table("", "t"), "a re-created table starts afresh")
}

// The reports say "1 range partition" and "2 entities", never "1 range partitions".
func TestCounted(t *testing.T) {
	for _, c := range []struct {
		n    int
		one  string
		want string
	}{
		{0, "entity", "0 entities"},
		{1, "entity", "1 entity"},
		{2, "entity", "2 entities"},
		{1, "range partition", "1 range partition"},
		{3, "range partition", "3 range partitions"},
		{1, "split", "1 split"},
	} {
		assert.Equal(t, c.want, counted(c.n, c.one))
	}
}
