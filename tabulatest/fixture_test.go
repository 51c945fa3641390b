package tabulatest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/tabulatest"
)

// fixtureEntities is the size of the shared fixture: 100 partitions of 100.
const fixtureEntities = 10_000

// big is seeded once for the package, when a test first uses it.
var big = tabulatest.Tables(map[string][]tabula.Entity{"Movies": func() []tabula.Entity {
	out := make([]tabula.Entity, 0, fixtureEntities)
	for i := range fixtureEntities {
		out = append(out, tabula.Entity{PartitionKey: fmt.Sprintf("p%02d", i/100), RowKey: fmt.Sprintf("r%02d", i%100),
			Properties: tabula.Properties{"I": tabula.Int32(i)}})
	}
	return out
}()})

// A hundred parallel tests each get their own copy of a 10,000-entity fixture: each sees
// the fixture and its own writes, and no other test's.
func TestFixtureParallel(t *testing.T) {
	n, err := tabula.Count(context.Background(), big.Open(t, nil).Table("Movies"), "")
	require.NoError(t, err)
	require.EqualValues(t, fixtureEntities, n)
	for i := range 100 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			srv := tabulatest.NewServer(t, nil, big, tabulatest.InProcess())
			svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(),
				&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.Transport()}})
			require.NoError(t, err)
			movies := svc.NewClient("Movies")
			got, err := movies.GetEntity(ctx, "p42", "r07", nil)
			require.NoError(t, err)
			assert.Contains(t, string(got.Value), `"I":4207`)
			mine, err := json.Marshal(map[string]any{"PartitionKey": "mine", "RowKey": fmt.Sprint(i)})
			require.NoError(t, err)
			_, err = movies.AddEntity(ctx, mine, nil)
			require.NoError(t, err)
			n, err := tabula.Count(ctx, srv.DB.Table("Movies"), "PartitionKey eq 'p42'")
			require.NoError(t, err)
			assert.EqualValues(t, 100, n)
			mineOnly, err := tabula.Count(ctx, srv.DB.Table("Movies"), "PartitionKey eq 'mine'")
			require.NoError(t, err)
			assert.EqualValues(t, 1, mineOnly, "no other test's writes")
		})
	}
}

// A fixture from a Go value holds its tables and entities in order; a failed seed fails
// every test that uses it, with its error.
func TestFixtureKinds(t *testing.T) {
	ctx := context.Background()
	fix := tabulatest.Seed(func(ctx context.Context, db *tabula.DB) error {
		if _, err := db.Namespace("other").CreateTable(ctx, "Elsewhere"); err != nil {
			return err
		}
		return db.Namespace("").SetServiceProperties(ctx, []byte("<props/>"))
	})
	db := fix.Open(t, nil)
	_, err := db.Namespace("other").Table("Elsewhere").AccessPolicies(ctx)
	require.NoError(t, err, "the seeded table")
	props, err := db.Namespace("").ServiceProperties(ctx)
	require.NoError(t, err)
	assert.Equal(t, "<props/>", string(props))

	snap, err := fix.Snapshot()
	require.NoError(t, err)
	again := tabulatest.FromSnapshot(snap).Open(t, nil)
	_, err = again.Namespace("other").Table("Elsewhere").AccessPolicies(ctx)
	require.NoError(t, err)

	broken := tabulatest.Seed(func(context.Context, *tabula.DB) error { return errors.New("no fixture today") })
	_, err = tabulatest.Start(nil, broken)
	assert.ErrorContains(t, err, "no fixture today")
	_, err = tabulatest.Start(nil, broken, tabulatest.InProcess())
	assert.ErrorContains(t, err, "no fixture today", "the error stays")

	dup := tabulatest.Tables(map[string][]tabula.Entity{"Dup": {{PartitionKey: "p", RowKey: "r"}, {PartitionKey: "p", RowKey: "r"}}})
	_, err = dup.Snapshot()
	assert.ErrorContains(t, err, "table Dup")
	assert.ErrorIs(t, err, tabula.ErrInvalidDuplicateRow)
}

// A fixture from an interchange file, plain or gzipped, lands in the development account.
func TestFixtureFile(t *testing.T) {
	ctx := context.Background()
	src := tabulatest.Tables(map[string][]tabula.Entity{"Orders": {{PartitionKey: "alice", RowKey: "1"}, {PartitionKey: "bob", RowKey: "2"}}}).Open(t, nil)
	var file bytes.Buffer
	require.NoError(t, src.Export(ctx, &file, &tabula.ExportOptions{}))
	dir := t.TempDir()
	plain := filepath.Join(dir, "fixture.jsonl")
	require.NoError(t, os.WriteFile(plain, file.Bytes(), 0o600))
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, err := zw.Write(file.Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	gz := filepath.Join(dir, "fixture.jsonl.gz")
	require.NoError(t, os.WriteFile(gz, zipped.Bytes(), 0o600))

	for _, path := range []string{plain, gz} {
		srv := tabulatest.NewServer(t, nil, tabulatest.File(path, nil), tabulatest.InProcess())
		n, err := tabula.Count(ctx, srv.DB.Table("Orders"), "")
		require.NoError(t, err, path)
		assert.EqualValues(t, 2, n, path)
	}
	_, err = tabulatest.Start(nil, tabulatest.File(filepath.Join(dir, "missing.jsonl"), nil))
	assert.ErrorContains(t, err, "missing.jsonl")
	require.NoError(t, os.WriteFile(plain, file.Bytes()[:file.Len()/2], 0o600))
	_, err = tabulatest.Start(nil, tabulatest.File(plain, nil))
	assert.ErrorContains(t, err, "fixture.jsonl", "a file cut short")
}

// A file exported from several accounts, with tables of the same names, loads account by
// account: the first account's tables into the development account's namespace, every
// other's into the namespace of its name.
func TestFixtureFileAccounts(t *testing.T) {
	ctx := context.Background()
	src := tabulatest.Seed(func(ctx context.Context, db *tabula.DB) error {
		for _, ns := range []string{"", "second"} {
			tbl, err := db.Namespace(ns).CreateTable(ctx, "Alpha")
			if err != nil {
				return err
			}
			if _, err := tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r", Properties: tabula.Properties{"Of": tabula.String(ns)}}); err != nil {
				return err
			}
		}
		return nil
	}).Open(t, nil)
	var file bytes.Buffer
	require.NoError(t, src.Export(ctx, &file, nil))
	path := filepath.Join(t.TempDir(), "accounts.jsonl")
	require.NoError(t, os.WriteFile(path, file.Bytes(), 0o600))

	db := tabulatest.File(path, nil).Open(t, nil)
	for _, ns := range []string{"", "second"} {
		e, err := db.Namespace(ns).Table("Alpha").Get(ctx, "p", "r")
		require.NoError(t, err, ns)
		assert.Equal(t, tabula.String(ns), e.Properties["Of"], ns)
	}
}

// A fixture a person writes, with every EDM type, serves through the SDK-facing server.
func TestFixtureHandWritten(t *testing.T) {
	ctx := context.Background()
	srv := tabulatest.NewServer(t, nil, tabulatest.File("../testdata/fixture.json", nil))
	e, err := srv.DB.Table("Orders").Get(ctx, "alice", "0001")
	require.NoError(t, err)
	assert.Len(t, e.Properties, 9)
	assert.Equal(t, tabula.Int64(9223372036854775807), e.Properties["Serial"])
	assert.Equal(t, tabula.Binary{0, 1, 2, 3}, e.Properties["Blob"])
	assert.IsType(t, tabula.Guid{}, e.Properties["Id"])
	assert.IsType(t, tabula.DateTime{}, e.Properties["Due"])
	assert.Equal(t, tabula.Int32(3), e.Properties["Units"])
	assert.Equal(t, tabula.Double(12.5), e.Properties["Total"])
	assert.Equal(t, tabula.Boolean(true), e.Properties["Paid"])
	assert.Equal(t, tabula.String("Widget"), e.Properties["Name"])
	assert.IsType(t, tabula.Double(0), e.Properties["Ratio"])
	_, err = tabulatest.File("../testdata/fixture.json", &tabula.ImportOptions{Tables: []string{"Empty"}}).Open(t, nil).Table("Orders").Get(ctx, "alice", "0001")
	assert.ErrorIs(t, err, tabula.ErrTableNotFound)
}
