package tabula

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/tabuladb/tabula/odata"
	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// TableInfo describes a table.
type TableInfo struct {
	// Name is the name as the table was created; table names are case-insensitive.
	Name    string
	Created time.Time
}

// tableRecord is a table's catalog entry. It is read by every operation, so it is stored as
// fixed fields rather than msgpack: ID (8 bytes), creation ticks (8 bytes), then the name.
type tableRecord struct {
	ID      uint64
	Name    string
	Created int64 // ticks
}

func (r tableRecord) encode() []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16+len(r.Name)), r.ID)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Created))
	return append(b, r.Name...)
}

func decodeTableRecord(b []byte) (tableRecord, error) {
	if len(b) < 16 {
		return tableRecord{}, errCorrupt("table record too short")
	}
	return tableRecord{
		ID:      binary.BigEndian.Uint64(b),
		Created: int64(binary.BigEndian.Uint64(b[8:])),
		Name:    string(b[16:]),
	}, nil
}

// validateTableName applies the service's rules: 3 to 63 ASCII letters and digits starting
// with a letter, and not the reserved name "tables".
func validateTableName(name string) error {
	for i, c := range []byte(name) {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return ErrInvalidResourceName.WithDetail("table name %q: only ASCII letters and digits are allowed, starting with a letter", name)
		}
	}
	if len(name) < 3 || len(name) > 63 {
		return ErrOutOfRangeInput.WithMessage("The specified resource name length is not within the permissible limits.",
			"table name %q is %d characters long; it must be 3 to 63", name, len(name))
	}
	if strings.EqualFold(name, "tables") {
		return ErrInvalidResourceName.WithDetail("table name %q is reserved", name)
	}
	return nil
}

// CreateTable creates a table. A table of the same name in any letter case must not exist.
func (db *DB) CreateTable(ctx context.Context, name string) (*Table, error) {
	return db.Namespace("").CreateTable(ctx, name)
}

// CreateTable creates a table in the namespace. A table of the same name in any letter case
// must not exist in it; other namespaces do not matter.
func (n *Namespace) CreateTable(ctx context.Context, name string) (*Table, error) {
	db := n.db
	if err := validateTableName(name); err != nil {
		return nil, err
	}
	if err := admit(db.service.AdmitTableOp(n.name, partition.KindCreateTable), "create table"); err != nil {
		return nil, err
	}
	if err := db.deleting.check(n.name, name, db.clock()); err != nil {
		return nil, err
	}
	err := db.update(ctx, func(tx *storage.Txn) error {
		key := catalogKey(n.name, name)
		found, err := tx.Get(key, nil)
		if err != nil {
			return err
		}
		if found {
			return ErrTableAlreadyExists.WithDetail("table %q already exists", name)
		}
		id, err := allocateTableID(tx)
		if err != nil {
			return err
		}
		created, err := db.stamp()
		if err != nil {
			return err
		}
		return putTable(tx, n.name, tableRecord{ID: id, Name: name, Created: created})
	})
	if err != nil {
		return nil, err
	}
	return n.Table(name), nil
}

// allocateTableID takes the next table ID in tx. IDs are never reused (see keys.go).
func allocateTableID(tx *storage.Txn) (uint64, error) {
	var id uint64 = 1
	if _, err := tx.Get(nextTableIDKey, func(v []byte) error {
		id = binary.BigEndian.Uint64(v)
		return nil
	}); err != nil {
		return 0, err
	}
	return id, tx.Set(nextTableIDKey, binary.BigEndian.AppendUint64(nil, id+1))
}

// putTable writes rec as the catalog entry of its name in namespace ns: a new table, or,
// over an entry of another ID, the same table with new data (an import's publish).
func putTable(tx *storage.Txn, ns string, rec tableRecord) error {
	return tx.Set(catalogKey(ns, rec.Name), rec.encode())
}

// decodeCatalogEntry decodes a catalog key and its record: the table's namespace and entry.
func decodeCatalogEntry(key, v []byte) (ns string, rec tableRecord, err error) {
	if rec, err = decodeTableRecord(v); err != nil {
		return "", rec, err
	}
	if key[0] == prefixNamespaceTable {
		if ns, _, _, err = storage.NextPart(key[1:]); err != nil {
			return "", rec, errCorrupt("catalog key: " + err.Error())
		}
	}
	return ns, rec, nil
}

// everyTable calls fn with each table of the catalog in tx, of every namespace (the
// root's first, then the others in name order, each in name order), or of namespace
// *only when only is not nil.
func everyTable(tx *storage.Txn, only *string, fn func(ns string, rec tableRecord) error) error {
	for _, prefix := range []byte{prefixTable, prefixNamespaceTable} {
		lower, upper := []byte{prefix}, []byte{prefix + 1}
		if only != nil {
			if (*only == "") != (prefix == prefixTable) {
				continue
			}
			lower, upper = catalogBounds(*only)
		}
		if err := eachCatalogEntry(tx, lower, upper, fn); err != nil {
			return err
		}
	}
	return nil
}

func eachCatalogEntry(tx *storage.Txn, lower, upper []byte, fn func(ns string, rec tableRecord) error) error {
	it := tx.Scan(lower, upper)
	defer it.Close()
	for it.Next() {
		key := it.Key()
		if err := it.Value(func(v []byte) error {
			ns, rec, err := decodeCatalogEntry(key, v)
			if err != nil {
				return err
			}
			return fn(ns, rec)
		}); err != nil {
			return err
		}
	}
	return nil
}

// namespacesIn lists the namespaces in tx that have a table or service properties, the
// root namespace first.
func namespacesIn(tx *storage.Txn) ([]string, error) {
	seen := map[string]bool{"": true}
	out := []string{""}
	for _, prefix := range []byte{prefixNamespaceTable, prefixProperties} {
		it := tx.Scan([]byte{prefix}, []byte{prefix + 1})
		for it.Next() {
			name, _, _, err := storage.NextPart(it.Key()[1:])
			if err != nil {
				it.Close()
				return nil, errCorrupt(fmt.Sprintf("namespace key %x: %v", it.Key(), err))
			}
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
		it.Close()
	}
	slices.Sort(out[1:])
	return out, nil
}

// catalogTables returns the catalog entries of namespace ns in tx, in name order.
func catalogTables(tx *storage.Txn, ns string) ([]tableRecord, error) {
	var out []tableRecord
	err := everyTable(tx, &ns, func(_ string, rec tableRecord) error {
		out = append(out, rec)
		return nil
	})
	return out, err
}

// DeleteTable deletes a table and all its entities. A missing table gives ResourceNotFound,
// as on the service. The name is free again at once, and a table created under it starts
// empty; the old data is dropped in the background.
func (db *DB) DeleteTable(ctx context.Context, name string) error {
	return db.Namespace("").DeleteTable(ctx, name)
}

// DeleteTable deletes a table of the namespace and all its entities and access policies, as
// DB.DeleteTable does.
func (n *Namespace) DeleteTable(ctx context.Context, name string) error {
	db := n.db
	// Its steps after the commit must not straddle a Restore (see DB.Restore).
	db.restoreMu.RLock()
	defer db.restoreMu.RUnlock()
	if err := admit(db.service.AdmitTableOp(n.name, partition.KindDeleteTable), "delete table"); err != nil {
		return err
	}
	var rec tableRecord
	err := db.update(ctx, func(tx *storage.Txn) (err error) {
		rec, err = lookupTableIn(tx, n.name, name)
		if err != nil {
			if errors.Is(err, ErrTableNotFound) {
				if err := db.deleting.check(n.name, name, db.clock()); err != nil {
					return err
				}
				return ErrResourceNotFound.WithDetail("table %q does not exist", name)
			}
			return err
		}
		if r := db.flavor; r != nil {
			if err := r.checkTableName(rec.Name, name, ErrResourceNotFound); err != nil {
				return err
			}
		}
		if err := tx.Delete(catalogKey(n.name, name)); err != nil {
			return err
		}
		if err := tx.Delete(aclKey(rec.ID)); err != nil {
			return err
		}
		return tx.Set(dropKey(rec.ID), nil)
	})
	if err != nil {
		return err
	}
	db.forget(n.name, name)
	db.deleting.deleted(n.name, name, db.clock())
	db.service.DropTable(n.name, serviceTableName(n.name, rec.Name))
	db.dropInBackground(rec.ID)
	return nil
}

// dropInBackground deletes a dropped table's entities and then its drop marker. A crash or
// Close before it finishes leaves the marker, and the next Open finishes the job.
func (db *DB) dropInBackground(id uint64) {
	db.background.Go(func() {
		lower, upper := tableBounds(id)
		if err := db.store.DeleteRange(db.backgroundCtx, lower, upper); err != nil {
			return // the marker stays; the next Open retries
		}
		_ = db.store.Update(func(tx *storage.Txn) error { return tx.Delete(dropKey(id)) })
	})
}

// resumeDrops restarts the drops an earlier process did not finish.
func (db *DB) resumeDrops() error {
	var ids []uint64
	err := db.store.View(func(tx *storage.Txn) error {
		it := tx.Scan([]byte{prefixDrop}, []byte{prefixDrop + 1})
		defer it.Close()
		for it.Next() {
			if k := it.Key(); len(k) == 9 {
				ids = append(ids, binary.BigEndian.Uint64(k[1:]))
			}
		}
		return nil
	})
	for _, id := range ids {
		db.dropInBackground(id)
	}
	return storageError(err)
}

// lookupTable reads a table's catalog entry inside tx, so that the operation conflicts with
// (and is ordered against) a concurrent DeleteTable.
func lookupTable(tx *storage.Txn, name string) (tableRecord, error) {
	return lookupTableIn(tx, "", name)
}

// lookupTableIn is lookupTable in the namespace called ns.
func lookupTableIn(tx *storage.Txn, ns, name string) (tableRecord, error) {
	var rec tableRecord
	if validateTableName(name) != nil {
		return rec, ErrTableNotFound.WithDetail("table %q does not exist", name)
	}
	found, err := tx.Get(catalogKey(ns, name), func(v []byte) (err error) {
		rec, err = decodeTableRecord(v)
		return err
	})
	if err != nil {
		return rec, err
	}
	if !found {
		return rec, ErrTableNotFound.WithDetail("table %q does not exist", name)
	}
	return rec, nil
}

// MaxTablesPerPage is the most tables ListTables returns at once, as on the service.
const MaxTablesPerPage = 1000

// TableQuery selects a page of tables.
type TableQuery struct {
	// Filter is an OData $filter on the one property tables have, TableName, such as
	// "TableName ge 'A' and TableName lt 'B'". Empty means every table.
	Filter string
	// Top caps the page (1..1000); 0 means the maximum.
	Top int
	// NextTableName continues a listing where an earlier page ended.
	NextTableName string
}

// TablePage is one page of a table listing.
type TablePage struct {
	Tables []TableInfo
	// NextTableName is set when more tables follow; pass it in the next TableQuery.
	NextTableName string
}

// ListTables returns one page of tables in name order (names compared case-insensitively).
func (db *DB) ListTables(ctx context.Context, q TableQuery) (TablePage, error) {
	return db.Namespace("").ListTables(ctx, q)
}

// ListTables returns one page of the namespace's tables, as DB.ListTables does.
func (n *Namespace) ListTables(ctx context.Context, q TableQuery) (TablePage, error) {
	db := n.db
	top := q.Top
	if top < 0 || top > MaxTablesPerPage {
		return TablePage{}, ErrInvalidInput.WithDetail("top is %d; it must be 1 to %d", top, MaxTablesPerPage)
	}
	if top == 0 {
		top = MaxTablesPerPage
	}
	expr, err := parseFilter(q.Filter)
	if err != nil {
		return TablePage{}, err
	}
	if err := admit(db.service.AdmitTableOp(n.name, partition.KindQueryTables), "list tables"); err != nil {
		return TablePage{}, err
	}
	pred := odata.Compile(expr)
	lower, upper := catalogBounds(n.name)
	if q.NextTableName != "" {
		lower = catalogKey(n.name, q.NextTableName)
	}
	var page TablePage
	err = db.view(ctx, func(tx *storage.Txn) error {
		it := tx.Scan(lower, upper)
		defer it.Close()
		for it.Next() {
			var rec tableRecord
			if err := it.Value(func(v []byte) (err error) {
				rec, err = decodeTableRecord(v)
				return err
			}); err != nil {
				return err
			}
			if !pred.Match(tableNameRecord(rec.Name)) {
				continue
			}
			// A full page names the next table the filter selects, so that a listing ends
			// with the last one, as the service's does (recorded: aztables' TestQueryTable).
			if len(page.Tables) == top {
				page.NextTableName = rec.Name
				return nil
			}
			page.Tables = append(page.Tables, TableInfo{Name: rec.Name, Created: timeOfTicks(rec.Created)})
		}
		return nil
	})
	return page, err
}

// tableNameRecord is a table as a table filter sees it.
type tableNameRecord string

func (r tableNameRecord) Property(name string) (odata.Value, bool) {
	if name == "TableName" {
		return odata.StringValue(string(r)), true
	}
	return odata.Value{}, false
}

// Tables iterates over the tables a filter selects (every table when it is empty), in name
// order, following NextTableName.
func (db *DB) Tables(ctx context.Context, filter string) iter.Seq2[TableInfo, error] {
	return db.Namespace("").Tables(ctx, filter)
}

// Tables iterates over the namespace's tables, as DB.Tables does.
func (n *Namespace) Tables(ctx context.Context, filter string) iter.Seq2[TableInfo, error] {
	return func(yield func(TableInfo, error) bool) {
		q := TableQuery{Filter: filter}
		for {
			page, err := n.ListTables(ctx, q)
			if err != nil {
				yield(TableInfo{}, err)
				return
			}
			for _, t := range page.Tables {
				if !yield(t, nil) {
					return
				}
			}
			if page.NextTableName == "" {
				return
			}
			q.NextTableName = page.NextTableName
		}
	}
}
