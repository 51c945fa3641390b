package tabula

import (
	"context"
	"iter"
	"unsafe"
)

// Typed entities: Go structs in and out, on any TableAPI. The mapping is documented in the
// package documentation, "Go structs as entities" (doc.go); it is worked out in typed_codec.go.

// GetAs reads one entity into a T; a missing one gives ResourceNotFound. On the embedded
// table the stored record is decoded straight into the T, and on package remote's table
// the response's JSON; on another TableAPI the entity Get returns is converted, as
// EntityAs does.
func GetAs[T any](ctx context.Context, t TableAPI, partitionKey, rowKey string) (T, error) {
	var v T
	c, err := codecOf[T]()
	if err != nil {
		return v, err
	}
	if src, ok := t.(recordSource); ok {
		// Decoded into the pooled get's T and copied out, so that the T is not allocated.
		g, _ := c.gets.Get().(*typedGetOf[T])
		if g == nil {
			g = newTypedGet[T](c)
		}
		err = src.lookupAs(ctx, &g.typedGet, partitionKey, rowKey)
		v, g.v = g.v, v
		c.gets.Put(g)
	} else {
		v, err = getVia[T](ctx, c, t, partitionKey, rowKey)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// InsertAs adds the entity v maps to, which must not exist yet (EntityAlreadyExists
// otherwise), and returns v with its Timestamp and ETag fields set to the stored version's.
// On the embedded table v is checked and encoded as a record without building its Entity.
func InsertAs[T any](ctx context.Context, t TableAPI, v T) (T, error) {
	c, err := codecOf[T]()
	if err != nil {
		return v, err
	}
	base := unsafe.Pointer(&v)
	var stored Entity
	if w, ok := t.(recordWrites); ok && w.typedBodies() {
		var ticks int64
		if ticks, err = writeStruct(ctx, w, c, base, ActionInsert, ""); err == nil {
			stored.Timestamp, stored.ETag = timeOfTicks(ticks), etagOf(ticks)
		}
	} else {
		var e Entity
		if e, err = c.entity(base); err == nil {
			stored, err = t.Insert(ctx, e)
		}
	}
	if err != nil {
		return v, err
	}
	c.setVersion(base, stored.Timestamp, stored.ETag)
	return v, nil
}

// UpdateAs changes the existing entity v maps to, in the given mode, if its current version
// matches ifMatch (such as v's ETag field as read, or AnyETag), and returns the new ETag.
func UpdateAs[T any](ctx context.Context, t TableAPI, v T, mode UpdateMode, ifMatch ETag) (ETag, error) {
	return writeAs(ctx, t, &v, ActionUpdate, mode, ifMatch)
}

// UpsertAs inserts the entity v maps to, or updates it in the given mode if it exists, and
// returns the new ETag.
func UpsertAs[T any](ctx context.Context, t TableAPI, v T, mode UpdateMode) (ETag, error) {
	return writeAs(ctx, t, &v, ActionUpsert, mode, "")
}

// writeAs is UpdateAs and UpsertAs: on the embedded table, a Replace encodes v as a record
// without building its Entity; a Merge, which merges with the stored entity's Properties,
// builds it.
func writeAs[T any](ctx context.Context, t TableAPI, v *T, kind ActionKind, mode UpdateMode, ifMatch ETag) (ETag, error) {
	c, err := codecOf[T]()
	if err != nil {
		return "", err
	}
	base := unsafe.Pointer(v)
	if w, ok := t.(recordWrites); ok && mode == Replace && w.typedBodies() {
		ticks, err := writeStruct(ctx, w, c, base, kind, ifMatch)
		if err != nil {
			return "", err
		}
		return etagOf(ticks), nil
	}
	e, err := c.entity(base)
	if err != nil {
		return "", err
	}
	if kind == ActionUpdate {
		return t.Update(ctx, e, mode, ifMatch)
	}
	return t.Upsert(ctx, e, mode)
}

// QueryAs iterates over every entity matching q as a T, following continuation tokens, as
// QueryAll does. With q.Select, the fields of properties not selected stay zero. An entity
// that does not fit T (a property of another type than its field's) ends the iteration with
// its *StructError, after the Ts before it. On the embedded table each page's records are
// decoded straight into Ts, and on package remote's table each page's JSON.
func QueryAs[T any](ctx context.Context, t TableAPI, q Query) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		c, err := codecOf[T]()
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		if src, ok := t.(recordSource); ok {
			queryRecordsAs(ctx, src, c, q, yield)
			return
		}
		queryVia(ctx, c, t, q, yield)
	}
}

// EntityOf returns the Entity that v maps to, as the typed writes send it.
func EntityOf[T any](v T) (Entity, error) {
	_, e, err := structEntity(&v)
	return e, err
}

// EntityAs returns e as a T, as the typed reads fill it: for instance the entity of a
// Retrieve action's result.
func EntityAs[T any](e Entity) (T, error) {
	var v T
	c, err := codecOf[T]()
	if err == nil {
		err = c.fill(unsafe.Pointer(&v), &e)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// InsertActionOf returns a transaction action that inserts the entity v maps to.
func InsertActionOf[T any](v T) (Action, error) {
	e, err := EntityOf(v)
	return InsertAction(e), err
}

// UpdateActionOf returns a transaction action that updates the entity v maps to in the given
// mode if it matches ifMatch.
func UpdateActionOf[T any](v T, mode UpdateMode, ifMatch ETag) (Action, error) {
	e, err := EntityOf(v)
	return UpdateAction(e, mode, ifMatch), err
}

// UpsertActionOf returns a transaction action that inserts or updates the entity v maps to.
func UpsertActionOf[T any](v T, mode UpdateMode) (Action, error) {
	e, err := EntityOf(v)
	return UpsertAction(e, mode), err
}

func structEntity[T any](v *T) (*structCodec, Entity, error) {
	c, err := codecOf[T]()
	if err != nil {
		return nil, Entity{}, err
	}
	e, err := c.entity(unsafe.Pointer(v))
	return c, e, err
}
