package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// A database with a damaged table file answers a read that needs it with 500 InternalError
// (the detail naming the file and the way out), every other read with the entity, and goes
// on serving.
func TestDamagedFileIsA500(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a database of several table files")
	}
	ctx := context.Background()
	dir := t.TempDir()
	// The smallest budget has the smallest memtables, so that 14 MiB make several files.
	small := &tabula.Options{MemoryBudget: 256 << 20}
	db, err := tabula.Open(dir, small)
	require.NoError(t, err)
	tbl, err := db.CreateTable(ctx, "Damaged")
	require.NoError(t, err)
	pad := tabula.String(strings.Repeat("x", 1024))
	const partitions, rows = 140, 100 // about 14 MiB: several table files
	for p := range partitions {
		actions := make([]tabula.Action, rows)
		for r := range actions {
			actions[r] = tabula.InsertAction(tabula.Entity{PartitionKey: fmt.Sprintf("p%03d", p), RowKey: fmt.Sprintf("r%03d", r),
				Properties: tabula.Properties{"Pad": pad}})
		}
		_, err := tbl.SubmitTransaction(ctx, actions)
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	slices.Sort(ssts)
	require.GreaterOrEqual(t, len(ssts), 3)
	victim := ssts[len(ssts)/2]
	data, err := os.ReadFile(victim)
	require.NoError(t, err)
	data[len(data)/4] ^= 0x01
	require.NoError(t, os.WriteFile(victim, data, 0o644))

	db, err = tabula.Open(dir, small)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(db, &Options{Clock: func() time.Time { return testNow }})
	require.NoError(t, err)
	var ok, failed int
	for p := range partitions {
		resp := serveRequest(s, request{method: http.MethodGet, target: fmt.Sprintf("/devstoreaccount1/Damaged(PartitionKey='p%03d',RowKey='r050')", p),
			header: map[string]string{"Accept": "application/json;odata=nometadata"}})
		b := body(t, resp)
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
		case http.StatusInternalServerError:
			failed++
			assert.Equal(t, "InternalError", headerValue(resp.Header, "x-ms-error-code"))
			assert.Contains(t, headerValue(resp.Header, "X-Tabula-Error-Detail")+b, filepath.Base(victim))
		default:
			t.Fatalf("GET p%03d: %d %s", p, resp.StatusCode, b)
		}
	}
	assert.NotZero(t, ok, "reads of intact files answer")
	assert.NotZero(t, failed, "reads of the damaged file fail")
}
