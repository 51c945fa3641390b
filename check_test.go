package tabula

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/storage"
)

// Check finds each kind of damage it promises to, in either store, and a healthy database
// (tables, namespaces, ACLs, service properties, a deleted table) passes it.
func TestCheckFindsEachBrokenInvariant(t *testing.T) {
	ctx := context.Background()
	raw := func(t *testing.T, db *DB, key, value []byte) {
		t.Helper()
		require.NoError(t, db.store.Update(func(tx *storage.Txn) error { return tx.Set(key, value) }))
	}
	// healthy builds a database with one of everything, every table used so that its
	// statistics are kept.
	healthy := func(t *testing.T) (*DB, *Table) {
		db := openStore(t, nil)
		tbl := createTable(t, db, "Movies")
		for _, rk := range []string{"a", "b", "c"} {
			_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: rk, Properties: Properties{"N": Int32(1)}})
			require.NoError(t, err)
		}
		require.NoError(t, tbl.SetAccessPolicies(ctx, []AccessPolicy{{ID: "read"}}))
		other, err := db.Namespace("acct").CreateTable(ctx, "Movies")
		require.NoError(t, err)
		_, err = other.Insert(ctx, Entity{PartitionKey: "q", RowKey: "r"})
		require.NoError(t, err)
		require.NoError(t, db.Namespace("acct").SetServiceProperties(ctx, []byte("<StorageServiceProperties/>")))
		gone := createTable(t, db, "Gone")
		_, err = gone.Insert(ctx, Entity{PartitionKey: "p", RowKey: "x"})
		require.NoError(t, err)
		require.NoError(t, db.DeleteTable(ctx, "Gone"))
		return db, tbl
	}
	tableID := func(t *testing.T, tbl *Table) uint64 {
		ot, err := tbl.resolve(ctx)
		require.NoError(t, err)
		return ot.rec.ID
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, db *DB, tbl *Table)
		want   string // a phrase of the report
	}{
		{"healthy", func(*testing.T, *DB, *Table) {}, ""},
		{"orphaned entity", func(t *testing.T, db *DB, tbl *Table) {
			raw(t, db, entityKey(999, "p", "r"), encodeRecord(1, nil, nil))
			raw(t, db, nextTableIDKey, binary.BigEndian.AppendUint64(nil, 1000))
		}, "no table in the catalog and no drop marker"},
		{"orphaned access policies", func(t *testing.T, db *DB, tbl *Table) {
			raw(t, db, aclKey(tableID(t, tbl)+100), nil)
			raw(t, db, nextTableIDKey, binary.BigEndian.AppendUint64(nil, 1000))
		}, "stored access policies, but no table"},
		{"table-ID counter reused", func(t *testing.T, db *DB, tbl *Table) {
			raw(t, db, nextTableIDKey, binary.BigEndian.AppendUint64(nil, tableID(t, tbl)))
		}, "not above the largest ID in use"},
		{"clock behind the data", func(t *testing.T, db *DB, tbl *Table) {
			raw(t, db, clockKey, clockRecord(1, clockReserved))
		}, "stored clock is 1 ticks"},
		{"clock record in an old form", func(t *testing.T, db *DB, tbl *Table) {
			raw(t, db, clockKey, binary.BigEndian.AppendUint64(nil, uint64(db.lastTicks)))
		}, "clock record in the form of a format before 4"},
		{"clock record of no form", func(t *testing.T, db *DB, tbl *Table) {
			raw(t, db, clockKey, append(clockRecord(db.lastTicks, clockClean), 0))
		}, "none of its forms"},
		{"format version not recorded", func(t *testing.T, db *DB, tbl *Table) {
			require.NoError(t, db.store.Update(func(tx *storage.Txn) error { return tx.Delete(formatKey) }))
		}, "format version not recorded"},
		{"format version of another build", func(t *testing.T, db *DB, tbl *Table) {
			raw(t, db, formatKey, binary.BigEndian.AppendUint32(nil, formatVersion+1))
		}, "is not format version 4"},
		{"statistics off", func(t *testing.T, db *DB, tbl *Table) {
			raw(t, db, entityKey(tableID(t, tbl), "p", "unseen"), encodeRecord(1, nil, nil))
		}, "statistics say 3 entities"},
		{"record that does not decode", func(t *testing.T, db *DB, tbl *Table) {
			require.NoError(t, db.store.Update(func(tx *storage.Txn) error {
				return tx.Set(entityKey(tableID(t, tbl), "p", "a"), []byte{0xff, 0x00})
			}))
		}, "entity key"},
		{"catalog key of another name", func(t *testing.T, db *DB, tbl *Table) {
			rec := tableRecord{ID: tableID(t, tbl), Name: "Movies"}
			raw(t, db, tableKey("Series"), rec.encode())
		}, "share ID"},
		{"key outside the key space", func(t *testing.T, db *DB, tbl *Table) {
			raw(t, db, []byte("zebra"), nil)
		}, "no prefix of the key space"},
	}
	bothStores(t, func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				db, tbl := healthy(t)
				require.NoError(t, db.Check(ctx))
				c.damage(t, db, tbl)
				err := db.Check(ctx)
				if c.want == "" {
					assert.NoError(t, err)
					return
				}
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.want)
				require.NoError(t, db.Close()) // damaged on purpose: not checked at cleanup
			})
		}
	})
}
