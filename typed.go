package tabula

import (
	"context"
	"iter"
	"unsafe"
)

// Typed entities: Go structs in and out, on any TableAPI.
//
// A struct maps to an entity field by field, in the manner of encoding/json, through the
// "tabula" struct tag:
//
//	type Movie struct {
//		Genre     string    `tabula:"PartitionKey"` // or a field named PartitionKey
//		Title     string    `tabula:"RowKey"`
//		Timestamp time.Time // set on reads
//		ETag      tabula.ETag
//		Rating    float64
//		Year      int32    `tabula:"ReleaseYear"`
//		Views     int64    `tabula:",omitempty"`
//		ID        string   `tabula:"Id,Edm.Guid"`
//		Poster    []byte   // Edm.Binary
//		Secret    string   `tabula:"-"`
//		Rest      tabula.Properties // the properties no field names
//	}
//
// Go's type says the EDM type: string is Edm.String, []byte Edm.Binary, bool Edm.Boolean,
// time.Time (or tabula.DateTime) Edm.DateTime, float64 Edm.Double, [16]byte (tabula.Guid, a
// UUID type) Edm.Guid, int32 Edm.Int32, and int64 and int Edm.Int64; named types of these
// kinds map as their kind does. Where Go's type does not say it, the tag does: Edm.Guid on a
// string holds the Guid's text form, Edm.Int32 on an int64 or int field stores it as an Int32
// (a value beyond Int32 is an error), Edm.Int64 on an int32 one as an Int64. A pointer to any
// of these is a property that may be absent: nil is not written, and a property the entity
// lacks reads as nil. omitempty leaves out a zero value; "-" leaves the field out. Embedded
// structs without a tag are flattened, as encoding/json does; unexported fields are ignored.
//
// PartitionKey, RowKey (strings) and Timestamp (a time.Time, set on reads and ignored on
// writes, as the service ignores it) are fields of those names, or fields tagged with them. The
// ETag is a field of type tabula.ETag, or a string field named ETag; it is set on reads and
// ignored on writes: pass it to UpdateAs as the condition. A field of type tabula.Properties
// takes the properties no other field names, and gives them back on writes, so that reading
// an entity and replacing it never drops a property the struct does not know; without it,
// such properties are ignored on reads, and so dropped by a Replace.
//
// A property whose stored type is not its field's is an error naming the field, except that
// an Int32 reads into an Edm.Int64 field (int64 or int), which always holds it. Every rule of
// the service holds as for an Entity, with the same errors: the struct becomes an Entity to
// be checked (names, limits, Merge and Replace, ETags), and a zero time.Time, which predates
// the service's earliest DateTime, is refused unless omitempty leaves it out.
//
// The mapping is worked out once per type and cached; a struct that does not map is a
// *StructError naming the field. On the embedded engine, GetAs and QueryAs decode the stored
// record straight into the struct, without building Entity.Properties.

// GetAs reads one entity into a T; a missing one gives ResourceNotFound.
func GetAs[T any](ctx context.Context, t TableAPI, partitionKey, rowKey string) (T, error) {
	out := new(T)
	c, err := codecOf[T]()
	if err != nil {
		return *out, err
	}
	base := unsafe.Pointer(out)
	if src, ok := t.(recordSource); ok {
		err = src.lookupAs(ctx, c, base, partitionKey, rowKey)
	} else {
		var e Entity
		if e, err = t.Get(ctx, partitionKey, rowKey); err == nil {
			err = c.fill(base, &e)
		}
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return *out, nil
}

// InsertAs adds the entity v maps to, which must not exist yet (EntityAlreadyExists
// otherwise), and returns v with its Timestamp and ETag fields set to the stored version's.
func InsertAs[T any](ctx context.Context, t TableAPI, v T) (T, error) {
	c, e, err := structEntity(&v)
	if err != nil {
		return v, err
	}
	stored, err := t.Insert(ctx, e)
	if err != nil {
		return v, err
	}
	c.setVersion(unsafe.Pointer(&v), stored.Timestamp, stored.ETag)
	return v, nil
}

// UpdateAs changes the existing entity v maps to, in the given mode, if its current version
// matches ifMatch (such as v's ETag field as read, or AnyETag), and returns the new ETag.
func UpdateAs[T any](ctx context.Context, t TableAPI, v T, mode UpdateMode, ifMatch ETag) (ETag, error) {
	_, e, err := structEntity(&v)
	if err != nil {
		return "", err
	}
	return t.Update(ctx, e, mode, ifMatch)
}

// UpsertAs inserts the entity v maps to, or updates it in the given mode if it exists, and
// returns the new ETag.
func UpsertAs[T any](ctx context.Context, t TableAPI, v T, mode UpdateMode) (ETag, error) {
	_, e, err := structEntity(&v)
	if err != nil {
		return "", err
	}
	return t.Upsert(ctx, e, mode)
}

// QueryAs iterates over every entity matching q as a T, following continuation tokens, as
// QueryAll does. With q.Select, the fields of properties not selected stay zero.
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
		for e, err := range t.QueryAll(ctx, q) {
			var v T
			if err == nil {
				err = c.fill(unsafe.Pointer(&v), &e)
			}
			if !yield(v, err) || err != nil {
				return
			}
		}
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
