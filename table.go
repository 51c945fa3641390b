package tabula

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/tabuladb/tabula/partition"
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
	ns   string // the namespace's name; "" for the DB's own tables
	name string
	open atomic.Pointer[openTable] // the table last resolved under name
}

// SplitRangePartition makes a range partition start at partitionKey in the simulated
// service, as its load balancer would, and reports whether it did (false when one already
// starts there). It is Tabula's own tool, the service cannot be told to split: tests use it
// to put a range boundary where they want one, for instance to exercise a client's
// continuation handling with Options.BoundaryContinuations.
func (t *Table) SplitRangePartition(ctx context.Context, partitionKey string) (bool, error) {
	ot, err := t.resolve(ctx)
	if err != nil {
		return false, err
	}
	return ot.service.SplitAt(partitionKey), nil
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
	var keep func(string) bool
	if len(selected) > 0 {
		var err error
		if keep, err = selectFilter(selected); err != nil {
			return Entity{}, err
		}
	}
	op := getOpPool.Get().(*getOp)
	defer op.release()
	op.keep = keep
	if err := t.lookup(ctx, op, partitionKey, rowKey); err != nil {
		return Entity{}, err
	}
	return op.e, nil
}

// lookup reads the entity of the valid keys pk and rk through op: into op.e, or, when op has
// a sink, as its stored record to the sink (the typed read, GetAs).
func (t *Table) lookup(ctx context.Context, op *getOp, pk, rk string) error {
	op.pk, op.rk = pk, rk
	// What Table.read does, without a closure per read.
	for {
		ot, err := t.resolve(ctx)
		if err != nil {
			return err
		}
		err = admit(ot.service.Admit(pk, partition.KindGet, 1), "get")
		if err == nil {
			op.key = appendEntityKey(op.key[:0], ot.rec.ID, pk, rk)
			if op.sink == nil {
				op.e = Entity{PartitionKey: pk, RowKey: rk, Properties: Properties{}}
			}
			err = t.db.view(ctx, op.view)
		}
		if ot.dropped.Load() {
			continue
		}
		return err
	}
}

// getOp is the state of one Table.Get, pooled with its methods bound once, so that a point
// read allocates only what it returns.
type getOp struct {
	pk, rk string
	keep   func(string) bool
	key    []byte
	e      Entity
	sink   func(record []byte) error // takes the record in place of e, when set
	view   func(*storage.Txn) error  // getOp.read
	value  func([]byte) error        // getOp.decode
}

var getOpPool = sync.Pool{New: func() any {
	op := &getOp{}
	op.view, op.value = op.read, op.decode
	return op
}}

func (op *getOp) read(tx *storage.Txn) error {
	found, err := tx.Get(op.key, op.value)
	if err == nil && !found {
		err = errEntityNotFound(op.pk, op.rk)
	}
	return err
}

func (op *getOp) decode(v []byte) error {
	if op.sink != nil {
		return op.sink(v)
	}
	d := decoderPool.Get().(*recordDecoder)
	defer decoderPool.Put(d)
	ticks, err := d.decode(v, op.keep, op.e.Properties)
	op.e.Timestamp, op.e.ETag = timeOfTicks(ticks), etagOf(ticks)
	return err
}

func (op *getOp) release() {
	op.pk, op.rk, op.keep, op.e, op.sink = "", "", nil, Entity{}, nil
	if cap(op.key) > 1024 {
		op.key = nil // not worth keeping for every later read
	}
	getOpPool.Put(op)
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
	names, err := a.validate()
	if err != nil {
		return 0, err
	}
	if r := t.db.flavor; r != nil {
		if err := r.checkAction(&a); err != nil {
			return 0, err
		}
	}
	return t.applyValid(ctx, a, names, nil)
}

// applyBody is applyOne for an Insert, or an Update or Upsert in Replace mode, of the keys
// of a.Entity, whose properties are the record's body (what follows its Timestamp, as
// structCodec.appendBody encodes it), validated by the caller by the rules validate and
// the DB's flavour apply. The typed writes come this way, without building Properties.
func (t *Table) applyBody(ctx context.Context, a Action, body []byte) (int64, error) {
	return t.applyValid(ctx, a, nil, body)
}

// typedBodies reports whether applyBody may be used: not under a flavour's rules, which
// read an entity's Properties.
func (t *Table) typedBodies() bool { return t.db.flavor == nil }

// applyValid applies a validated action, whose record is body when body is not nil.
func (t *Table) applyValid(ctx context.Context, a Action, names []string, body []byte) (int64, error) {
	ot, err := t.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer ot.mu.RUnlock()
	if err := admit(ot.service.Admit(a.Entity.PartitionKey, a.kind(), 1), a.Kind.String()); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil { // as DB.update
		return 0, err
	}
	op := writeOpPool.Get().(*writeOp)
	op.db, op.ctx, op.id, op.a, op.names, op.body = t.db, ctx, ot.rec.ID, a, names, body
	err = storageError(t.db.store.Update(op.run))
	out := op.out
	op.arena.reset() // the commit is over
	*op = writeOp{run: op.run, arena: op.arena}
	writeOpPool.Put(op)
	if err != nil {
		return 0, err
	}
	ot.service.RecordWrite(a.Entity.PartitionKey, out.entities, out.bytes)
	return out.ticks, nil
}

// writeOp is one action of applyOne on its way through the store, pooled with its closure
// bound once: a single write allocates no closure, and its Action is not moved to the heap.
type writeOp struct {
	db    *DB
	ctx   context.Context
	id    uint64
	a     Action
	names []string
	body  []byte // the record's properties, encoded, when the action has no Properties
	out   applied
	run   func(*storage.Txn) error // writeOp.apply
	arena writeArena               // the write's key and record
}

var writeOpPool = sync.Pool{New: func() any {
	op := &writeOp{}
	op.run = op.apply
	return op
}}

// apply is DB.update's closure for the action: it may run more than once.
func (op *writeOp) apply(tx *storage.Txn) (err error) {
	if op.out, err = op.db.applyRecord(tx, op.id, &op.a, op.names, op.body, &op.arena); err != nil {
		return err
	}
	return op.ctx.Err()
}

// applied is what an action did: the Timestamp it wrote (0 for a Delete) and the change in
// stored entities and bytes, for the range partitions' statistics.
type applied struct {
	ticks           int64
	entities, bytes int64
}

// apply performs one validated action on the entities of table id inside tx and reports what
// it did; names are the action's property names as validate returned them. It is the one
// place that gives Insert, Update, Upsert and Delete their meaning, for single operations and
// transactions alike. The key and record it writes are carved from arena, which must hold
// them until the commit is over.
func (db *DB) apply(tx *storage.Txn, id uint64, a *Action, names []string, arena *writeArena) (applied, error) {
	return db.applyRecord(tx, id, a, names, nil, arena)
}

// applyRecord is apply, with the record's properties already encoded in body when it is not
// nil (Table.applyBody: never a Merge).
func (db *DB) applyRecord(tx *storage.Txn, id uint64, a *Action, names []string, body []byte, arena *writeArena) (applied, error) {
	e := &a.Entity
	start := len(arena.b)
	arena.b = appendEntityKey(arena.b, id, e.PartitionKey, e.RowKey)
	key := arena.carve(start)
	props := e.Properties
	var (
		found   bool
		oldSize int64 // bytes stored for the entity before, key included
		err     error
	)
	switch a.Kind {
	case ActionInsert:
		if found, err = tx.Get(key, nil); err != nil {
			return applied{}, err
		}
		if found {
			return applied{}, ErrEntityAlreadyExists.WithDetail("entity (%q, %q) already exists", e.PartitionKey, e.RowKey)
		}
	case ActionDelete:
		var ticks int64
		found, err = tx.Get(key, func(v []byte) (derr error) {
			oldSize = int64(len(key) + len(v))
			ticks, derr = recordTicks(v)
			return derr
		})
		if err != nil {
			return applied{}, err
		}
		if err := checkIfMatch(found, ticks, e, a.IfMatch); err != nil {
			return applied{}, err
		}
		return applied{entities: -1, bytes: -oldSize}, tx.Delete(key)
	default: // ActionUpdate, ActionUpsert
		var oldTicks int64
		var old Properties
		if a.Mode == Merge {
			old = Properties{} // only a Merge needs the stored properties
		}
		found, err = tx.Get(key, func(v []byte) error {
			oldSize = int64(len(key) + len(v))
			d := decoderPool.Get().(*recordDecoder)
			defer decoderPool.Put(d)
			var derr error
			oldTicks, derr = d.decode(v, nil, old)
			return derr
		})
		if err != nil {
			return applied{}, err
		}
		if a.Kind == ActionUpdate {
			if err := checkIfMatch(found, oldTicks, e, a.IfMatch); err != nil {
				return applied{}, err
			}
		}
		if a.Mode == Merge && found {
			if names, err = mergeProperties(e.PartitionKey, e.RowKey, old, e.Properties); err != nil {
				return applied{}, err
			}
			props = old
		}
	}
	ticks, err := db.stamp()
	if err != nil {
		return applied{}, err
	}
	start = len(arena.b)
	if body != nil {
		arena.b = append(appendRecordHead(arena.b, ticks), body...)
	} else {
		arena.b = appendRecord(arena.b, ticks, props, names)
	}
	record := arena.carve(start)
	out := applied{ticks: ticks, bytes: int64(len(key)+len(record)) - oldSize}
	if !found {
		out.entities = 1
	}
	return out, tx.Set(key, record)
}

// mergeProperties is Merge's rule, for apply and the import alike: the given properties
// over the stored ones, old, which it changes (a nil value leaves a property as stored).
// The merged entity must keep every limit, which neither part may break alone; it returns
// the merged entity's property names, as validateEntity does.
func mergeProperties(pk, rk string, old, given Properties) ([]string, error) {
	for name, v := range given {
		if v != nil {
			old[name] = v
		}
	}
	merged := Entity{PartitionKey: pk, RowKey: rk, Properties: old}
	return validateEntity(&merged)
}

// checkIfMatch applies an If-Match condition to the stored version of e: the entity must
// exist (ResourceNotFound) and be the version ifMatch names (UpdateConditionNotSatisfied).
func checkIfMatch(found bool, ticks int64, e *Entity, ifMatch ETag) error {
	if !found {
		return errEntityNotFound(e.PartitionKey, e.RowKey)
	}
	if !ifMatch.matches(ticks) {
		return ErrUpdateConditionNotSatisfied.WithDetail("entity (%q, %q) has ETag %s, not %s",
			e.PartitionKey, e.RowKey, etagOf(ticks), ifMatch)
	}
	return nil
}

func validateKeys(pk, rk string) error {
	if _, err := validateKey(propPartitionKey, pk); err != nil {
		return err
	}
	_, err := validateKey(propRowKey, rk)
	return err
}

func errEntityNotFound(pk, rk string) error {
	return ErrResourceNotFound.WithDetail("entity (%q, %q) does not exist", pk, rk)
}

// recordTicks reads only the Timestamp of a stored record.
func recordTicks(v []byte) (int64, error) {
	d := decoderPool.Get().(*recordDecoder)
	defer decoderPool.Put(d)
	return d.decode(v, nil, nil)
}
