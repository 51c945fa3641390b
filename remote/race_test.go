package remote_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/tabulatest"
)

// One client, many goroutines: each call captures its own response (see exchange), so
// concurrent calls never see one another's ETags or errors.
func TestConcurrentCalls(t *testing.T) {
	ctx := context.Background()
	srv := tabulatest.NewServer(t, nil)
	c, err := remote.Dial(srv.ConnectionString(), nil)
	require.NoError(t, err)
	tbl, err := c.CreateTable(ctx, "Concurrent")
	require.NoError(t, err)

	const workers, each = 8, 20
	var wg sync.WaitGroup
	etags := make([][]tabula.ETag, workers)
	for w := range workers {
		wg.Go(func() {
			pk := fmt.Sprint("w", w)
			for i := range each {
				e, err := tbl.Insert(ctx, tabula.Entity{PartitionKey: pk, RowKey: fmt.Sprint(i),
					Properties: tabula.Properties{"W": tabula.Int32(int32(w))}})
				if !assert.NoError(t, err) {
					return
				}
				etags[w] = append(etags[w], e.ETag)
				_, err = tbl.Insert(ctx, tabula.Entity{PartitionKey: pk, RowKey: fmt.Sprint(i)})
				assert.ErrorIs(t, err, tabula.ErrEntityAlreadyExists)
			}
		})
	}
	wg.Wait()
	for w := range workers {
		for i, etag := range etags[w] {
			got, err := tbl.Get(ctx, fmt.Sprint("w", w), fmt.Sprint(i))
			require.NoError(t, err)
			assert.Equal(t, etag, got.ETag, "each Insert got its own response's ETag")
			assert.Equal(t, tabula.Properties{"W": tabula.Int32(int32(w))}, got.Properties)
		}
	}
}
