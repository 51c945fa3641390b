package tabula

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlavor(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Flavor
	}{{"", FlavorTable}, {"table", FlavorTable}, {"Cosmos", FlavorCosmos}, {"cosmos", FlavorCosmos}} {
		f, err := ParseFlavor(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, f, c.in)
	}
	_, err := ParseFlavor("mongo")
	assert.ErrorContains(t, err, `unknown flavor "mongo"`)
	assert.Equal(t, "cosmos", FlavorCosmos.String())
	assert.Equal(t, "table", FlavorTable.String())
	assert.Equal(t, "Flavor(7)", Flavor(7).String())

	_, err = OpenInMemory(&Options{Flavor: 7})
	assert.ErrorIs(t, err, ErrInvalidInput, "an unknown flavour is refused at Open")
}

// Each rule of the Cosmos flavour, written both ways: the Table flavour accepts what the
// Cosmos flavour refuses, and the Cosmos flavour refuses it with Cosmos DB's answer
// (flavor.go names the page of each rule), storing nothing.
func TestCosmosFlavorEntityRules(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		what    string
		e       Entity
		code    *Error
		message string
	}{
		// Recorded: 400 PropertiesNeedValue, "PartitionKey/RowKey cannot be empty".
		{"an empty PartitionKey", Entity{PartitionKey: "", RowKey: "r"}, ErrPropertiesNeedValue, cosmosMsgEmptyKey},
		{"an empty RowKey", Entity{PartitionKey: "p", RowKey: ""}, ErrPropertiesNeedValue, cosmosMsgEmptyKey},
		{"a RowKey of 256 bytes", Entity{PartitionKey: "p", RowKey: strings.Repeat("r", 256)}, ErrInvalidInput, cosmosMsgInvalidInput},
		{"a RowKey of 128 two-byte characters", Entity{PartitionKey: "p", RowKey: strings.Repeat("é", 128)}, ErrInvalidInput, cosmosMsgInvalidInput},
		{"the reserved property ID", Entity{PartitionKey: "p", RowKey: "r", Properties: Properties{"ID": Int32(1)}}, ErrInvalidInput, cosmosMsgInvalidInput},
		{"the reserved property rid", Entity{PartitionKey: "p", RowKey: "r", Properties: Properties{"rid": String("x")}}, ErrInvalidInput, cosmosMsgInvalidInput},
		{"the reserved property ResourceId", Entity{PartitionKey: "p", RowKey: "r", Properties: Properties{"ResourceId": String("x")}}, ErrInvalidInput, cosmosMsgInvalidInput},
	} {
		t.Run(c.what, func(t *testing.T) {
			table := createTable(t, openStore(t, nil), "Plain")
			_, err := table.Insert(ctx, c.e)
			require.NoError(t, err, "the Table service accepts it")

			db := openStore(t, &Options{Flavor: FlavorCosmos})
			tbl := createTable(t, db, "Cosmos")
			writes := map[string]func() error{
				"Insert": func() error { _, err := tbl.Insert(ctx, c.e); return err },
				"Upsert": func() error { _, err := tbl.Upsert(ctx, c.e, Merge); return err },
				"Update": func() error { _, err := tbl.Update(ctx, c.e, Replace, AnyETag); return err },
			}
			for name, write := range writes {
				err := write()
				require.ErrorIs(t, err, c.code, name)
				var te *Error
				require.ErrorAs(t, err, &te)
				assert.Equal(t, http.StatusBadRequest, te.StatusCode, name)
				assert.Equal(t, c.message, te.Message, name)
				assert.Contains(t, te.Detail, "Options.Flavor cosmos", name)
			}
			_, err = tbl.SubmitTransaction(ctx, []Action{InsertAction(Entity{PartitionKey: c.e.PartitionKey, RowKey: "ok"}), InsertAction(c.e)})
			if c.e.PartitionKey == "" {
				// The first action already has the empty PartitionKey.
				var txe *TransactionError
				require.ErrorAs(t, err, &txe)
				assert.Equal(t, 0, txe.Index)
			} else {
				var txe *TransactionError
				require.ErrorAs(t, err, &txe)
				assert.Equal(t, 1, txe.Index, "reported at the action")
			}
			assert.ErrorIs(t, err, c.code)
			assert.Empty(t, dumpTable(t, tbl), "a refused write stores nothing")
		})
	}
}

// What the Cosmos flavour accepts at its limits: a RowKey of exactly 255 bytes, a property
// named like a reserved one in another letter case, and reads and deletes by any keys. A
// property named etag, which the FAQ calls reserved, Cosmos DB was recorded storing
// (test_etag_duplicate_field): it is stored.
func TestCosmosFlavorLimitsAreInclusive(t *testing.T) {
	ctx := context.Background()
	db := openStore(t, &Options{Flavor: FlavorCosmos})
	assert.Equal(t, FlavorCosmos, db.Flavor())
	tbl := createTable(t, db, "Cosmos")
	_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: strings.Repeat("r", 255),
		Properties: Properties{"Id": Int32(1), "RID": String("x"), "etag": String("bar")}})
	require.NoError(t, err)
	e, err := tbl.Get(ctx, "p", strings.Repeat("r", 255))
	require.NoError(t, err)
	assert.Equal(t, String("bar"), e.Properties["etag"])
	_, err = tbl.Get(ctx, "p", "")
	assert.ErrorIs(t, err, ErrResourceNotFound, "a read by an empty key finds nothing, it is not refused")
	assert.ErrorIs(t, tbl.Delete(ctx, "p", "", AnyETag), ErrResourceNotFound)
}

// A transaction over 2 MiB is refused as a whole, 413, in the Cosmos flavour; the Table
// flavour takes it, up to 4 MiB.
func TestCosmosFlavorTransactionSize(t *testing.T) {
	ctx := context.Background()
	var actions []Action
	for i := range 40 { // 40 × 64 KiB, in base64: 3.4 MiB
		actions = append(actions, InsertAction(Entity{PartitionKey: "p", RowKey: string(rune('a'+i%26)) + strings.Repeat("x", i/26),
			Properties: Properties{"B": make(Binary, MaxBinaryLength)}}))
	}
	require.Greater(t, TransactionPayloadSize(actions), 2<<20)
	require.Less(t, TransactionPayloadSize(actions), MaxTransactionPayload)

	_, err := createTable(t, openStore(t, nil), "Plain").SubmitTransaction(ctx, actions)
	require.NoError(t, err)

	tbl := createTable(t, openStore(t, &Options{Flavor: FlavorCosmos}), "Cosmos")
	_, err = tbl.SubmitTransaction(ctx, actions)
	require.ErrorIs(t, err, ErrRequestBodyTooLarge)
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, http.StatusRequestEntityTooLarge, te.StatusCode)
	var txe *TransactionError
	assert.False(t, errors.As(err, &txe), "the request as a whole is refused, not an action")
	assert.Empty(t, dumpTable(t, tbl))

	_, err = tbl.SubmitTransaction(ctx, actions[:20]) // 20 × 64 KiB, in base64: under 2 MiB
	require.NoError(t, err)
}

// Table names are case-sensitive in the Cosmos flavour: a table is reached only by the name
// it was created with. A name differing in case is a missing table to every operation.
func TestCosmosFlavorTableNamesAreCaseSensitive(t *testing.T) {
	ctx := context.Background()
	plain := openStore(t, nil)
	createTable(t, plain, "Orders")
	_, err := plain.Table("orders").Insert(ctx, Entity{PartitionKey: "p", RowKey: "r"})
	require.NoError(t, err, "the Table service ignores letter case")

	db := openStore(t, &Options{Flavor: FlavorCosmos})
	tbl := createTable(t, db, "Orders")
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "r"})
	require.NoError(t, err)

	other := db.Table("orders")
	_, err = other.Insert(ctx, Entity{PartitionKey: "p", RowKey: "s"})
	assert.ErrorIs(t, err, ErrTableNotFound, "a write")
	_, err = other.Get(ctx, "p", "r")
	assert.ErrorIs(t, err, ErrTableNotFound, "a read")
	_, err = other.Query(ctx, Query{})
	assert.ErrorIs(t, err, ErrTableNotFound, "a query")
	_, err = other.SubmitTransaction(ctx, []Action{InsertAction(Entity{PartitionKey: "p", RowKey: "s"})})
	assert.ErrorIs(t, err, ErrResourceNotFound, "a transaction: Cosmos DB's code for a missing table there")
	var txe *TransactionError
	require.ErrorAs(t, err, &txe)
	assert.Equal(t, 0, txe.Index)
	_, err = plain.Table("nope").SubmitTransaction(ctx, []Action{InsertAction(Entity{PartitionKey: "p", RowKey: "s"})})
	assert.ErrorIs(t, err, ErrTableNotFound, "the Table service's")
	assert.ErrorIs(t, db.DeleteTable(ctx, "ORDERS"), ErrResourceNotFound, "a delete")

	_, err = tbl.Get(ctx, "p", "r")
	require.NoError(t, err, "the table is untouched, by its own name")
	require.NoError(t, db.DeleteTable(ctx, "Orders"))
}

// Cosmos DB returns query results in no stated order; the Cosmos flavour returns each page in
// reverse key order, so code relying on key order fails in it. Pages, their sizes and their
// continuation tokens are the Table service's, and nothing is lost or repeated.
func TestCosmosFlavorQueryOrder(t *testing.T) {
	ctx := context.Background()
	fill := func(tbl *Table) {
		for _, rk := range []string{"a", "b", "c", "d", "e"} {
			_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: rk})
			require.NoError(t, err)
		}
	}
	keys := func(es []Entity) (out []string) {
		for _, e := range es {
			out = append(out, e.RowKey)
		}
		return out
	}
	plain := createTable(t, openStore(t, nil), "Plain")
	fill(plain)
	page, err := plain.Query(ctx, Query{Top: 3})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, keys(page.Entities), "the Table service's key order")

	tbl := createTable(t, openStore(t, &Options{Flavor: FlavorCosmos}), "Cosmos")
	fill(tbl)
	page, err = tbl.Query(ctx, Query{Top: 3})
	require.NoError(t, err)
	assert.Equal(t, []string{"c", "b", "a"}, keys(page.Entities))
	next, err := tbl.Query(ctx, Query{Top: 3, Continuation: page.Continuation})
	require.NoError(t, err)
	assert.Equal(t, []string{"e", "d"}, keys(next.Entities))
	assert.True(t, next.Continuation.IsZero())

	var all []string
	for e, err := range tbl.QueryAll(ctx, Query{Top: 3}) {
		require.NoError(t, err)
		all = append(all, e.RowKey)
	}
	assert.Equal(t, []string{"c", "b", "a", "e", "d"}, all)
}
