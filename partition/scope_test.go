package partition

import (
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One account's faults, limits and statistics are its own: setting them for A leaves B as it
// was, in both directions, and the service-wide setters reach both.
func TestAccountSettingsAreTheirOwn(t *testing.T) {
	for _, dir := range []struct{ self, other string }{{"A", "B"}, {"B", "A"}} {
		t.Run(dir.self+" steers", func(t *testing.T) {
			clk := newFakeClock()
			svc := NewService(&Options{Now: clk.Now})
			self, other := svc.Table(dir.self, "orders"), svc.Table(dir.other, "orders")

			// Faults.
			svc.SetAccountFaults(dir.self, Faults{ServerBusy: 1})
			assert.Equal(t, FaultServerBusy, self.Admit("p", KindInsert, 1).Fault)
			assert.Equal(t, FaultServerBusy, svc.AdmitTableOp(dir.self, KindCreateTable).Fault)
			assert.True(t, other.Admit("p", KindInsert, 1).ok())
			assert.True(t, svc.AdmitTableOp(dir.other, KindCreateTable).ok())
			assert.Equal(t, 1.0, svc.AccountFaults(dir.self).ServerBusy)
			assert.Zero(t, svc.AccountFaults(dir.other).ServerBusy)
			assert.Zero(t, svc.Faults().ServerBusy, "the service's own settings stay")
			svc.SetAccountFaults(dir.self, Faults{ContinuationEvery: 5})
			assert.True(t, self.MustEndPage(5))
			assert.False(t, other.MustEndPage(5))
			svc.SetAccountFaults(dir.self, Faults{})

			// Limits: a bucket of one entity for self, nothing for other.
			svc.SetAccountLimitMode(dir.self, LimitEnforce)
			svc.SetAccountRates(dir.self, Limits{PartitionRate: 0.001, PartitionBurst: 1, AccountRate: math.Inf(1)})
			assert.True(t, self.Admit("hot", KindInsert, 1).ok())
			d := self.Admit("hot", KindInsert, 1)
			assert.Equal(t, CausePartitionLimit, d.Cause)
			assert.Equal(t, FaultServerBusy, d.Fault)
			for range 10 {
				require.True(t, other.Admit("hot", KindInsert, 1).ok())
			}
			assert.Equal(t, LimitEnforce, svc.AccountLimits(dir.self).Mode)
			assert.Equal(t, 0.001, svc.AccountLimits(dir.self).PartitionRate)
			assert.Equal(t, svc.Limits(), svc.AccountLimits(dir.other))

			// Reports and resets.
			rs, ro := svc.AccountReport(dir.self), svc.AccountReport(dir.other)
			require.Len(t, rs.Tables, 1)
			assert.Equal(t, dir.self, rs.Tables[0].Account)
			require.Len(t, ro.Tables, 1)
			assert.Equal(t, dir.other, ro.Tables[0].Account)
			assert.Equal(t, int64(1), rs.ThrottledPartition)
			assert.Zero(t, ro.ThrottledPartition)
			assert.Equal(t, rs.Offered+ro.Offered, svc.Report().Offered, "the service's report has both")
			assert.Len(t, svc.Report().Tables, 2)
			svc.ResetAccountStats(dir.self)
			assert.Zero(t, svc.AccountReport(dir.self).Offered)
			assert.Zero(t, svc.AccountReport(dir.self).ThrottledPartition)
			assert.Equal(t, int64(11), svc.AccountReport(dir.other).Offered)

			// The service-wide setters reach every account.
			svc.SetFaults(Faults{ServerBusy: 1})
			assert.False(t, self.Admit("q", KindGet, 1).ok())
			assert.False(t, other.Admit("q", KindGet, 1).ok())
			svc.SetFaults(Faults{})
			svc.SetLimitMode(LimitOff)
			svc.SetRates(Limits{})
			assert.Equal(t, svc.Limits(), svc.AccountLimits(dir.self))
			assert.True(t, self.Admit("hot", KindInsert, 1).ok())

			// Dropping an account forgets its tables and settings.
			svc.SetAccountFaults(dir.self, Faults{ServerBusy: 1})
			svc.DropAccount(dir.self)
			assert.Empty(t, svc.AccountReport(dir.self).Tables)
			assert.Zero(t, svc.AccountFaults(dir.self).ServerBusy)
			assert.Len(t, svc.Report().Tables, 1)
		})
	}
}

// Accounts steered one by one while others run their operations: no race.
func TestAccountSettingsRace(t *testing.T) {
	svc := NewService(nil)
	var wg sync.WaitGroup
	for _, acct := range []string{"A", "B", "C"} {
		wg.Go(func() {
			tb := svc.Table(acct, "t")
			for i := range 200 {
				tb.Admit("p", KindInsert, 1)
				switch i % 5 {
				case 0:
					svc.SetAccountFaults(acct, Faults{Timeout: 0.5})
				case 1:
					svc.SetAccountRates(acct, Limits{PartitionRate: float64(i + 1)})
				case 2:
					svc.SetAccountLimitMode(acct, LimitMode(i%3))
				case 3:
					_ = svc.AccountReport(acct)
					svc.ResetAccountStats(acct)
				case 4:
					svc.SetRates(Limits{AccountRate: float64(i + 1)})
					svc.DropAccount("D")
				}
			}
		})
	}
	wg.Wait()
}
