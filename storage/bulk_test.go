package storage

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkBulkUpdate writes b.N keys of 1 KiB values on disk in Updates of 2,000 writes
// each, as a staged import does: what the store itself sustains for a bulk load (run it at
// -benchtime 1000000x for the 1M case).
func BenchmarkBulkUpdate(b *testing.B) {
	value := make([]byte, 1<<10)
	db, err := Open(Options{Dir: b.TempDir()})
	require.NoError(b, err)
	defer db.Close()
	for i := 0; i < b.N; i += 2000 {
		require.NoError(b, db.Update(func(tx *Txn) error {
			for j := i; j < min(i+2000, b.N); j++ {
				if err := tx.Set(fmt.Appendf(nil, "load/%010d", j), value); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entities/s")
}
