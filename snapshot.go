package tabula

import (
	"bytes"
	"context"
	"encoding/binary"
	"iter"
	"slices"
	"sync"

	"github.com/tabuladb/tabula/storage"
)

// Snapshot is a database as it was at one instant: every namespace, table, entity, stored
// access policy and service-properties document, with the table-ID counter and the Timestamp
// clock. It stays as it was whatever is written to the database afterwards, and it reads the
// same whichever goroutine reads it (it is safe for concurrent use). Tabula's own feature,
// beyond the service.
//
// Of an in-memory database, a snapshot is one immutable copy-on-write tree: taking it, opening
// a new database from it (Open) and putting a database back to it (DB.Restore) each cost a few
// allocations, whatever the data, so a test suite seeds a fixture once and gives every test a
// copy of its own. Of a database on disk, it is a consistent view for export and backup while
// the database goes on serving writes; the store keeps every version it can see until Close,
// so close it when done.
type Snapshot struct {
	store *storage.Snapshot
	// lastTicks is the last Timestamp the database had handed out when the snapshot was
	// taken: at or after every Timestamp it holds.
	lastTicks int64

	// db is the database on disk the snapshot reads, which closes it on Close; nil in memory.
	db        *DB
	closeOnce sync.Once

	// stats caches what each table holds per PartitionKey (countStored), for the databases
	// opened from or restored to the snapshot: see DB.storedStats. nextID is the snapshot's
	// table-ID counter, read with the first count (haveNextID).
	statsMu    sync.Mutex
	stats      map[uint64][]storedPartition
	nextID     uint64
	haveNextID bool
}

// ErrRestoreOnDisk is Tabula's own error (not the service's) for DB.Restore on a database on
// disk or from a snapshot of one: only an in-memory database can be put back to a snapshot at
// once. A 409 on the wire, as for a request the resource's state refuses.
var ErrRestoreOnDisk = NewError("RestoreOnDisk", 409,
	"Only an in-memory database can be restored from a snapshot, and only from a snapshot of one.")

// Snapshot returns the database as it is now (see Snapshot). Writes under way when it is taken
// are either wholly in it or not at all.
func (db *DB) Snapshot(ctx context.Context) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	db.snapMu.Lock()
	defer db.snapMu.Unlock()
	if db.closed() {
		return nil, ErrInternal.WithDetail("the database is closed")
	}
	st, err := db.store.Snapshot()
	if err != nil {
		return nil, storageError(err)
	}
	// Taken after the store's snapshot: every Timestamp it holds was handed out before.
	db.stampMu.Lock()
	s := &Snapshot{store: st, lastTicks: db.lastTicks}
	db.stampMu.Unlock()
	if !st.InMemory() {
		s.db = db
		if db.snaps == nil {
			db.snaps = map[*Snapshot]struct{}{}
		}
		db.snaps[s] = struct{}{}
	}
	return s, nil
}

// InMemory reports whether the snapshot is of an in-memory database, which Open copies and
// DB.Restore restores at once.
func (s *Snapshot) InMemory() bool { return s.store.InMemory() }

// Close releases the snapshot; reading it afterwards fails. A snapshot on disk holds the
// versions it sees on disk until it is closed, or until its database is. An in-memory
// snapshot needs no closing: it goes when nothing refers to it, and databases opened from it
// live on. Calling Close again is harmless.
func (s *Snapshot) Close() error {
	s.closeOnce.Do(func() {
		if s.db != nil {
			s.db.snapMu.Lock()
			delete(s.db.snaps, s)
			s.db.snapMu.Unlock()
		}
		s.store.Release()
	})
	return nil
}

// closeSnapshots closes the database's snapshots on disk, before the store closes.
func (db *DB) closeSnapshots() {
	db.snapMu.Lock()
	snaps := make([]*Snapshot, 0, len(db.snaps))
	for s := range db.snaps {
		snaps = append(snaps, s)
	}
	db.snapMu.Unlock()
	for _, s := range snaps {
		_ = s.Close()
	}
}

// Open opens a new in-memory database holding the snapshot's data, with opts as OpenInMemory
// takes them: independent of the snapshot, of the database it was taken from and of every
// other database opened from it, each seeing only its own writes. Its Timestamps go on after
// every one in the snapshot. From an in-memory snapshot it costs a few allocations, whatever
// the data (the databases share the tree's nodes, each copying a node the first time it
// writes to it); from a snapshot on disk it copies the data into memory.
func (s *Snapshot) Open(opts *Options) (*DB, error) {
	store, err := s.store.Open()
	if err != nil {
		return nil, storageError(err)
	}
	db, err := openOn(store, opts, "", &s.lastTicks)
	if err == nil && s.store.InMemory() {
		db.base.Store(s)
	}
	return db, err
}

// Restore puts the database back to the snapshot, at once: afterwards it holds exactly what
// the snapshot holds, namespaces, tables, entities, access policies and service properties,
// and its Timestamps go on after every one it handed out before and every one in the
// snapshot. An operation under way either ends before the restore or runs after it, on the
// restored data. The snapshot may come from this database or from another.
//
// Only an in-memory database, from an in-memory snapshot, can be restored (ErrRestoreOnDisk
// otherwise); it costs a few allocations, whatever the data.
func (db *DB) Restore(ctx context.Context, s *Snapshot) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.store.InMemory() {
		return ErrRestoreOnDisk.WithDetail("the snapshot is of a database on disk")
	}
	db.restoreMu.Lock()
	defer db.restoreMu.Unlock()
	if db.closed() {
		return ErrInternal.WithDetail("the database is closed")
	}
	// Every open table goes, as DeleteTable's does: writes under way end first, and later
	// ones resolve their table again, in the restored catalog. A resolution that raced the
	// restore sees gen move and reads the catalog again.
	db.open.mu.Lock()
	// Dropping a table deleted since the snapshot would delete it from the restored data,
	// and counts of the tables going are of no use. Under open.mu, so that no resolution
	// starts a count meanwhile (see countInBackground).
	db.stopBackground()
	db.background.Wait()
	db.backgroundCtx, db.stopBackground = context.WithCancel(context.Background())
	db.forgetAll()
	err := db.store.Restore(s.store)
	if err == nil {
		db.base.Store(s)
	}
	db.open.gen.Add(1)
	db.open.mu.Unlock()
	if err != nil {
		if err == storage.ErrOnDisk {
			return ErrRestoreOnDisk.WithDetail("the database is on disk")
		}
		return storageError(err)
	}

	db.advanceClock(s.lastTicks, true)
	db.deleting.mu.Lock()
	db.deleting.since = nil
	db.deleting.mu.Unlock()
	return db.resumeDrops()
}

// storedStats returns what the table whose ID is id holds, per PartitionKey, for its first
// resolution (see resolve). A database opened from a snapshot, or restored to one, holds the
// snapshot's data in every table of the snapshot not resolved since, because every write to
// an existing table resolves it first: the count comes from the snapshot, once for all its
// databases, and a table's first use in a copy costs what it has partitions, not entities.
// A table ID the snapshot had not handed out yet (a table created since, an import's staged
// table, written before it is published) is counted in the database itself.
func (db *DB) storedStats(ctx context.Context, tx *storage.Txn, id uint64) ([]storedPartition, error) {
	s := db.base.Load()
	if s == nil {
		return countStored(ctx, tx, id)
	}
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	if p, ok := s.stats[id]; ok {
		return p, nil
	}
	if !s.haveNextID {
		err := s.store.View(func(tx *storage.Txn) error {
			s.nextID = 1
			_, err := tx.Get(nextTableIDKey, func(v []byte) error {
				s.nextID = binary.BigEndian.Uint64(v)
				return nil
			})
			return err
		})
		if err != nil {
			return nil, err
		}
		s.haveNextID = true
	}
	if id >= s.nextID {
		return countStored(ctx, tx, id)
	}
	var p []storedPartition
	err := s.store.View(func(tx *storage.Txn) (err error) {
		p, err = countStored(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	if s.stats == nil {
		s.stats = map[uint64][]storedPartition{}
	}
	s.stats[id] = p
	return p, nil
}

// SnapshotTable is a table as a Snapshot holds it.
type SnapshotTable struct {
	// Namespace is the table's namespace ("" for the root namespace).
	Namespace string
	TableInfo
	id uint64
}

// snapshotChunk bounds what one read of a snapshot collects before handing it out: the
// iterators below hold nothing of the store while their caller's loop body runs.
const (
	snapshotChunk      = 256
	snapshotChunkBytes = 4 << 20
)

// scanSnapshot iterates over the decoded records of [lower, upper), a chunk per read.
func scanSnapshot[T any](ctx context.Context, s *Snapshot, lower, upper []byte, decode func(key, value []byte) (T, bool, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		var buf []T
		lower := lower
		for {
			if err := ctx.Err(); err != nil {
				yield(zero, err)
				return
			}
			buf = buf[:0]
			more := false
			err := s.store.View(func(tx *storage.Txn) error {
				it := tx.Scan(lower, upper)
				defer it.Close()
				size := 0
				for it.Next() {
					if len(buf) >= snapshotChunk || size >= snapshotChunkBytes {
						lower, more = bytes.Clone(it.Key()), true
						return nil
					}
					key := it.Key()
					err := it.Value(func(v []byte) error {
						size += len(key) + len(v)
						r, ok, err := decode(key, v)
						if ok {
							buf = append(buf, r)
						}
						return err
					})
					if err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				yield(zero, storageError(err))
				return
			}
			for _, r := range buf {
				if !yield(r, nil) {
					return
				}
			}
			if !more {
				return
			}
		}
	}
}

// Tables iterates over every table of every namespace in the snapshot: the root namespace's
// first, then each other namespace's, namespaces in the order of their names and each
// namespace's tables in name order (names compared case-insensitively).
func (s *Snapshot) Tables(ctx context.Context) iter.Seq2[SnapshotTable, error] {
	return func(yield func(SnapshotTable, error) bool) {
		decode := func(key, v []byte) (SnapshotTable, bool, error) {
			ns, rec, err := decodeCatalogEntry(key, v)
			if err != nil {
				return SnapshotTable{}, false, err
			}
			return SnapshotTable{TableInfo: TableInfo{Name: rec.Name, Created: timeOfTicks(rec.Created)}, Namespace: ns, id: rec.ID}, true, nil
		}
		for _, prefix := range []byte{prefixTable, prefixNamespaceTable} {
			for t, err := range scanSnapshot(ctx, s, []byte{prefix}, []byte{prefix + 1}, decode) {
				if !yield(t, err) || err != nil {
					return
				}
			}
		}
	}
}

// Entities iterates over the table's entities in the snapshot in key order (PartitionKey,
// then RowKey, as a query returns them), each with its Timestamp and ETag.
func (s *Snapshot) Entities(ctx context.Context, t SnapshotTable) iter.Seq2[Entity, error] {
	lower, upper := tableBounds(t.id)
	return scanSnapshot(ctx, s, lower, upper, func(key, v []byte) (Entity, bool, error) {
		pk, rk, err := decodeEntityKey(key)
		if err != nil {
			return Entity{}, false, err
		}
		e := Entity{PartitionKey: pk, RowKey: rk, Properties: Properties{}}
		d := decoderPool.Get().(*recordDecoder)
		defer decoderPool.Put(d)
		ticks, err := d.decode(v, nil, e.Properties)
		e.Timestamp, e.ETag = timeOfTicks(ticks), etagOf(ticks)
		return e, err == nil, err
	})
}

// AccessPolicies returns the table's stored access policies in the snapshot, in the order
// they were set.
func (s *Snapshot) AccessPolicies(ctx context.Context, t SnapshotTable) ([]AccessPolicy, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []AccessPolicy
	err := s.store.View(func(tx *storage.Txn) (err error) {
		out, err = readAccessPolicies(tx, t.id)
		return err
	})
	return out, storageError(err)
}

// ServiceProperties returns the namespace's service-properties document in the snapshot (see
// Namespace.ServiceProperties), or nil when none was stored.
func (s *Snapshot) ServiceProperties(ctx context.Context, namespace string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var doc []byte
	err := s.store.View(func(tx *storage.Txn) error {
		_, err := tx.Get(propertiesKey(namespace), func(v []byte) error {
			doc = bytes.Clone(v)
			return nil
		})
		return err
	})
	return doc, storageError(err)
}

// Namespaces returns the names of the namespaces in the snapshot that hold a table or a
// service-properties document, in name order ("" first, when the root namespace holds one).
func (s *Snapshot) Namespaces(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	for t, err := range s.Tables(ctx) {
		if err != nil {
			return nil, err
		}
		seen[t.Namespace] = true
	}
	props := scanSnapshot(ctx, s, []byte{prefixProperties}, []byte{prefixProperties + 1},
		func(key, _ []byte) (string, bool, error) {
			ns, _, _, err := storage.NextPart(key[1:])
			if err != nil {
				return "", false, errCorrupt("service properties key: " + err.Error())
			}
			return ns, true, nil
		})
	for ns, err := range props {
		if err != nil {
			return nil, err
		}
		seen[ns] = true
	}
	out := make([]string, 0, len(seen))
	for ns := range seen {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out, nil
}
