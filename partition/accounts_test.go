package partition

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// accountLimits enforces an account rate of 10 entities/s (a bucket of 10) and leaves
// PartitionKeys unlimited, so that every refusal is the account's.
var accountLimits = Limits{Mode: LimitEnforce, PartitionRate: math.Inf(1), AccountRate: 10}

// drain admits single entities on t, on distinct keys, until one is refused, and returns
// how many were admitted; it fails the test past limit.
func drain(t *testing.T, tb *Table, limit int) int {
	t.Helper()
	for i := range limit + 1 {
		if d := tb.Admit(fmt.Sprint("k", i), KindInsert, 1); !d.ok() {
			require.Equal(t, CauseAccountLimit, d.Cause)
			return i
		}
	}
	require.FailNow(t, "never refused", "table %q of account %q", tb.name, tb.account)
	return 0
}

// Each account has its own bucket, shared by its tables: exhausting account A refuses A's
// next entity on any of its tables, and leaves B, and the default account, their own.
func TestEachAccountHasItsOwnBucket(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Limits: accountLimits})
	a1, a2 := svc.Table("A", "orders"), svc.Table("A", "customers")
	b1 := svc.Table("B", "orders")
	root := svc.Table("", "orders")
	require.NotSame(t, a1, b1, "the same name in two accounts is two tables")
	require.NotSame(t, a1, root)
	require.Same(t, a1, svc.Table("A", "orders"))
	assert.Equal(t, "A", a1.account)
	assert.Equal(t, "", root.account)

	assert.Equal(t, 10, drain(t, a1, 100), "A's bucket holds 10")
	for _, tb := range []*Table{a1, a2} {
		d := tb.Admit("fresh", KindInsert, 1)
		assert.Equal(t, Decision{FaultServerBusy, CauseAccountLimit}, d, "table %q of A", tb.name)
		assert.Equal(t, Decision{FaultServerBusy, CauseAccountLimit}, tb.Admit("fresh", KindQuery, 0))
	}
	assert.Equal(t, 10, drain(t, b1, 100), "B's bucket is untouched by A's load")
	assert.Equal(t, 10, drain(t, root, 100), "so is the default account's")

	// Refill at 10/s: 100 ms gives each account one entity back.
	clk.Advance(100 * time.Millisecond)
	assert.True(t, a2.Admit("later", KindInsert, 1).ok())
	assert.False(t, a1.Admit("later", KindInsert, 1).ok())

	// A query's after-the-fact charge puts only its own account in debt.
	clk.Advance(time.Second)
	a1.Charge("k", 50)
	assert.False(t, a2.Admit("k", KindQuery, 0).ok(), "A is in debt")
	assert.True(t, b1.Admit("k", KindQuery, 0).ok(), "B is not")

	rep := svc.Report()
	// Refused: one per drain (3), A's fresh insert and query on each of its tables (4), A's
	// second entity after 100 ms (1), A's query in debt (1).
	assert.Equal(t, int64(9), rep.ThrottledAccount, "the refusals of every account add up")
	assert.Zero(t, rep.ThrottledPartition)
	assert.Equal(t, 10.0, rep.AccountRate)
	var accounts []string
	for _, tr := range rep.Tables {
		accounts = append(accounts, tr.Account+"/"+tr.Name)
	}
	assert.Equal(t, []string{"A/customers", "/orders", "A/orders", "B/orders"}, accounts)
}

// Dropping an account's tables keeps its bucket: deleting and creating a table does not
// refill it.
func TestDroppedTableKeepsItsAccountsBucket(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Limits: accountLimits})
	assert.Equal(t, 10, drain(t, svc.Table("A", "t"), 100))
	svc.DropTable("A", "t")
	require.Empty(t, svc.Report().Tables)
	again := svc.Table("A", "t")
	assert.Equal(t, Decision{FaultServerBusy, CauseAccountLimit}, again.Admit("k", KindInsert, 1))
	assert.True(t, svc.Table("B", "t").Admit("k", KindInsert, 1).ok())

	svc.DropTable("", "t") // the default account has no table "t": A's stays
	assert.Same(t, again, svc.Table("A", "t"))
}

// SetRates refills the bucket of every account, under the new rates.
func TestSetRatesRefillsEveryAccount(t *testing.T) {
	clk := newFakeClock()
	svc := NewService(&Options{Now: clk.Now, Limits: accountLimits})
	tables := []*Table{svc.Table("", "t"), svc.Table("A", "t"), svc.Table("B", "u")}
	for _, tb := range tables {
		require.Equal(t, 10, drain(t, tb, 100))
	}
	l := accountLimits
	l.AccountRate = 20
	svc.SetRates(l)
	for _, tb := range tables {
		assert.Equal(t, 20, drain(t, tb, 100), "account %q after SetRates", tb.account)
	}
	// A table created after SetRates in a new account starts full under the new rates too.
	assert.Equal(t, 20, drain(t, svc.Table("C", "t"), 100))
}

// Many goroutines admit on tables of three accounts while tables are created and dropped
// and reports taken. The clock stands still, so each account admits exactly its burst,
// however the admissions interleave. Run with -race.
func TestAccountsConcurrently(t *testing.T) {
	clk := newFakeClock()
	const burst, perWorker = 100, 150
	svc := NewService(&Options{Now: clk.Now, Limits: Limits{Mode: LimitEnforce, PartitionRate: math.Inf(1),
		AccountRate: burst}})
	accounts := []string{"A", "B", "C"}
	run := func() map[string]int64 {
		admitted := make(map[string]*atomic.Int64)
		for _, name := range accounts {
			admitted[name] = new(atomic.Int64)
		}
		var wg sync.WaitGroup
		for w := range 3 * len(accounts) {
			name := accounts[w%len(accounts)]
			wg.Go(func() {
				tb := svc.Table(name, fmt.Sprint("t", w/len(accounts)))
				for i := range perWorker {
					if tb.Admit(fmt.Sprint(w, "-", i%7), KindInsert, 1).ok() {
						admitted[name].Add(1)
					}
				}
			})
		}
		wg.Go(func() {
			for i := range 50 {
				svc.Table(accounts[i%len(accounts)], "scratch").Admit("x", KindGet, 0)
				svc.DropTable(accounts[i%len(accounts)], "scratch")
				_ = svc.Report()
			}
		})
		wg.Wait()
		out := make(map[string]int64)
		for name, n := range admitted {
			out[name] = n.Load()
		}
		return out
	}

	want := map[string]int64{"A": burst, "B": burst, "C": burst}
	assert.Equal(t, want, run())
	offered := int64(3 * len(accounts) * perWorker)
	rep := svc.Report()
	// The scratch admissions cost nothing and are refused once their account is empty: each
	// of those counts one throttled entity, so the total is at least the workers' refusals.
	assert.GreaterOrEqual(t, rep.ThrottledAccount, offered-3*burst)
	assert.LessOrEqual(t, rep.ThrottledAccount, offered-3*burst+50)

	svc.SetRates(svc.Limits())
	assert.Equal(t, want, run(), "SetRates refilled every account")

	// SetRates while admissions run (for the race detector): each refill gives each account
	// at most one more burst.
	const refills = 5
	done := make(chan map[string]int64)
	go func() { done <- run() }()
	for range refills {
		svc.SetRates(svc.Limits())
	}
	got := <-done
	for _, name := range accounts {
		assert.LessOrEqual(t, got[name], int64((refills+1)*burst), name)
	}
}
