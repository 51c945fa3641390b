package tabula

import (
	"context"
	"errors"

	"github.com/tabuladb/tabula/storage"
)

// AccountNamespaces returns the namespace each of accounts (the REST front end's storage
// accounts) keeps its data in, as recorded in the DB, and records the accounts not recorded
// yet. It is how the front end finds each account's tables by the account's name, whatever
// order the accounts are listed in: an account keeps its namespace across reopens, an account
// left out keeps its data untouched (and no other account reaches it), and a new account gets
// the namespace of its own name.
//
// A DB with no account recorded (new, or written before accounts were recorded) assigns as
// the front end always did: the first account gets the root namespace, the DB's own tables,
// and every other the namespace of its name; legacy reports that this happened to a DB
// already holding data, whose accounts the first listing decided and which the caller should
// make known.
//
// When every account is recorded already it writes nothing; a DB that refuses writes
// (ErrDiskFull, ErrDamaged) assigns the accounts not recorded as it would record them, and
// records nothing.
func (db *DB) AccountNamespaces(ctx context.Context, accounts []string) (assigned map[string]*Namespace, legacy bool, err error) {
	names := map[string]string{}
	all := false
	err = db.view(ctx, func(tx *storage.Txn) error {
		recorded, err := recordedOwners(tx)
		all = true
		for _, account := range accounts {
			ns, ok := recorded[account]
			all = all && ok
			names[account] = ns
		}
		return err
	})
	if err == nil && all {
		return assign(db, names), false, nil
	}
	err = db.update(ctx, func(tx *storage.Txn) error {
		clear(names)
		recorded, err := recordedOwners(tx)
		if err != nil {
			return err
		}
		legacy = false
		if len(recorded) == 0 && len(accounts) > 0 {
			if legacy, err = holdsData(tx); err != nil {
				return err
			}
		}
		for i, account := range accounts {
			ns, ok := namespaceOf(recorded, accounts, i)
			names[account] = ns
			if !ok {
				if err := tx.Set(ownerKey(account), []byte(ns)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if errors.Is(err, ErrDiskFull) || errors.Is(err, ErrDamaged) {
		// A database that refuses writes (its disk below the reserve, or damaged) still
		// serves every account: those not recorded get what recording would give them, and
		// are recorded at a later start that may write.
		err = db.view(ctx, func(tx *storage.Txn) error {
			recorded, err := recordedOwners(tx)
			clear(names)
			for i, account := range accounts {
				names[account], _ = namespaceOf(recorded, accounts, i)
			}
			return err
		})
	}
	if err != nil {
		return nil, false, err
	}
	return assign(db, names), legacy, nil
}

// namespaceOf returns the namespace of accounts[i]: the recorded one (ok), or the one
// recording gives it, the root namespace for the first account of a DB that recorded none
// and the namespace of its name otherwise.
func namespaceOf(recorded map[string]string, accounts []string, i int) (ns string, ok bool) {
	if ns, ok := recorded[accounts[i]]; ok {
		return ns, true
	}
	if len(recorded) == 0 && i == 0 {
		return "", false
	}
	return accounts[i], false
}

// recordedOwners reads the recorded accounts (owners, in the key space) and their namespaces.
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
