package tabula

import (
	"context"
	"slices"

	"github.com/tabuladb/tabula/storage"
)

// Namespace is a set of tables of its own inside a DB, as each storage account of the
// service has: a table in one namespace is invisible in every other, and two namespaces may
// hold tables of the same name. It is what the REST front end serves each account from.
//
// The DB's own methods (CreateTable, Table, ListTables …) work on the root namespace,
// Namespace(""); a namespace needs no creating, and holds nothing until a table is created
// in it. A Namespace is a cheap handle, safe for concurrent use.
type Namespace struct {
	db   *DB
	name string
}

// Namespace returns the namespace called name; "" is the root namespace, whose tables are the
// ones the DB's own methods see.
func (db *DB) Namespace(name string) *Namespace { return &Namespace{db: db, name: name} }

// Name returns the namespace's name ("" for the root namespace).
func (n *Namespace) Name() string { return n.name }

// Table returns a handle on a table of the namespace without checking that it exists, as
// DB.Table does.
func (n *Namespace) Table(name string) *Table { return &Table{db: n.db, ns: n.name, name: name} }

// serviceTableName is the name a table has in the simulated service (and its heat report):
// "namespace/Table" outside the root namespace.
func serviceTableName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// dropBatch is the most tables Drop deletes in one transaction, which keeps each well inside
// the store's transaction limits.
const dropBatch = 256

// Drop deletes the namespace's contents: every table with its entities and access policies,
// and the service properties, so that the namespace starts empty again, as a storage account
// deleted and created anew does. Tables go in transactions of up to 256, each one atomic;
// their entities are dropped in the background, as DeleteTable's are. Drop is not an
// operation of the service: fault injection and the limits do not apply to it.
func (n *Namespace) Drop(ctx context.Context) error {
	db := n.db
	// Its steps after each commit must not straddle a Restore (see DB.Restore).
	db.restoreMu.RLock()
	defer db.restoreMu.RUnlock()
	for {
		type dropped struct {
			id   uint64
			name string
		}
		var batch []dropped
		err := db.update(ctx, func(tx *storage.Txn) error {
			batch = batch[:0]
			lower, upper := catalogBounds(n.name)
			it := tx.Scan(lower, upper)
			var keys [][]byte
			for len(batch) < dropBatch && it.Next() {
				keys = append(keys, append([]byte(nil), it.Key()...))
				err := it.Value(func(v []byte) error {
					rec, err := decodeTableRecord(v)
					batch = append(batch, dropped{rec.ID, rec.Name})
					return err
				})
				if err != nil {
					it.Close()
					return err
				}
			}
			it.Close()
			for i, k := range keys {
				if err := tx.Delete(k); err != nil {
					return err
				}
				if err := tx.Delete(aclKey(batch[i].id)); err != nil {
					return err
				}
				if err := tx.Set(dropKey(batch[i].id), nil); err != nil {
					return err
				}
			}
			if len(batch) < dropBatch {
				return tx.Delete(propertiesKey(n.name))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, t := range batch {
			db.forget(n.name, t.name)
			db.service.DropTable(n.name, serviceTableName(n.name, t.name))
			db.dropInBackground(t.id)
		}
		if len(batch) < dropBatch {
			db.service.DropAccount(n.name)
			db.settingsMu.Lock()
			db.nsQueries.Delete(n.name)
			db.settingsMu.Unlock()
			return nil
		}
	}
}

// Namespaces returns the names of the namespaces other than the root that hold anything (a
// table or service properties), in order.
func (db *DB) Namespaces(ctx context.Context) ([]string, error) {
	var names []string
	err := db.view(ctx, func(tx *storage.Txn) error {
		seen := map[string]bool{}
		for _, prefix := range []byte{prefixNamespaceTable, prefixProperties} {
			it := tx.Scan([]byte{prefix}, []byte{prefix + 1})
			for it.Next() {
				ns, _, _, err := storage.NextPart(it.Key()[1:])
				if err != nil {
					it.Close()
					return errCorrupt("namespace key")
				}
				if ns != "" && !seen[ns] {
					seen[ns] = true
					names = append(names, ns)
				}
			}
			it.Close()
		}
		return nil
	})
	slices.Sort(names)
	return names, err
}
