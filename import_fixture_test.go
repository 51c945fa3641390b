package tabula

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureOrder is the first entity of testdata/fixture.json, a hand-written fixture with a
// property of every EDM type, as an import reads it.
func fixtureOrder(t *testing.T) Properties {
	id, err := ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")
	require.NoError(t, err)
	return Properties{
		"Name": String("Widget"), "Paid": Boolean(true), "Units": Int32(3), "Total": Double(12.5),
		"Serial": Int64(math.MaxInt64), "Ratio": Double(math.NaN()),
		"Due": DateTime(time.Date(2024, 5, 1, 10, 0, 0, 123456700, time.UTC)), "Id": id, "Blob": Binary{0, 1, 2, 3},
	}
}

// assertFixtureOrder checks got holds fixtureOrder's properties (NaN compared as NaN).
func assertFixtureOrder(t *testing.T, got Properties) {
	t.Helper()
	want := fixtureOrder(t)
	require.Len(t, got, len(want))
	for name, v := range want {
		if name == "Ratio" {
			d, ok := got[name].(Double)
			assert.True(t, ok && math.IsNaN(float64(d)), "Ratio is %#v", got[name])
			continue
		}
		if dt, ok := v.(DateTime); ok {
			assert.True(t, time.Time(dt).Equal(time.Time(got[name].(DateTime))), "%s is %v", name, got[name])
			continue
		}
		assert.Equal(t, v, got[name], name)
	}
}

// A hand-written fixture, with every EDM type, no header, counts or Timestamps, loads
// through DB.Import, whether it keeps Timestamps (it has none to keep) or not.
func TestImportFixture(t *testing.T) {
	ctx := context.Background()
	doc, err := os.ReadFile("testdata/fixture.json")
	require.NoError(t, err)
	for _, keep := range []bool{false, true} {
		db := openStore(t, nil)
		before := time.Now().Add(-time.Minute)
		p, err := db.Import(ctx, strings.NewReader(string(doc)), &ImportOptions{KeepTimestamps: keep})
		require.NoError(t, err)
		assert.Equal(t, Progress{Tables: 2, Entities: 2, Account: "", Table: "Empty", Line: p.Line}, p)
		e, err := db.Table("Orders").Get(ctx, "alice", "0001")
		require.NoError(t, err)
		assertFixtureOrder(t, e.Properties)
		assert.True(t, e.Timestamp.After(before), "stamped as the service would: %v", e.Timestamp)
		page, err := db.Table("Empty").Query(ctx, Query{})
		require.NoError(t, err)
		assert.Empty(t, page.Entities)
	}
}

// A fixture's defects name the line and the JSON path of the value at fault.
func TestImportFixtureErrors(t *testing.T) {
	ctx := context.Background()
	for doc, want := range map[string]string{
		`[]`:            `line 1: $: a fixture is a JSON object`,
		`{"Orders": 5}`: `line 1: $.Orders: must be an array of entities, or an account's object of tables`,
		"{\"Orders\": [\n{\"PartitionKey\":\"p\"}]}": `line 2: $.Orders[0]: an entity must carry both PartitionKey and RowKey`,
		"{\"Orders\": [{\"PartitionKey\":\"p\",\"RowKey\":\"1\"},\n {\"PartitionKey\":\"p\",\"RowKey\":\"2\",\n \"N@odata.type\":\"Edm.Int64\",\"N\":\"x\"}]}": `line 2: $.Orders[1]: property "N"`,
		"{\"Orders\": [\n{\"PartitionKey\":\"p\",\"RowKey\":\"1\",\"1x\":1}]}":                                                                                 `line 2: $.Orders[0]: `,
		"{\"Orders\": [{\"PartitionKey\":\"p\",\"RowKey\":\"1\"},\n{\"PartitionKey\":\"p\",\"RowKey\":\"1\"}]}":                                                `line 2: $.Orders[1]: entity ("p", "1") is in the table twice`,
		"{\"Orders\": [],\n \"orders\": []}":       `line 2: $.orders: table "orders" is in the file twice`,
		"{\"ab\": []}":                             `line 1: $.ab: table name "ab"`,
		"{\"Orders\": [\n{\"PartitionKey\":\"p\",": `line 3: $.Orders[0]: the document ends early`,
		`{"Orders": []} {}`:                        `line 1: $: `,
	} {
		db := openStore(t, nil)
		_, err := db.Import(ctx, strings.NewReader(doc), nil)
		require.Error(t, err, doc)
		assert.Contains(t, err.Error(), want, doc)
		var ie *ImportError
		assert.ErrorAs(t, err, &ie, doc)
		page, err := db.ListTables(ctx, TableQuery{})
		require.NoError(t, err)
		assert.Empty(t, page.Tables, "a failed import leaves nothing: %s", doc)
	}
}

// A fixture's accounts go to their namespaces, by ImportOptions.Namespaces or their names.
func TestImportFixtureAccounts(t *testing.T) {
	ctx := context.Background()
	db := openStore(t, nil)
	doc := `{"Top": [{"PartitionKey":"p","RowKey":"top"}], "shop": {"Top": [{"PartitionKey":"p","RowKey":"shop"}]}, "audit": {"Top": [{"PartitionKey":"p","RowKey":"audit"}]}}`
	p, err := db.Import(ctx, strings.NewReader(doc), &ImportOptions{Namespaces: map[string]string{"audit": "ns1"}})
	require.NoError(t, err)
	assert.EqualValues(t, 3, p.Tables)
	for ns, rk := range map[string]string{"": "top", "shop": "shop", "ns1": "audit"} {
		_, err := db.Namespace(ns).Table("Top").Get(ctx, "p", rk)
		assert.NoError(t, err, ns)
	}
}
