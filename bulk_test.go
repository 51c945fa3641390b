package tabula

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SubmitBulk's cuts keep every limit of a transaction, and each partition's actions in order.
func TestBulkTransactionsKeepEveryLimit(t *testing.T) {
	insert := func(pk, rk string) Action {
		return InsertAction(Entity{PartitionKey: pk, RowKey: rk, Properties: Properties{"S": String("x")}})
	}
	var many []Action
	for i := range 201 {
		many = append(many, insert("p", fmt.Sprintf("%03d", i)))
	}
	// Entities of 900 KB (15 binaries of 60,000 bytes) whose JSON bodies, in base64, are
	// 1.2 MB each: three fit in 4 MiB.
	big := make([]Action, 6)
	for i := range big {
		props := Properties{}
		for p := range 15 {
			props[fmt.Sprintf("B%02d", p)] = Binary(make([]byte, 60000))
		}
		big[i] = InsertAction(Entity{PartitionKey: "big", RowKey: fmt.Sprint(i), Properties: props})
	}
	cases := []struct {
		name    string
		actions []Action
		want    [][]int
	}{
		{"none", nil, nil},
		{"100 per transaction", many, [][]int{seq(0, 100), seq(100, 200), {200}}},
		{"4 MiB per transaction", big, [][]int{{0, 1, 2}, {3, 4, 5}}},
		{"partitions in order of first appearance", []Action{insert("b", "1"), insert("a", "1"), insert("b", "2")},
			[][]int{{0, 2}, {1}}},
		{"an entity twice: the second starts the next transaction", []Action{insert("p", "1"), insert("p", "2"),
			UpsertAction(Entity{PartitionKey: "p", RowKey: "1"}, Merge), insert("p", "3")}, [][]int{{0, 1}, {2, 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := bulkTransactions(c.actions)
			assert.Equal(t, c.want, got)
			for _, txn := range got {
				actions := make([]Action, len(txn))
				for i, a := range txn {
					actions[i] = c.actions[a]
				}
				_, err := validateTransaction(actions)
				assert.NoError(t, err, "a valid transaction")
			}
		})
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// flakyTable is a TableAPI whose transactions can be made to meet another writer or fail.
type flakyTable struct {
	*Table
	before func(n int, actions []Action) error // runs before transaction n (from 0)
	n      int
}

func (f *flakyTable) SubmitTransaction(ctx context.Context, actions []Action) ([]ActionResult, error) {
	n := f.n
	f.n++
	if err := f.before(n, actions); err != nil {
		return nil, err
	}
	return f.Table.SubmitTransaction(ctx, actions)
}

// DeleteWhere takes an entity someone else deleted meanwhile in its stride, and a failure
// halfway leaves the transactions before it committed and counted, and the rest untouched.
func TestDeleteWhereMeetsOtherWritersAndFailures(t *testing.T) {
	ctx := context.Background()
	fillTable := func(t *testing.T) *Table {
		tbl := createTable(t, openTestDB(t, nil), "Doomed")
		var actions []Action
		for i := range 250 {
			actions = append(actions, InsertAction(Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%03d", i)}))
		}
		_, err := SubmitBulk(ctx, tbl, actions)
		require.NoError(t, err)
		return tbl
	}
	t.Run("deleted meanwhile", func(t *testing.T) {
		tbl := fillTable(t)
		flaky := &flakyTable{Table: tbl, before: func(n int, actions []Action) error {
			if n == 1 {
				return tbl.Delete(ctx, "p", actions[7].Entity.RowKey, AnyETag)
			}
			return nil
		}}
		n, err := DeleteWhere(ctx, flaky, "")
		require.NoError(t, err)
		assert.EqualValues(t, 249, n, "all but the one someone else deleted")
		left, err := Count(ctx, tbl, "")
		require.NoError(t, err)
		assert.Zero(t, left)
	})
	t.Run("failure halfway", func(t *testing.T) {
		tbl := fillTable(t)
		flaky := &flakyTable{Table: tbl, before: func(n int, _ []Action) error {
			if n == 1 {
				return ErrServerBusy
			}
			return nil
		}}
		n, err := DeleteWhere(ctx, flaky, "")
		require.ErrorIs(t, err, ErrServerBusy)
		assert.EqualValues(t, 100, n, "the first transaction")
		left, err := Count(ctx, tbl, "")
		require.NoError(t, err)
		assert.EqualValues(t, 150, left, "the rest untouched")
		n, err = DeleteWhere(ctx, tbl, "")
		require.NoError(t, err)
		assert.EqualValues(t, 150, n, "called again, it finishes")
	})
}
