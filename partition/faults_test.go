package partition

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func drawFaults(svc *Service, n int, kind Kind) []Decision {
	tb := svc.Table("", "t")
	out := make([]Decision, n)
	for i := range out {
		out[i] = tb.Admit("p", kind, 1)
	}
	return out
}

func TestFaultsAreOffByDefault(t *testing.T) {
	svc := NewService(&Options{Now: newFakeClock().Now})
	for _, d := range drawFaults(svc, 1000, KindInsert) {
		assert.True(t, d.ok())
	}
	assert.False(t, svc.Table("", "pages").MustEndPage(1_000_000))
	assert.True(t, svc.AdmitTableOp("", KindCreateTable).ok())
	assert.Equal(t, Faults{}, svc.Faults())
}

func TestFaultInjectionIsDeterministic(t *testing.T) {
	cfg := Faults{Seed: 42, ServerBusy: 0.1, Timeout: 0.05}
	newSvc := func(f Faults) *Service {
		return NewService(&Options{Now: newFakeClock().Now, Limits: Limits{Mode: LimitOff}, Faults: f})
	}
	a := drawFaults(newSvc(cfg), 2000, KindInsert)
	b := drawFaults(newSvc(cfg), 2000, KindInsert)
	assert.Equal(t, a, b, "same seed, same calls, same faults")

	other := cfg
	other.Seed = 43
	assert.NotEqual(t, a, drawFaults(newSvc(other), 2000, KindInsert), "another seed, other faults")

	// SetFaults restarts the sequence.
	svc := newSvc(Faults{})
	svc.SetFaults(cfg)
	assert.Equal(t, a[:100], drawFaults(svc, 100, KindInsert))
	svc.SetFaults(cfg)
	assert.Equal(t, a[:100], drawFaults(svc, 100, KindInsert))
}

func TestFaultRatesMatchProbabilities(t *testing.T) {
	svc := NewService(&Options{Now: newFakeClock().Now, Limits: Limits{Mode: LimitOff},
		Faults: Faults{Seed: 7, ServerBusy: 0.1, Timeout: 0.05}})
	const n = 100_000
	var busy, timeout int
	for _, d := range drawFaults(svc, n, KindGet) {
		switch d.Fault {
		case FaultServerBusy:
			busy++
			assert.Equal(t, CauseInjected, d.Cause)
			assert.Equal(t, "The server is busy.", d.Message())
		case FaultOperationTimedOut:
			timeout++
			assert.Equal(t, "Operation could not be completed within the specified time.", d.Message())
		}
	}
	// Binomial standard deviations are about 95 and 69.
	assert.InDelta(t, 0.10*n, busy, 500)
	assert.InDelta(t, 0.05*n, timeout, 400)
}

func TestFaultsOnChosenKindsOnly(t *testing.T) {
	svc := NewService(&Options{Now: newFakeClock().Now, Limits: Limits{Mode: LimitOff},
		Faults: Faults{Seed: 1, ServerBusy: 1, Kinds: Kinds(KindInsert, KindBatch)}})
	tb := svc.Table("", "t")
	assert.Equal(t, FaultServerBusy, tb.Admit("p", KindInsert, 1).Fault)
	assert.Equal(t, FaultServerBusy, tb.Admit("p", KindBatch, 10).Fault)
	assert.True(t, tb.Admit("p", KindGet, 1).ok())
	assert.True(t, tb.Admit("p", KindQuery, 0).ok())
	assert.True(t, svc.AdmitTableOp("", KindCreateTable).ok())
	assert.Equal(t, "insert,batch", svc.Faults().Kinds.String())

	svc.SetFaults(Faults{Timeout: 1, Kinds: Kinds(KindQueryTables)})
	assert.Equal(t, FaultOperationTimedOut, svc.AdmitTableOp("", KindQueryTables).Fault)
	assert.True(t, tb.Admit("p", KindInsert, 1).ok())
}

func TestInjectedFaultsChargeNothing(t *testing.T) {
	svc := NewService(&Options{Now: newFakeClock().Now, Faults: Faults{ServerBusy: 1}})
	tb := svc.Table("", "t")
	for range 5000 {
		require.False(t, tb.Admit("p", KindInsert, 1).ok())
	}
	rep := svc.Report()
	assert.Zero(t, rep.Offered)
	assert.Zero(t, rep.ThrottledPartition)
}

func TestForcedContinuation(t *testing.T) {
	svc := NewService(&Options{Faults: Faults{ContinuationEvery: 3}})
	pages := svc.Table("", "pages")
	assert.False(t, pages.MustEndPage(0))
	assert.False(t, pages.MustEndPage(2))
	assert.True(t, pages.MustEndPage(3))
	assert.True(t, pages.MustEndPage(4))
	svc.SetFaults(Faults{})
	assert.False(t, pages.MustEndPage(3))
}

func TestRangeOfflineDuringSplit(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Faults: Faults{OfflineOnSplit: true, OfflineFor: 10 * time.Second}})
	tb := svc.Table("", "t")
	require.True(t, tb.Admit("a", KindInsert, 1).ok())
	require.True(t, tb.SplitAt("m"))
	for _, k := range []string{"a", "z"} {
		d := tb.Admit(k, KindInsert, 1)
		assert.Equal(t, Decision{FaultServerBusy, CauseOffline}, d, k)
		assert.Equal(t, "The server is busy.", d.Message())
	}
	assert.True(t, tb.Ranges()[0].Offline)
	clk.Advance(10 * time.Second)
	assert.True(t, tb.Admit("a", KindInsert, 1).ok())
	assert.True(t, tb.Admit("z", KindInsert, 1).ok())
	assert.False(t, tb.Ranges()[1].Offline)

	// Refused while offline, the operations did not use up the key's tokens.
	svc.SetLimitMode(LimitEnforce)
	require.True(t, tb.SplitAt("t"))
	for range 3000 {
		require.Equal(t, CauseOffline, tb.Admit("z", KindInsert, 1).Cause)
	}
	clk.Advance(10 * time.Second)
	assert.True(t, tb.Admit("z", KindBatch, 2000).ok())

	// A load-driven split takes its halves offline too.
	svc2 := NewService(&Options{Now: clk.Now, Faults: Faults{OfflineOnSplit: true},
		Balance: Balance{SplitAfter: 30 * time.Second}})
	tb2 := svc2.Table("", "t")
	key := guidKeys(1)
	var elapsed time.Duration
	for tb2.rangeCount() == 1 {
		require.Less(t, elapsed, time.Minute, "no split")
		tb2.Admit(key(0), KindBatch, 100)
		clk.Advance(time.Second / 30)
		elapsed += time.Second / 30
	}
	var offline int
	for range 100 {
		if tb2.Admit(key(0), KindInsert, 1).Cause == CauseOffline {
			offline++
		}
	}
	assert.Equal(t, 100, offline, "both halves are offline for the default %v", DefaultOfflineFor)
}
