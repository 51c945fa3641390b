package tabula

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A database, in memory as on disk, holds what the service holds: an entity of exactly 1 MiB by the
// service's size formula, all of it non-ASCII text (1.5 MiB once stored as UTF-8), and an
// entity group transaction of 100 inserts whose payload is exactly 4 MiB, mostly non-ASCII.
func TestHoldsTheServiceLimits(t *testing.T) {
	if bothStores(t, TestHoldsTheServiceLimits) {
		return
	}
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Large")

	// As atSizeLimit, in a script of three UTF-8 bytes per UTF-16 code unit.
	props := Properties{}
	for i := range 15 {
		props[fmt.Sprintf("s%02d", i)] = String(strings.Repeat("表", MaxStringLength))
	}
	props["s99"] = String(strings.Repeat("表", 32622-4)) // the keys take 2·(1+3) bytes
	big := Entity{PartitionKey: "p", RowKey: "big", Properties: props}
	require.Equal(t, MaxEntitySize, EntitySize(&big))
	_, err := tbl.Insert(ctx, big)
	require.NoError(t, err)
	got, err := tbl.Get(ctx, "p", "big")
	require.NoError(t, err)
	assert.Equal(t, props, got.Properties)

	actions := fourMiBTransaction(t)
	results, err := tbl.SubmitTransaction(ctx, actions)
	require.NoError(t, err)
	assert.Len(t, results, MaxTransactionActions)
	last := actions[len(actions)-1].Entity
	got, err = tbl.Get(ctx, last.PartitionKey, last.RowKey)
	require.NoError(t, err)
	assert.Equal(t, last.Properties, got.Properties)
}

// fourMiBTransaction builds 100 inserts into one partition whose payload is exactly
// MaxTransactionPayload: equal strings of "表" in each, padded with ASCII in the last.
func fourMiBTransaction(t *testing.T) []Action {
	t.Helper()
	build := func(n int, pad string) []Action {
		actions := make([]Action, MaxTransactionActions)
		for i := range actions {
			props := Properties{"Text": String(strings.Repeat("表", n))}
			if i == len(actions)-1 {
				props["Pad"] = String(pad)
			}
			actions[i] = InsertAction(Entity{PartitionKey: "tx", RowKey: fmt.Sprintf("%03d", i), Properties: props})
		}
		return actions
	}
	base := TransactionPayloadSize(build(0, ""))
	perChar := TransactionPayloadSize(build(1, "")) - base
	n := (MaxTransactionPayload - base) / perChar
	actions := build(n, "")
	actions = build(n, strings.Repeat("x", MaxTransactionPayload-TransactionPayloadSize(actions)))
	require.Equal(t, MaxTransactionPayload, TransactionPayloadSize(actions))
	return actions
}
