package tabula

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/internal/wire"
)

// TestETagCacheMatchesAppendETag holds the typed scan's ETag formatting to the one every
// other path uses, across seconds, within one, and with no fraction at all.
func TestETagCacheMatchesAppendETag(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cache := etagCache{second: -1}
	ticks := ticksOf(minDateTime)
	for range 10_000 {
		switch r.IntN(4) {
		case 0:
			ticks = r.Int64N(ticksOf(maxDateTime) + 1)
		case 1:
			ticks -= ticks % ticksPerSecond // a whole second
		case 2:
			ticks += r.Int64N(100) // the same second, mostly
		}
		require.Equal(t, string(wire.AppendETag(nil, ticks)), string(cache.appendETag([]byte("x"), ticks)[1:]), "ticks %d", ticks)
	}
}

// TestTypedStringsStayPut scans structs whose strings, RowKey and ETag share allocations
// (recordReader.strs), across pages and RowKeys of every length, keeps them all, and checks
// them against the untyped reads only at the end: no string is overwritten by a later one.
func TestTypedStringsStayPut(t *testing.T) {
	type texts struct {
		PartitionKey, RowKey string
		ETag                 ETag
		A, B, C              string
		N                    int32
	}
	ctx := context.Background()
	tbl := createTable(t, openStore(t, nil), "Texts")
	r := rand.New(rand.NewPCG(36, 3))
	text := func() string {
		b := make([]byte, r.IntN(3)*r.IntN(700))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return string(b)
	}
	var batch []Action
	for i := range 300 {
		rk := fmt.Sprintf("%03d%s", i, strings.Repeat("k", r.IntN(3)*r.IntN(120)))
		if i%5 == 0 {
			rk += "\U0001F600" // a supplementary character: a key not stored as it is
		}
		e := Entity{PartitionKey: "p", RowKey: rk, Properties: Properties{"A": String(text()), "B": String(text()),
			"C": String(text()), "N": Int32(int32(i))}}
		if i%3 == 0 { // some share a Timestamp, and so an ETag
			batch = append(batch, InsertAction(e))
			continue
		}
		_, err := tbl.Insert(ctx, e)
		require.NoError(t, err)
	}
	_, err := tbl.SubmitTransaction(ctx, batch)
	require.NoError(t, err)

	var got []texts
	for v, err := range QueryAs[texts](ctx, tbl, Query{Top: 7}) {
		require.NoError(t, err)
		got = append(got, v)
	}
	var want []texts
	for e, err := range tbl.QueryAll(ctx, Query{}) {
		require.NoError(t, err)
		v, err := EntityAs[texts](e)
		require.NoError(t, err)
		want = append(want, v)
	}
	require.Len(t, want, 300)
	assert.Equal(t, want, got)
}
