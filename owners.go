package tabula

import (
	"context"
	"errors"

	"github.com/tabuladb/tabula/storage"
)

// AssignNamespaces returns the namespace each of owners keeps its data in, as recorded in the
// DB, and records the owners not recorded yet. It is how the REST front end finds each storage
// account's tables by the account's name, whatever order the accounts are listed in: an owner
// keeps its namespace across reopens, an owner left out keeps its data untouched (and no other
// owner reaches it), and a new owner gets the namespace of its own name.
//
// A DB with no owner recorded (new, or written before owners were recorded) assigns as the
// front end always did: the first owner gets the root namespace, the DB's own tables, and
// every other the namespace of its name; legacy reports that this happened to a DB already
// holding data, whose owners the first listing decided and which the caller should make known.
//
// When every owner is recorded already it writes nothing; a DB that refuses writes (ErrDiskFull,
// ErrDamaged) assigns the owners not recorded as it would record them, and records nothing.
func (db *DB) AssignNamespaces(ctx context.Context, owners []string) (assigned map[string]*Namespace, legacy bool, err error) {
	names := map[string]string{}
	all := false
	err = db.view(ctx, func(tx *storage.Txn) error {
		recorded, err := recordedOwners(tx)
		all = true
		for _, owner := range owners {
			ns, ok := recorded[owner]
			all = all && ok
			names[owner] = ns
		}
		return err
	})
	if err == nil && all {
		return assign(db, names), false, nil
	}
	err = db.update(ctx, func(tx *storage.Txn) error {
		clear(names)
		legacy = false
		recorded, err := recordedOwners(tx)
		if err != nil {
			return err
		}
		first := len(recorded) == 0
		if first {
			held, err := holdsData(tx)
			if err != nil {
				return err
			}
			legacy = held && len(owners) > 0
		}
		for i, owner := range owners {
			if ns, ok := recorded[owner]; ok {
				names[owner] = ns
				continue
			}
			ns := owner
			if first && i == 0 {
				ns = ""
			}
			names[owner] = ns
			if err := tx.Set(ownerKey(owner), []byte(ns)); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, ErrDiskFull) || errors.Is(err, ErrDamaged) {
		// A database that refuses writes (its disk below the reserve, or damaged) still
		// serves every owner: those not recorded get what recording would give them, and are
		// recorded at a later start that may write.
		err = db.view(ctx, func(tx *storage.Txn) error {
			recorded, err := recordedOwners(tx)
			clear(names)
			for i, owner := range owners {
				ns, ok := recorded[owner]
				if !ok {
					ns = owner
					if len(recorded) == 0 && i == 0 {
						ns = ""
					}
				}
				names[owner] = ns
			}
			return err
		})
	}
	if err != nil {
		return nil, false, err
	}
	return assign(db, names), legacy, nil
}

// recordedOwners reads the recorded owners and their namespaces.
func recordedOwners(tx *storage.Txn) (map[string]string, error) {
	recorded := map[string]string{}
	it := tx.Scan([]byte{prefixOwner}, []byte{prefixOwner + 1})
	defer it.Close()
	for it.Next() {
		owner, _, _, err := storage.NextPart(it.Key()[1:])
		if err != nil {
			return nil, errCorrupt("owner key")
		}
		if err := it.Value(func(v []byte) error { recorded[owner] = string(v); return nil }); err != nil {
			return nil, err
		}
	}
	return recorded, nil
}

func assign(db *DB, names map[string]string) map[string]*Namespace {
	assigned := make(map[string]*Namespace, len(names))
	for owner, ns := range names {
		assigned[owner] = db.Namespace(ns)
	}
	return assigned
}

// holdsData reports whether the DB holds a table or service properties.
func holdsData(tx *storage.Txn) (bool, error) {
	for _, prefix := range []byte{prefixTable, prefixNamespaceTable, prefixProperties} {
		it := tx.Scan([]byte{prefix}, []byte{prefix + 1})
		found := it.Next()
		it.Close()
		if found {
			return true, nil
		}
	}
	return false, nil
}
