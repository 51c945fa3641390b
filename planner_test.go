package tabula

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
