package storage

import (
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/btree"
)

// Snapshot is the store as it was at one instant, readable for as long as it is kept (see
// View), whatever is written to the store meanwhile. In memory it is one immutable tree: taking
// it and opening stores from it (Open) costs a few allocations, whatever the data. On disk it
// is a Badger read transaction, pinned at the instant it was taken: Badger keeps every version
// it can see until Release, so a snapshot kept for long holds disk space.
//
// A Snapshot is safe for concurrent use.
type Snapshot struct {
	// In memory: tree is a tree nothing writes to; mu serialises its Clones (Clone writes to
	// the tree it clones).
	tree *memTree
	mu   sync.Mutex

	// On disk: txn is a read-only transaction of bdb, guarded by rw: reads hold it
	// read-locked, Release exclusively, so Release waits for the reads under way. A store
	// reopened since (writable again once the disk has space, see reopenWritable) has closed
	// bdb, and the snapshot with it.
	txn      *badger.Txn
	bdb      *badger.DB
	db       *badgerDB
	rw       sync.RWMutex
	released bool
}

// errReleased reports a read of a released Snapshot.
var errReleased = errors.New("storage: the snapshot was released")

// errReopened reports a read of a snapshot on disk whose store was reopened since.
var errReopened = errors.New("storage: the store was reopened (writable again) since the snapshot; take another")

// ErrOnDisk reports an operation only an in-memory store offers.
var ErrOnDisk = errors.New("storage: only an in-memory store can do that")

// Snapshot returns the store as it is now.
func (d *DB) Snapshot() (*Snapshot, error) { return d.e.snapshot() }

func (m *memDB) snapshot() (*Snapshot, error) {
	if m.closed.Load() {
		return nil, errClosed
	}
	m.mu.Lock()
	tree := m.cur.Load().tree.Clone()
	m.mu.Unlock()
	return &Snapshot{tree: tree}, nil
}

func (d *badgerDB) snapshot() (*Snapshot, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.bdb.IsClosed() {
		return nil, errClosed
	}
	return &Snapshot{txn: d.bdb.NewTransaction(false), bdb: d.bdb, db: d}, nil
}

// InMemory reports whether the snapshot is of an in-memory store.
func (s *Snapshot) InMemory() bool { return s.tree != nil }

// View runs fn in the snapshot. fn must not keep the Txn, or anything it hands out, after it
// returns. On disk, Release waits for fn, so fn should not wait on anything but the store.
func (s *Snapshot) View(fn func(*Txn) error) error {
	if s.tree != nil {
		return fn(&Txn{m: &memTxn{start: s.tree}})
	}
	s.rw.RLock()
	defer s.rw.RUnlock()
	if s.released {
		return errReleased
	}
	s.db.mu.RLock()
	defer s.db.mu.RUnlock()
	if s.db.bdb != s.bdb || s.bdb.IsClosed() {
		return errReopened
	}
	return fn(&Txn{t: s.txn, db: s.db})
}

// Release lets the store forget what only the snapshot still sees, once the reads under way
// end; the snapshot is then unreadable on disk. Close the store only after releasing its
// snapshots. Calling it again is harmless. In memory it does nothing: the tree goes when the
// last reference to the snapshot does.
func (s *Snapshot) Release() {
	if s.tree != nil {
		return
	}
	s.rw.Lock()
	defer s.rw.Unlock()
	if !s.released {
		s.released = true
		s.db.mu.RLock()
		defer s.db.mu.RUnlock()
		// A closed Badger has forgotten its transactions.
		if s.db.bdb == s.bdb && !s.bdb.IsClosed() {
			s.txn.Discard()
		}
	}
}

// clone returns a tree holding the snapshot's data that the caller may own and write to.
func (s *Snapshot) clone() *memTree {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tree.Clone()
}

// Open returns a new in-memory store holding the snapshot's data, independent of the
// snapshot, of the store it was taken from and of every other store opened from it. From an
// in-memory snapshot it costs a few allocations, whatever the data (the stores share the
// tree's nodes, each copying a node the first time it writes to it); from a snapshot on disk
// it copies every key.
func (s *Snapshot) Open() (*DB, error) {
	var tree *memTree
	if s.tree != nil {
		tree = s.clone()
	} else {
		tree = btree.NewG(memDegree, memLess)
		err := s.View(func(tx *Txn) error {
			it := tx.Scan(nil, nil)
			defer it.Close()
			for it.Next() {
				key := it.Key()
				if err := it.Value(func(v []byte) error {
					buf := make([]byte, len(key)+len(v))
					n := copy(buf, key)
					copy(buf[n:], v)
					tree.ReplaceOrInsert(&memEntry{key: buf[:n:n], value: buf[n:]})
					return nil
				}); err != nil {
					return fmt.Errorf("storage: copying a snapshot: %w", err)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	m := &memDB{seed: maphash.MakeSeed()}
	m.cur.Store(&memSnapshot{tree: tree, last: &memCommit{}})
	return newMemoryDB(m), nil
}

// Restore replaces everything the in-memory store holds with the snapshot's data, in one
// atomic step that costs a few allocations, whatever the data: a transaction that began
// before it fails its commit with a conflict, and Update runs its closure again, on the
// restored data. A store on disk refuses with ErrOnDisk, as does a snapshot on disk.
func (d *DB) Restore(s *Snapshot) error { return d.e.restore(s) }

func (d *badgerDB) restore(*Snapshot) error { return ErrOnDisk }

func (m *memDB) restore(s *Snapshot) error {
	if s.tree == nil {
		return ErrOnDisk
	}
	tree := s.clone()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return errClosed
	}
	cur := m.cur.Load()
	c := &memCommit{everything: true}
	cur.last.next = c
	m.cur.Store(&memSnapshot{tree: tree, last: c})
	return nil
}
