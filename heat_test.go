package tabula

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The heat report counts what is stored, also after a reopen: right after it the table
// shows its 5 entities, and after deleting 2 of them, 3 and their bytes (it used to count
// from Open on, and said -2 entities and -58 bytes).
func TestHeatReportAfterReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	tbl := createTable(t, db, "Heat")
	for i := range 5 {
		_, err := tbl.Insert(ctx, Entity{PartitionKey: fmt.Sprint("p", i%2), RowKey: fmt.Sprint(i), Properties: Properties{"Name": String("same size")}})
		require.NoError(t, err)
	}
	written := db.HeatReport()
	require.EqualValues(t, 5, written.Entities)
	require.Positive(t, written.Bytes)
	require.NoError(t, db.Close())

	db, err = openDir(t, dir, nil)
	require.NoError(t, err)
	reopened := db.HeatReport()
	assert.EqualValues(t, 5, reopened.Entities, "right after the reopen")
	assert.Equal(t, written.Bytes, reopened.Bytes)
	require.Len(t, reopened.Tables, 1)
	assert.EqualValues(t, 5, reopened.Tables[0].Entities)

	tbl = db.Table("Heat")
	require.NoError(t, tbl.Delete(ctx, "p0", "0", AnyETag))
	require.NoError(t, tbl.Delete(ctx, "p1", "1", AnyETag))
	report := db.HeatReport()
	assert.EqualValues(t, 3, report.Entities)
	assert.Equal(t, written.Bytes/5*3, report.Bytes, "every entity has the same size")
	for _, r := range report.Tables[0].Ranges {
		assert.GreaterOrEqual(t, r.Entities, int64(0))
		assert.GreaterOrEqual(t, r.Bytes, int64(0))
	}

	// A table first used by a write after the reopen starts from what it holds too.
	require.NoError(t, db.Close())
	db, err = openDir(t, dir, nil)
	require.NoError(t, err)
	require.NoError(t, db.Table("Heat").Delete(ctx, "p0", "2", AnyETag))
	assert.EqualValues(t, 2, db.HeatReport().Entities)
}
