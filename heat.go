package tabula

import (
	"bytes"
	"context"
	"errors"

	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// HeatReport reports what the simulated service saw: per table, its range partitions with
// their entities, bytes, recent entities/s, throttled counts and splits, and the hottest
// PartitionKeys; the figures a partition stress test examines. Stored entities and bytes
// describe the data on disk, also right after a reopen: a table's are counted from disk, in
// the background, from when it is first used after Open (a report uses them all and waits
// for their counts), and kept up by every write since.
func (db *DB) HeatReport() partition.Report {
	// A table that cannot be counted now (a storage error) is left out of this report.
	_ = db.resolveAll(context.Background(), nil)
	return db.service.Report()
}

// ResetStats zeroes the traffic counters of the heat report, so one phase of a stress test
// can be read apart from the one before. It changes no behaviour.
func (db *DB) ResetStats() { db.service.ResetStats() }

// storedPartition is what one PartitionKey of a table holds on disk.
type storedPartition struct {
	pk              string
	entities, bytes int64
}

// countStored counts the entities and bytes a table holds, per PartitionKey, as writes count
// them (key and encoded record). The heat report's range statistics live in memory and are
// kept up by every write; a table's first use after Open adds this count to them, in the
// background (see countInBackground), so that they describe the data and not only what
// changed since Open (which, after deleting stored entities, went negative). It reads every
// key of the table once, values in Badger's LSM tree being read in place, and stops when
// ctx ends.
func countStored(ctx context.Context, tx *storage.Txn, id uint64) ([]storedPartition, error) {
	lower, upper := tableBounds(id)
	it := tx.Scan(lower, upper)
	defer it.Close()
	var (
		out   []storedPartition
		pkEnc []byte
		size  int
	)
	measure := func(v []byte) error { size = len(v); return nil }
	for n := 0; it.Next(); n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		key := it.Key()
		pk, _, err := cutEntityKey(key)
		if err != nil {
			return nil, err
		}
		if err := it.Value(measure); err != nil {
			return nil, err
		}
		if len(out) == 0 || !bytes.Equal(pk, pkEnc) {
			pkEnc = append(pkEnc[:0], pk...)
			out = append(out, storedPartition{pk: storage.DecodePart(pk)})
		}
		p := &out[len(out)-1]
		p.entities++
		p.bytes += int64(len(key) + size)
	}
	return out, nil
}

// resolveAll resolves every table in the catalog, of every namespace (or of only), so that the heat
// report covers the tables not used since Open with what they hold. Tables are listed from
// the catalog directly, not through ListTables, which the simulated service would charge.
func (db *DB) resolveAll(ctx context.Context, only *string) error {
	type nsTable struct{ ns, name string }
	var tables []nsTable
	err := db.view(ctx, func(tx *storage.Txn) error {
		return everyTable(tx, only, func(ns string, rec tableRecord) error {
			tables = append(tables, nsTable{ns, rec.Name})
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, t := range tables {
		// A table deleted meanwhile is simply left out.
		ot, err := db.resolve(ctx, t.ns, t.name)
		if errors.Is(err, ErrTableNotFound) {
			continue
		}
		if err == nil {
			err = ot.waitCounted(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
