package remote_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/tabulatest"
)

// everyType has a field of each EDM type, through the Go types that say it and the tags
// that say it where Go's type does not, and a catch-all.
type everyType struct {
	PartitionKey string
	RowKey       string
	Timestamp    time.Time
	ETag         tabula.ETag
	Text         string
	Blob         []byte
	Flag         bool
	When         time.Time
	Ratio        float64
	ID           tabula.Guid
	IDText       string `tabula:",Edm.Guid"`
	Small        int32
	Big          int64
	Narrow       int `tabula:",Edm.Int32"`
	Maybe        *int64
	Rest         tabula.Properties
}

func pickOne[E any](r *rand.Rand, s []E) E { return s[r.IntN(len(s))] }

func randomEveryType(r *rand.Rand, rk string) everyType {
	v := everyType{PartitionKey: "p", RowKey: rk}
	v.Text = pickOne(r, []string{"", "a", "é\U0001F600", "<&>\"'", strings.Repeat("x", tabula.MaxStringLength)})
	if r.IntN(3) > 0 {
		v.Blob = make([]byte, pickOne(r, []int{0, 3, tabula.MaxBinaryLength}))
		for i := range v.Blob {
			v.Blob[i] = byte(r.UintN(256))
		}
	}
	v.Flag = r.IntN(2) == 0
	v.When = pickOne(r, []time.Time{time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC), time.Date(2024, 2, 29, 1, 2, 3, 123456700, time.UTC)})
	v.Ratio = pickOne(r, []float64{0, 5, -1.5, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64})
	for i := range v.ID {
		v.ID[i] = byte(r.UintN(256))
	}
	var g tabula.Guid
	g[r.IntN(16)] = 0xab
	v.IDText = g.String()
	v.Small = pickOne(r, []int32{math.MinInt32, math.MaxInt32, 0})
	v.Big = pickOne(r, []int64{math.MinInt64, math.MaxInt64, 0, 1 << 53, 1<<53 + 1})
	v.Narrow = int(pickOne(r, []int32{math.MinInt32, math.MaxInt32, -1}))
	if r.IntN(2) == 0 {
		n := r.Int64()
		v.Maybe = &n
	}
	if r.IntN(2) == 0 {
		v.Rest = tabula.Properties{"Extra": pickOne(r, []tabula.Property{tabula.Int64(math.MinInt64), tabula.String(""),
			tabula.Binary{}, tabula.Double(math.Inf(-1)), tabula.DateTime(v.When), tabula.Guid{1}})}
	}
	return v
}

// comparable is v in a form assert.Equal can compare: NaN equals nothing, so it is named.
func comparable(t *testing.T, v everyType) string {
	t.Helper()
	e, err := tabula.EntityOf(v)
	require.NoError(t, err)
	return fmt.Sprintf("%s %s %v %s %v", v.PartitionKey, v.RowKey, v.Timestamp, v.ETag, e.Properties)
}

// TestTypedRemoteMatchesEmbedded writes random structs of every EDM type's edge values
// through the remote backend and the embedded engine behind it, and requires every typed
// read, on either side, to give the same struct.
func TestTypedRemoteMatchesEmbedded(t *testing.T) {
	ctx := context.Background()
	srv := tabulatest.NewInProcess(t, nil)
	c, err := remote.Dial(srv.ConnectionString(), inProcess(t, srv))
	require.NoError(t, err)
	far, err := c.CreateTable(ctx, "Typed")
	require.NoError(t, err)
	near := srv.DB.Table("Typed")
	r := rand.New(rand.NewPCG(36, 3))
	for i := range 40 {
		v := randomEveryType(r, fmt.Sprintf("r%02d", i))
		writer := []tabula.TableAPI{far, near}[i%2]
		stored, err := tabula.InsertAs(ctx, writer, v)
		require.NoError(t, err)
		fromFar, err := tabula.GetAs[everyType](ctx, far, v.PartitionKey, v.RowKey)
		require.NoError(t, err)
		fromNear, err := tabula.GetAs[everyType](ctx, near, v.PartitionKey, v.RowKey)
		require.NoError(t, err)
		assert.Equal(t, comparable(t, fromNear), comparable(t, fromFar), "row %d", i)
		assert.Equal(t, stored.ETag, fromFar.ETag)
		// What was written comes back, but for DateTimes in 100 ns ticks and an empty []byte.
		v.Timestamp, v.ETag = fromFar.Timestamp, fromFar.ETag
		if v.Blob == nil {
			v.Blob = []byte{}
		}
		assert.Equal(t, comparable(t, v), comparable(t, fromFar), "row %d", i)
	}
	var fromFar, fromNear []string
	for v, err := range tabula.QueryAs[everyType](ctx, far, tabula.Query{Filter: "Small ge 0", Top: 3}) {
		require.NoError(t, err)
		fromFar = append(fromFar, comparable(t, v))
	}
	for v, err := range tabula.QueryAs[everyType](ctx, near, tabula.Query{Filter: "Small ge 0", Top: 3}) {
		require.NoError(t, err)
		fromNear = append(fromNear, comparable(t, v))
	}
	assert.NotEmpty(t, fromFar)
	assert.Equal(t, fromNear, fromFar)
}

// TestTypedRemoteErrors: the remote backend gives the typed calls the engine's errors.
func TestTypedRemoteErrors(t *testing.T) {
	ctx := context.Background()
	tbl := newTable(t, "Errors")
	type row struct {
		PartitionKey, RowKey string
		ETag                 tabula.ETag
		Count                int32
	}
	v, err := tabula.InsertAs(ctx, tbl, row{PartitionKey: "p", RowKey: "r", Count: 1})
	require.NoError(t, err)
	_, err = tabula.InsertAs(ctx, tbl, v)
	assert.ErrorIs(t, err, tabula.ErrEntityAlreadyExists)
	_, err = tabula.UpdateAs(ctx, tbl, v, tabula.Replace, v.ETag)
	require.NoError(t, err)
	_, err = tabula.UpdateAs(ctx, tbl, v, tabula.Replace, v.ETag)
	assert.ErrorIs(t, err, tabula.ErrUpdateConditionNotSatisfied)
	_, err = tabula.GetAs[row](ctx, tbl, "p", "missing")
	assert.ErrorIs(t, err, tabula.ErrResourceNotFound)
	_, err = tbl.Upsert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "wide", Properties: tabula.Properties{"Count": tabula.Int64(1)}}, tabula.Replace)
	require.NoError(t, err)
	_, err = tabula.GetAs[row](ctx, tbl, "p", "wide")
	var se *tabula.StructError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "Count", se.Field)
}
