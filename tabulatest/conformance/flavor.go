package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// testFlavorRules covers each rule in which the Cosmos DB for Table API is stricter than the
// Table service (tabula.FlavorCosmos; the rules and their sources are in the root package's
// flavor.go): a backend of the Table flavour accepts what one of the Cosmos flavour refuses,
// with Cosmos DB's answer, and the refused write stores nothing.
func testFlavorRules(t *testing.T, svc tabula.ServiceAPI) {
	ctx := context.Background()
	cosmos := flavorOf(svc) == tabula.FlavorCosmos
	tbl := newTable(t, svc)
	const (
		invalid = "One of the input values is invalid."
		empty   = "PartitionKey/RowKey cannot be empty"
	)
	for i, c := range []struct {
		what    string
		e       tabula.Entity
		message string
	}{
		{"an empty PartitionKey", tabula.Entity{PartitionKey: "", RowKey: "r"}, empty},
		{"an empty RowKey", tabula.Entity{PartitionKey: "p", RowKey: ""}, empty},
		{"a RowKey of 256 bytes", tabula.Entity{PartitionKey: "p", RowKey: strings.Repeat("r", 256)}, invalid},
		{"the reserved property ID", tabula.Entity{PartitionKey: "p", RowKey: "r",
			Properties: tabula.Properties{"ID": tabula.Int32(1)}}, invalid},
		{"the reserved property ResourceId", tabula.Entity{PartitionKey: "p", RowKey: "s",
			Properties: tabula.Properties{"ResourceId": tabula.String("x")}}, invalid},
	} {
		_, err := tbl.Insert(ctx, c.e)
		if !cosmos {
			require.NoError(t, err, "the Table service accepts %s", c.what)
			continue
		}
		want := tabula.ErrInvalidInput
		if c.message == empty {
			want = tabula.ErrPropertiesNeedValue // as Cosmos DB is recorded answering
		}
		te := requireCode(t, err, want, c.what)
		assert.Contains(t, te.Message, c.message, c.what)

		if c.e.RowKey != "" {
			c.e.RowKey += fmt.Sprint(i) // another entity, for the transaction
		}
		_, err = tbl.SubmitTransaction(ctx, []tabula.Action{
			tabula.InsertAction(tabula.Entity{PartitionKey: c.e.PartitionKey, RowKey: "ok"}), tabula.InsertAction(c.e)})
		index := 1
		if c.e.PartitionKey == "" {
			index = 0 // the first action has the empty PartitionKey too
		}
		requireActionError(t, err, index, want, c.what)
	}
	if cosmos {
		page, err := tbl.Query(ctx, tabula.Query{})
		require.NoError(t, err)
		assert.Empty(t, page.Entities, "a refused write stores nothing")
	}

	// Between 2 MiB (Cosmos DB's limit) and 4 MiB (the Table service's).
	var actions []tabula.Action
	for i := range 40 {
		actions = append(actions, tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: fmt.Sprintf("big%02d", i),
			Properties: tabula.Properties{"B": make(tabula.Binary, tabula.MaxBinaryLength)}}))
	}
	_, err := tbl.SubmitTransaction(ctx, actions)
	if cosmos {
		requireCode(t, err, tabula.ErrRequestBodyTooLarge)
		var txe *tabula.TransactionError
		assert.False(t, errors.As(err, &txe), "the request as a whole is refused, not an action")
	} else {
		require.NoError(t, err)
	}

	// Table names: case-insensitive on the Table service, case-sensitive on Cosmos DB.
	name := tableName(t, "Case")
	_, err = svc.CreateTable(ctx, name)
	require.NoError(t, err)
	t.Cleanup(func() { dropTable(t, svc, name) })
	other := svc.Table(strings.ToUpper(name))
	_, err = other.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"})
	if cosmos {
		requireCode(t, err, tabula.ErrTableNotFound, "another letter case is another table")
		requireCode(t, svc.DeleteTable(ctx, strings.ToUpper(name)), tabula.ErrResourceNotFound)
		_, err = svc.Table(name).Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"})
		require.NoError(t, err, "the table by its own name")
	} else {
		require.NoError(t, err, "any letter case names the table")
		_, err = svc.Table(name).Get(ctx, "p", "r")
		require.NoError(t, err)
		require.NoError(t, svc.DeleteTable(ctx, strings.ToUpper(name)))
	}
}
