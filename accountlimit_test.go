package tabula

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/partition"
)

// Each namespace is a storage account with an account limit of its own, as each account has
// on the service: one account's load never throttles another's, while its own tables share
// its limit.
func TestEachNamespaceHasItsOwnAccountLimit(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	limits := partition.Limits{Mode: partition.LimitEnforce, PartitionRate: 1000, AccountRate: 10}
	db, err := OpenInMemory(&Options{Clock: clock.Now, Limits: limits})
	require.NoError(t, err)
	defer db.Close()

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
