package tabula

import (
	"context"

	"github.com/tabuladb/tabula/storage"
)

// Table returns a handle on the named table without checking that it exists; operations on
// a missing table fail with TableNotFound. Handles are cheap and safe for concurrent use.
func (db *DB) Table(name string) *Table {
	return &Table{db: db, name: name}
}

// Table is a handle on one table; see DB.Table.
type Table struct {
	db   *DB
	name string
}

// Name returns the name the handle was made with.
func (t *Table) Name() string { return t.name }

// UpdateMode says what an update does with properties the new entity does not carry.
type UpdateMode int

const (
	// Replace drops every property the new entity does not carry (PUT on the service).
	Replace UpdateMode = iota
	// Merge keeps them, overwriting only the properties given (MERGE on the service).
	Merge
)

// Insert adds an entity that must not exist yet (EntityAlreadyExists otherwise) and returns
// it as stored, with its Timestamp and ETag.
func (t *Table) Insert(ctx context.Context, e Entity) (Entity, error) {
	ticks, err := t.applyOne(ctx, InsertAction(e))
	if err != nil {
		return Entity{}, err
	}
	out := Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Timestamp: timeOfTicks(ticks), ETag: etagOf(ticks),
		Properties: make(Properties, len(e.Properties))}
	for name, v := range e.Properties {
		if v != nil {
			out.Properties[name] = v
		}
	}
	return out, nil
}

// Get reads one entity; a missing one gives ResourceNotFound. With selected names, only
// those properties are returned (the keys, Timestamp and ETag always are).
func (t *Table) Get(ctx context.Context, partitionKey, rowKey string, selected ...string) (Entity, error) {
	if err := validateKeys(partitionKey, rowKey); err != nil {
		return Entity{}, err
	}
	e := Entity{PartitionKey: partitionKey, RowKey: rowKey, Properties: Properties{}}
	var keep func(string) bool
	if len(selected) > 0 {
		keep = func(name string) bool {
			for _, s := range selected {
				if s == name {
					return true
				}
			}
			return false
		}
	}
	err := t.db.view(ctx, func(tx *storage.Txn) error {
		key, err := t.entityKey(tx, partitionKey, rowKey)
		if err != nil {
			return err
		}
		found, err := tx.Get(key, func(v []byte) error {
			d := decoderPool.Get().(*recordDecoder)
			defer decoderPool.Put(d)
			ticks, err := d.decode(v, keep, e.Properties)
			e.Timestamp, e.ETag = timeOfTicks(ticks), etagOf(ticks)
			return err
		})
		if err == nil && !found {
			err = errEntityNotFound(partitionKey, rowKey)
		}
		return err
	})
	if err != nil {
		return Entity{}, err
	}
	return e, nil
}

// Update changes an existing entity if its current version matches ifMatch (an ETag from an
// earlier read or write, or AnyETag; empty means AnyETag). A missing entity gives
// ResourceNotFound; a changed one UpdateConditionNotSatisfied. It returns the new ETag.
func (t *Table) Update(ctx context.Context, e Entity, mode UpdateMode, ifMatch ETag) (ETag, error) {
	ticks, err := t.applyOne(ctx, UpdateAction(e, mode, ifMatch))
	if err != nil {
		return "", err
	}
	return etagOf(ticks), nil
}

// Upsert inserts the entity, or updates it in the given mode if it exists (the service's
// InsertOrReplace and InsertOrMerge). It returns the new ETag.
func (t *Table) Upsert(ctx context.Context, e Entity, mode UpdateMode) (ETag, error) {
	ticks, err := t.applyOne(ctx, UpsertAction(e, mode))
	if err != nil {
		return "", err
	}
	return etagOf(ticks), nil
}

// Delete removes an entity if its current version matches ifMatch (an ETag, or AnyETag;
// empty means AnyETag). A missing entity gives ResourceNotFound.
func (t *Table) Delete(ctx context.Context, partitionKey, rowKey string, ifMatch ETag) error {
	_, err := t.applyOne(ctx, DeleteAction(partitionKey, rowKey, ifMatch))
	return err
}

// applyOne validates one action and applies it in a transaction of its own, returning the
// Timestamp it wrote.
func (t *Table) applyOne(ctx context.Context, a Action) (int64, error) {
	if err := a.validate(); err != nil {
		return 0, err
	}
	var ticks int64
	err := t.db.update(ctx, func(tx *storage.Txn) error {
		rec, err := lookupTable(tx, t.name)
		if err != nil {
			return err
		}
		ticks, err = t.db.apply(tx, rec.ID, &a)
		return err
	})
	return ticks, err
}

// apply performs one validated action on the entities of table id inside tx and returns the
// Timestamp it wrote (0 for a Delete). It is the one place that gives Insert, Update, Upsert
// and Delete their meaning, for single operations and transactions alike.
func (db *DB) apply(tx *storage.Txn, id uint64, a *Action) (int64, error) {
	e := &a.Entity
	key := entityKey(id, e.PartitionKey, e.RowKey)
	props := e.Properties
	switch a.Kind {
	case ActionInsert:
		found, err := tx.Get(key, nil)
		if err != nil {
			return 0, err
		}
		if found {
			return 0, ErrEntityAlreadyExists.with("entity (%q, %q) already exists", e.PartitionKey, e.RowKey)
		}
	case ActionDelete:
		var ticks int64
		found, err := tx.Get(key, func(v []byte) (derr error) {
			ticks, derr = recordTicks(v)
			return derr
		})
		if err != nil {
			return 0, err
		}
		if err := checkIfMatch(found, ticks, e, a.IfMatch); err != nil {
			return 0, err
		}
		return 0, tx.Delete(key)
	default: // ActionUpdate, ActionUpsert
		var oldTicks int64
		var old Properties
		if a.Mode == Merge {
			old = Properties{} // only a Merge needs the stored properties
		}
		found, err := tx.Get(key, func(v []byte) error {
			d := decoderPool.Get().(*recordDecoder)
			defer decoderPool.Put(d)
			var derr error
			oldTicks, derr = d.decode(v, nil, old)
			return derr
		})
		if err != nil {
			return 0, err
		}
		if a.Kind == ActionUpdate {
			if err := checkIfMatch(found, oldTicks, e, a.IfMatch); err != nil {
				return 0, err
			}
		}
		if a.Mode == Merge && found {
			for name, v := range e.Properties {
				if v != nil {
					old[name] = v
				}
			}
			props = old
			// The merged entity may break a limit that neither part broke alone.
			merged := Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Properties: props}
			if err := validateEntity(&merged); err != nil {
				return 0, err
			}
		}
	}
	ticks, err := db.stamp()
	if err != nil {
		return 0, err
	}
	size := EntitySize(&Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Properties: props})
	return ticks, tx.Set(key, encodeRecord(ticks, props, size))
}

// checkIfMatch applies an If-Match condition to the stored version of e: the entity must
// exist (ResourceNotFound) and be the version ifMatch names (UpdateConditionNotSatisfied).
func checkIfMatch(found bool, ticks int64, e *Entity, ifMatch ETag) error {
	if !found {
		return errEntityNotFound(e.PartitionKey, e.RowKey)
	}
	if !ifMatch.matches(ticks) {
		return ErrUpdateConditionNotSatisfied.with("entity (%q, %q) has ETag %s, not %s",
			e.PartitionKey, e.RowKey, etagOf(ticks), ifMatch)
	}
	return nil
}

// entityKey resolves the table inside tx and returns the entity's key.
func (t *Table) entityKey(tx *storage.Txn, pk, rk string) ([]byte, error) {
	rec, err := lookupTable(tx, t.name)
	if err != nil {
		return nil, err
	}
	return entityKey(rec.ID, pk, rk), nil
}

func validateKeys(pk, rk string) error {
	if err := validateKey(propPartitionKey, pk); err != nil {
		return err
	}
	return validateKey(propRowKey, rk)
}

func errEntityNotFound(pk, rk string) error {
	return ErrResourceNotFound.with("entity (%q, %q) does not exist", pk, rk)
}

// recordTicks reads only the Timestamp of a stored record.
func recordTicks(v []byte) (int64, error) {
	d := decoderPool.Get().(*recordDecoder)
	defer decoderPool.Put(d)
	return d.decode(v, nil, nil)
}
