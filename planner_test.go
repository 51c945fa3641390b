package tabula

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/odata"
)

// The compiled-filter cache stays within its byte bound however large and many the filters:
// 40 distinct 50 KB filters against a 1 MiB bound leave less than 2 MiB on the heap (a bound
// of 1,024 filters by count kept all of them, about 6.6 MB; with 250 KB filters, 1.4 GB). A
// filter in use is still compiled once.
func TestFilterCacheIsBoundedByBytes(t *testing.T) {
	db := openTestDB(t, nil)
	db.filterCacheBytes = 1 << 20
	large := func(i int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "PartitionKey eq 'p%d'", i)
		for b.Len() < 50_000 {
			fmt.Fprintf(&b, " or Name eq 'a somewhat long value %d'", b.Len())
		}
		return b.String()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 40 {
		_, err := db.compile(large(i))
		require.NoError(t, err)
		require.LessOrEqual(t, db.filterBytes, db.filterCacheBytes)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	assert.Less(t, int64(after.HeapAlloc)-int64(before.HeapAlloc), int64(2<<20), "heap growth")

	// What makes it fast: a filter in use is compiled once, and a hit is the same compiled form.
	first, err := db.compile("PartitionKey eq 'a' and RowKey eq 'b'")
	require.NoError(t, err)
	again, err := db.compile("PartitionKey eq 'a' and RowKey eq 'b'")
	require.NoError(t, err)
	assert.Same(t, first, again)
}

// A filter pointFilter plans by itself is planned exactly as the parser plans it, and one it
// leaves to the parser is not a point query it could have read differently.
func TestPointFilterPlansAsParsed(t *testing.T) {
	db := openTestDB(t, nil)
	keys := []string{"", "a", "a b", " a ", "é", "\U0001F600", "a\x00b", "\xff", "PartitionKey eq 'x", "and", "eq"}
	var filters []string
	for _, pk := range keys {
		for _, rk := range keys {
			filters = append(filters, "PartitionKey eq '"+pk+"' and RowKey eq '"+rk+"'")
		}
	}
	filters = append(filters,
		"PartitionKey eq 'a''b' and RowKey eq 'c'", "PartitionKey eq 'a' and RowKey eq 'b''c'",
		"PartitionKey eq 'a' and RowKey eq 'b' and RowKey eq 'c'", "PartitionKey eq 'a' and RowKey eq 'b' or true",
		"PartitionKey eq 'a' and RowKey eq 'b'' or ''x'' eq ''x'", "PartitionKey eq 'a'  and RowKey eq 'b'",
		"PartitionKey eq 'a' and RowKey eq 'b' ", "partitionKey eq 'a' and RowKey eq 'b'",
		"PartitionKey eq 'a' and RowKey ge 'b'", "PartitionKey eq 'a' and RowKey eq b'", "PartitionKey eq 'a' and RowKey eq '",
		"PartitionKey eq 'a'", "PartitionKey eq 'a' and RowKey eq ''''")
	accepted := 0
	for _, f := range filters {
		pk, rk, ok := pointFilter(f)
		if !ok {
			continue
		}
		accepted++
		c, err := db.compile(f)
		require.NoError(t, err, f)
		got, err := db.prepare("", Query{Filter: f})
		require.NoError(t, err, f)
		assert.Equal(t, c.plan, got.plan, f)
		assert.True(t, c.exact, f)
		assert.Equal(t, pointFilterCompiled, got.filter, f)
		assert.Equal(t, []odata.KeyRange{{
			PartitionKeyLow: odata.Bound{Value: pk, Inclusive: true, Bounded: true}, PartitionKeyHigh: odata.Bound{Value: pk, Inclusive: true, Bounded: true},
			RowKeyLow: odata.Bound{Value: rk, Inclusive: true, Bounded: true}, RowKeyHigh: odata.Bound{Value: rk, Inclusive: true, Bounded: true},
		}}, got.plan.Ranges, f)
	}
	plain := len(keys) - 1 // all but the one with a quote
	assert.Equal(t, plain*plain, accepted, "every plain point filter, and nothing else")
}

// FuzzPointFilter: whatever text pointFilter plans by itself, the parser accepts and plans
// the same way, so the shortcut never answers a filter the service would refuse or read
// differently.
func FuzzPointFilter(f *testing.F) {
	for _, s := range []string{
		"PartitionKey eq 'a' and RowKey eq 'b'", "PartitionKey eq '' and RowKey eq ''",
		"PartitionKey eq 'a''b' and RowKey eq 'c'", "PartitionKey eq 'é' and RowKey eq '\U0001F600'",
		"PartitionKey eq 'a\x00' and RowKey eq '\xff'", "PartitionKey eq 'a' and RowKey eq 'b' or true",
	} {
		f.Add(s)
	}
	db, err := OpenInMemory(nil)
	require.NoError(f, err)
	f.Cleanup(func() { require.NoError(f, db.Close()) })
	f.Fuzz(func(t *testing.T, filter string) {
		pk, rk, ok := pointFilter(filter)
		if !ok {
			return
		}
		c, err := db.compile(filter)
		require.NoError(t, err, "pointFilter took %q, which the parser refuses", filter)
		assert.True(t, c.exact, filter)
		point := func(v string) odata.Bound { return odata.Bound{Value: v, Inclusive: true, Bounded: true} }
		assert.Equal(t, []odata.KeyRange{{PartitionKeyLow: point(pk), PartitionKeyHigh: point(pk),
			RowKeyLow: point(rk), RowKeyHigh: point(rk)}}, c.plan.Ranges, filter)
		got, err := db.prepare("", Query{Filter: filter})
		require.NoError(t, err, filter)
		assert.Equal(t, c.plan, got.plan, filter)
	})
}
