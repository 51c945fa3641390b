package tabula

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/partition"
)

// offerGets reads one entity at a steady rate on the fake clock for a simulated duration
// and returns how many reads succeeded and how many were throttled.
func offerGets(t *testing.T, tbl *Table, clock *fakeClock, perSecond int, d time.Duration) (ok, busy int) {
	t.Helper()
	ctx := context.Background()
	step := time.Second / time.Duration(perSecond)
	for range int(d / step) {
		clock.Advance(step)
		_, err := tbl.Get(ctx, "hot", "row")
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrServerBusy):
			busy++
			var te *Error
			require.ErrorAs(t, err, &te)
			assert.Equal(t, 503, te.StatusCode)
			assert.Equal(t, "The server is busy.", te.Message)
		default:
			require.NoError(t, err)
		}
	}
	return ok, busy
}

// A single hot PartitionKey offered 3,000 entities/s for 20 simulated seconds gets about
// 2,000/s through when limits are enforced; observed, all get through and the excess is
// counted; off, nothing is counted.
func TestHotPartitionThrottling(t *testing.T) {
	const offered, seconds = 3000, 20
	for _, mode := range []partition.LimitMode{partition.LimitEnforce, partition.LimitObserve, partition.LimitOff} {
		t.Run(mode.String(), func(t *testing.T) {
			clock := newFakeClock()
			db := openStore(t, &Options{Clock: clock.Now, Limits: partition.Limits{Mode: mode}})
			var err error
			tbl := createTable(t, db, "Hot")
			_, err = tbl.Insert(context.Background(), Entity{PartitionKey: "hot", RowKey: "row"})
			require.NoError(t, err)

			ok, busy := offerGets(t, tbl, clock, offered, seconds*time.Second)
			report := db.HeatReport()
			throttled := report.ThrottledPartition
			switch mode {
			case partition.LimitEnforce:
				assert.InDelta(t, 2000, float64(ok)/seconds, 100, "admitted entities/s")
				assert.Equal(t, offered*seconds, ok+busy)
				assert.InDelta(t, float64(busy), float64(throttled), 1)
			case partition.LimitObserve:
				assert.Zero(t, busy)
				assert.InDelta(t, 1000*seconds, float64(throttled), 100*seconds, "would-be throttles are counted")
			case partition.LimitOff:
				assert.Zero(t, busy)
				assert.Zero(t, throttled)
			}
		})
	}
}

// Keys that only grow keep landing on the last range partition, which splits again and
// again; the heat report shows it.
func TestAppendOnlyKeysSplitTheLastRange(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	db := openStore(t, &Options{Clock: clock.Now, Limits: partition.Limits{Mode: partition.LimitOff},
		Balance: partition.Balance{SplitAfter: 10 * time.Second, SplitAbove: 500}})
	tbl := createTable(t, db, "Log")
	for i := range 40_000 { // 40 simulated seconds at 1,000 inserts/s
		clock.Advance(time.Millisecond)
		_, err := tbl.Insert(ctx, Entity{PartitionKey: fmt.Sprintf("%010d", i), RowKey: ""})
		require.NoError(t, err)
	}
	report := db.HeatReport()
	require.Len(t, report.Tables, 1)
	ranges := report.Tables[0].Ranges
	require.Greater(t, len(ranges), 1, "the table split:\n%s", report)
	last := ranges[len(ranges)-1]
	for _, r := range ranges[:len(ranges)-1] {
		assert.Less(t, r.Rate, last.Rate, "the last range takes the load:\n%s", report)
	}
	assert.EqualValues(t, 40_000, report.Tables[0].Entities)
	assert.Contains(t, report.String(), "Log")
}

// With range boundaries honoured, a query returns the same entities in the same order as
// without, over more pages, some of them empty.
func TestBoundaryContinuations(t *testing.T) {
	ctx := context.Background()
	run := func(boundaries bool) (all []string, pages, empty int) {
		db := openStore(t, &Options{BoundaryContinuations: boundaries})
		tbl := createTable(t, db, "Ranges")
		for _, pk := range []string{"a", "b", "c", "m", "n", "x", "y"} {
			for rk := range 3 {
				_, err := tbl.Insert(ctx, Entity{PartitionKey: pk, RowKey: fmt.Sprint(rk), Properties: Properties{"N": Int32(rk)}})
				require.NoError(t, err)
			}
		}
		// Range partitions [.., c) [c, f) [f, k) [k, n) [n, ..): [f, k) holds nothing.
		for _, b := range []string{"c", "f", "k", "n"} {
			split, err := tbl.SplitRangePartition(ctx, b)
			require.NoError(t, err)
			require.True(t, split)
		}
		q := Query{Filter: "N ne 1"}
		for {
			page, err := tbl.Query(ctx, q)
			require.NoError(t, err)
			pages++
			if len(page.Entities) == 0 && !page.Continuation.IsZero() {
				empty++
			}
			for _, e := range page.Entities {
				all = append(all, e.PartitionKey+e.RowKey)
			}
			if page.Continuation.IsZero() {
				return all, pages, empty
			}
			q.Continuation = page.Continuation
		}
	}
	without, pagesWithout, _ := run(false)
	with, pagesWith, empty := run(true)
	assert.Equal(t, without, with)
	assert.Len(t, with, 14)
	assert.Equal(t, 1, pagesWithout)
	assert.Equal(t, 5, pagesWith, "one page per range partition")
	assert.Equal(t, 1, empty, "the empty range [f, k) yields an empty page with a token")
}

// Faults drawn from a seed are the same on every run; another seed gives another sequence.
func TestFaultInjectionIsDeterministic(t *testing.T) {
	ctx := context.Background()
	outcomes := func(seed uint64) string {
		db := openStore(t, &Options{Faults: partition.Faults{Seed: seed, ServerBusy: 0.2, Timeout: 0.1,
			Kinds: partition.Kinds(partition.KindInsert, partition.KindGet)}})
		tbl := createTable(t, db, "Faults")
		var b strings.Builder
		for i := range 200 {
			var err error
			if i%2 == 0 {
				_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)})
			} else {
				_, err = tbl.Get(ctx, "p", fmt.Sprint(i-1))
			}
			switch {
			case err == nil:
				b.WriteByte('.')
			case errors.Is(err, ErrServerBusy):
				b.WriteByte('B')
			case errors.Is(err, ErrOperationTimedOut):
				b.WriteByte('T')
			case errors.Is(err, ErrResourceNotFound):
				b.WriteByte('n') // the insert it reads failed
			default:
				t.Fatalf("unexpected error %v", err)
			}
		}
		// Operations the faults do not aim at are never hit.
		for range 50 {
			_, err := tbl.Upsert(ctx, Entity{PartitionKey: "p", RowKey: "u"}, Merge)
			require.NoError(t, err)
		}
		return b.String()
	}
	first := outcomes(7)
	assert.Equal(t, first, outcomes(7))
	assert.NotEqual(t, first, outcomes(8))
	assert.Contains(t, first, "B")
	assert.Contains(t, first, "T")
	assert.InDelta(t, 200*0.7, strings.Count(first, ".")+strings.Count(first, "n"), 30)
}

func TestForcedContinuations(t *testing.T) {
	ctx := context.Background()
	db := openStore(t, &Options{Faults: partition.Faults{ContinuationEvery: 3}})
	tbl := createTable(t, db, "Pages")
	for i := range 10 {
		_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%02d", i)})
		require.NoError(t, err)
	}
	page, err := tbl.Query(ctx, Query{})
	require.NoError(t, err)
	assert.Len(t, page.Entities, 3)
	assert.False(t, page.Continuation.IsZero())
	n := 0
	for _, err := range tbl.QueryAll(ctx, Query{}) {
		require.NoError(t, err)
		n++
	}
	assert.Equal(t, 10, n)
}

// A throttled write changes nothing, and a throttled transaction counts all its entities.
func TestThrottledWritesTouchNothing(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	db := openStore(t, &Options{Clock: clock.Now, Limits: partition.Limits{Mode: partition.LimitEnforce, PartitionRate: 100}})
	var err error
	tbl := createTable(t, db, "Busy")
	actions := make([]Action, 100)
	for i := range actions {
		actions[i] = InsertAction(Entity{PartitionKey: "p", RowKey: fmt.Sprint(i)})
	}
	_, err = tbl.SubmitTransaction(ctx, actions)
	require.NoError(t, err, "the bucket holds one second's worth: 100")
	before := rawTable(t, tbl)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "more"})
	assert.ErrorIs(t, err, ErrServerBusy)
	assert.Equal(t, before, rawTable(t, tbl))
	clock.Advance(time.Second)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "more"})
	assert.NoError(t, err, "a second later the bucket has refilled")
}

// Each namespace is a storage account with an account limit of its own, as each account has
// on the service: one account's load never throttles another's, while its own tables share
// its limit.
func TestEachNamespaceHasItsOwnAccountLimit(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	limits := partition.Limits{Mode: partition.LimitEnforce, PartitionRate: 1000, AccountRate: 10}
	db := openStore(t, &Options{Clock: clock.Now, Limits: limits})
	var err error

	create := func(ns *Namespace, name string) *Table {
		t.Helper()
		tbl, err := ns.CreateTable(ctx, name)
		require.NoError(t, err)
		return tbl
	}
	alice, bob, root := db.Namespace("alice"), db.Namespace("bob"), db.Namespace("")
	aliceOrders, aliceCustomers := create(alice, "Orders"), create(alice, "Customers")
	bobOrders, rootOrders := create(bob, "Orders"), create(root, "Orders")

	// insertAll inserts n entities and returns the first error.
	row := 0
	insertAll := func(tbl *Table, n int) error {
		for range n {
			row++
			if _, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprint(row)}); err != nil {
				return err
			}
		}
		return nil
	}

	require.NoError(t, insertAll(aliceOrders, 10), "alice's bucket holds 10")
	assert.ErrorIs(t, insertAll(aliceOrders, 1), ErrAccountBusy)
	assert.ErrorIs(t, insertAll(aliceCustomers, 1), ErrAccountBusy, "alice's other table shares her limit")
	_, err = alice.Table("Orders").Get(ctx, "p", "1")
	assert.ErrorIs(t, err, ErrAccountBusy, "reads count too")

	require.NoError(t, insertAll(bobOrders, 10), "bob has a limit of his own")
	require.NoError(t, insertAll(rootOrders, 10), "so has the root namespace")
	assert.ErrorIs(t, insertAll(bobOrders, 1), ErrAccountBusy)

	// At 10/s, 100 ms gives every account one entity back.
	clock.Advance(100 * time.Millisecond)
	require.NoError(t, insertAll(aliceCustomers, 1))
	assert.ErrorIs(t, insertAll(aliceOrders, 1), ErrAccountBusy)

	// Deleting and creating a table does not refill its account.
	require.NoError(t, alice.DeleteTable(ctx, "Orders"))
	for _, tr := range db.HeatReport().Tables {
		assert.NotEqual(t, "alice/Orders", tr.Name, "the heat report forgets a deleted table")
	}
	aliceOrders = create(alice, "Orders")
	assert.ErrorIs(t, insertAll(aliceOrders, 1), ErrAccountBusy)

	rep := db.HeatReport()
	assert.Equal(t, int64(6), rep.ThrottledAccount, "refusals of every account add up")
	accounts := map[string]string{}
	for _, tr := range rep.Tables {
		accounts[tr.Name] = tr.Account
	}
	assert.Equal(t, map[string]string{"alice/Customers": "alice", "alice/Orders": "alice",
		"bob/Orders": "bob", "Orders": ""}, accounts)

	// SetRates refills every account's bucket.
	db.SetRates(limits)
	for _, tbl := range []*Table{aliceOrders, bobOrders, rootOrders} {
		assert.NoError(t, insertAll(tbl, 10))
		assert.ErrorIs(t, insertAll(tbl, 1), ErrAccountBusy)
	}
}

// A namespace's settings are its own: faults, limits, query switches, heat report and reset set
// for one namespace leave the other as it was, in both directions; the DB's setters reach
// both.
func TestNamespaceSettingsAreTheirOwn(t *testing.T) {
	ctx := context.Background()
	for _, dir := range []struct{ self, other string }{{"", "bob"}, {"bob", ""}, {"alice", "bob"}} {
		t.Run(fmt.Sprintf("%q steers", dir.self), func(t *testing.T) {
			db := openStore(t, nil)
			self, other := db.Namespace(dir.self), db.Namespace(dir.other)
			for _, ns := range []*Namespace{self, other} {
				_, err := ns.CreateTable(ctx, "Orders")
				require.NoError(t, err)
				_, err = ns.Table("Orders").Insert(ctx, Entity{PartitionKey: "p", RowKey: "r", Properties: Properties{"Name": String("x")}})
				require.NoError(t, err)
			}

			self.SetFaults(partition.Faults{ServerBusy: 1})
			_, err := self.Table("Orders").Get(ctx, "p", "r")
			require.ErrorIs(t, err, ErrServerBusy)
			_, err = self.CreateTable(ctx, "Another")
			require.ErrorIs(t, err, ErrServerBusy)
			_, err = other.Table("Orders").Get(ctx, "p", "r")
			require.NoError(t, err)
			_, err = other.CreateTable(ctx, "Another")
			require.NoError(t, err)
			require.NoError(t, other.DeleteTable(ctx, "Another"))
			assert.Zero(t, db.Faults().ServerBusy)
			self.SetFaults(partition.Faults{})

			self.SetLimitMode(partition.LimitEnforce)
			self.SetRates(partition.Limits{PartitionRate: 0.001, PartitionBurst: 1})
			assert.Equal(t, partition.LimitEnforce, self.Limits().Mode)
			assert.Equal(t, db.Limits(), other.Limits())
			_, err = self.Table("Orders").Get(ctx, "p", "r")
			require.NoError(t, err)
			_, err = self.Table("Orders").Get(ctx, "p", "r")
			require.ErrorIs(t, err, ErrServerBusy)
			for range 5 {
				_, err = other.Table("Orders").Get(ctx, "p", "r")
				require.NoError(t, err)
			}

			self.SetForbidFullScans(true)
			self.SetBoundaryContinuations(true)
			assert.True(t, self.ForbidFullScans())
			assert.False(t, other.ForbidFullScans())
			assert.False(t, other.BoundaryContinuations())
			assert.False(t, db.ForbidFullScans())
			full := Query{Filter: "Name eq 'x'"}
			_, err = self.Table("Orders").Explain(full)
			require.ErrorIs(t, err, ErrFullScanForbidden)
			_, err = other.Table("Orders").Explain(full)
			require.NoError(t, err)

			rs, ro := self.HeatReport(), other.HeatReport()
			require.Len(t, rs.Tables, 1, "Orders: Another was refused")
			assert.Equal(t, "Orders", rs.Tables[0].Name, "named as in the namespace")
			assert.Equal(t, int64(1), rs.ThrottledPartition)
			assert.Zero(t, ro.ThrottledPartition)
			for _, tr := range rs.Tables {
				assert.Equal(t, dir.self, tr.Account)
			}
			self.ResetStats()
			assert.Zero(t, self.HeatReport().Offered)
			assert.Equal(t, ro.Offered, other.HeatReport().Offered)

			// The DB's setters reach every namespace.
			db.SetForbidFullScans(false)
			assert.False(t, self.ForbidFullScans())
			db.SetLimitMode(partition.LimitOff)
			assert.Equal(t, partition.LimitOff, self.Limits().Mode)
			db.SetFaults(partition.Faults{ServerBusy: 1})
			_, err = other.Table("Orders").Get(ctx, "p", "r")
			require.ErrorIs(t, err, ErrServerBusy)
			db.SetFaults(partition.Faults{})
		})
	}
}
