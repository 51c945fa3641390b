package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/server"
)

// TestAzuriteCopy copies tables from an Azurite instance into a Tabula data directory and
// back with tabula export and import, and compares: the copy path proven against a server
// we did not write. .ci/run starts Azurite (the npm package, pinned there) in memory on a
// loopback port and names its table endpoint in TABULA_AZURITE_TABLE_ENDPOINT; without it
// the test is skipped.
func TestAzuriteCopy(t *testing.T) {
	endpoint := os.Getenv("TABULA_AZURITE_TABLE_ENDPOINT")
	if endpoint == "" {
		t.Skip("TABULA_AZURITE_TABLE_ENDPOINT is not set (.ci/run starts Azurite and sets it)")
	}
	ctx := context.Background()
	conn := "DefaultEndpointsProtocol=http;AccountName=" + server.DevelopmentAccountName + ";AccountKey=" +
		server.DevelopmentAccountKey + ";TableEndpoint=" + endpoint + ";"
	az, err := remote.Dial(conn, nil)
	require.NoError(t, err)
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e9)
	names := []string{"Copy" + suffix + "a", "Copy" + suffix + "b"}
	for _, name := range names {
		tb, err := az.CreateTable(ctx, name)
		require.NoError(t, err)
		actions := []tabula.Action{}
		for i := range 150 {
			actions = append(actions, tabula.InsertAction(tabula.Entity{PartitionKey: fmt.Sprint("p", i%3), RowKey: fmt.Sprintf("r%03d '!~", i),
				Properties: tabula.Properties{
					"I64": tabula.Int64(math.MaxInt64 - int64(i)), "I32": tabula.Int32(int32(-i)), "D": tabula.Double(float64(i) + 0.5),
					"Whole": tabula.Double(float64(i)), "T": tabula.DateTime(time.Date(2024, 1, 2, 3, 4, 5, 1234500+i*100, time.UTC)),
					"G": tabula.Guid{15: byte(i)}, "B": tabula.Binary{byte(i), 0, 255}, "S": tabula.String(fmt.Sprintf("s\"%d\"é", i)),
					"Yes": tabula.Boolean(i%2 == 0),
				}}))
		}
		_, err = tabula.SubmitBulk(ctx, tb, actions)
		require.NoError(t, err)
		// A stored access policy goes along (Azurite takes only full ones).
		require.NoError(t, tb.(tabula.AccessPoliciesAPI).SetAccessPolicies(ctx, []tabula.AccessPolicy{{ID: "readers",
			Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Expiry: time.Date(2030, 1, 1, 0, 0, 0, 1200, time.UTC), Permission: "r"}}))
	}
	defer func() {
		for _, name := range names {
			_ = az.DeleteTable(ctx, name)
		}
	}()
	tmp := t.TempDir()
	tables := names[0] + "," + names[1]
	down := filepath.Join(tmp, "down.jsonl")
	_, errs, code := runCLI(t, "export", "--connection-string", conn, "--tables", tables, down)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, readFile(t, down), `{"@tabula":"eof","tables":2,"entities":300}`)
	assert.Equal(t, 2, strings.Count(readFile(t, down), `"accessPolicies":[{"Id":"readers","Start":"2024-01-01T00:00:00Z","Expiry":"2030-01-01T00:00:00.0000012Z","Permission":"r"}]`))
	assert.Contains(t, readFile(t, down), `{"@tabula":"account","account":"","serviceProperties":"<StorageServiceProperties>`)

	// Into Tabula, keeping Azurite's Timestamps: Tabula's export is Azurite's, byte for byte.
	dir := filepath.Join(tmp, "data")
	_, errs, code = runCLI(t, "import", "--data", dir, "--keep-timestamps", down)
	require.Equal(t, 0, code, errs)
	local := filepath.Join(tmp, "local.jsonl.gz")
	_, errs, code = runCLI(t, "export", "--data", dir, local)
	require.Equal(t, 0, code, errs)
	require.Equal(t, readFile(t, down), readFile(t, local))

	// And back: the tables dropped in Azurite, imported from Tabula's file, exported again,
	// hold the same entities (with the Timestamps Azurite stamps anew).
	for _, name := range names {
		require.NoError(t, az.DeleteTable(ctx, name))
	}
	_, errs, code = runCLI(t, "import", "--connection-string", conn, local)
	require.Equal(t, 0, code, errs)
	again := filepath.Join(tmp, "again.jsonl")
	_, errs, code = runCLI(t, "export", "--connection-string", conn, "--tables", tables, again)
	require.Equal(t, 0, code, errs)
	stamps := regexp.MustCompile(`"odata.etag":"[^"\\]*(\\.[^"\\]*)*","|,"Timestamp":"[^"]*"`)
	assert.Equal(t, stamps.ReplaceAllString(readFile(t, down), ""), stamps.ReplaceAllString(readFile(t, again), ""))
}
