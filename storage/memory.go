package storage

import (
	"bytes"
	"context"
	"errors"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/google/btree"
)

// The in-memory engine: an ordered B-tree of keys and values, with the same transactions as
// Badger's but none of its fixed costs. Badger in memory allocates about 90 MB before the
// first write (its memtable arena, caches and compaction machinery) and, keeping no value
// log, refuses large values and transactions; tuned tiny it still allocates 5 MB and refuses
// any transaction over 15% of its memtable. Here an open store is a few hundred bytes, and
// memory grows with the data alone.
//
// Snapshots: every commit publishes a new immutable tree, made from the previous one by a
// copy-on-write Clone, so a reader holds a consistent state for free and never blocks or is
// blocked.
//
// Transactions are optimistic, as Badger's are: a read-write transaction reads its start
// snapshot (and its own writes) and records what it read, every key it looked up and every
// key range it scanned; its commit fails with a conflict, and Update runs its closure again,
// if a transaction that committed after it started wrote any of them. That makes every
// transaction serializable, scans included (a key inserted into a scanned range is a
// conflict). Commits themselves are serialised by a mutex, held only to validate and publish.
// Writers are not simply serialised for the whole closure, because closures may commit other
// transactions from within (the Timestamp clock does), which would then wait for themselves.

// memDegree is the B-tree's degree: nodes hold up to 2×memDegree-1 entries.
const memDegree = 16

// memEntry is one key and its value, both in one allocation owned by the store. In the commit
// log, deleted marks a deletion.
type memEntry struct {
	key, value []byte
	deleted    bool
}

func memLess(a, b *memEntry) bool { return bytes.Compare(a.key, b.key) < 0 }

type memTree = btree.BTreeG[*memEntry]

// memSnapshot is one committed state: a tree nothing will change again, and the commit that
// produced it, from which the commits made since are reachable.
type memSnapshot struct {
	tree *memTree
	last *memCommit
}

// memCommit records the keys one commit wrote, for validating transactions that started
// before it. The log is linked forward only, so a commit is garbage once no transaction that
// started before it is still running.
type memCommit struct {
	keys [][]byte
	// everything says the commit replaced every key (a Restore): it conflicts with all.
	everything bool
	next       *memCommit // guarded by memDB.mu
}

// errMemConflict reports that a transaction read something a later commit changed.
var errMemConflict = errors.New("storage: transaction conflict")

// errClosed reports the use of a closed store.
var errClosed = errors.New("storage: the store is closed")

type memDB struct {
	// mu serialises commits, and the Clone of a committed tree (Clone writes to the tree it
	// clones).
	mu     sync.Mutex
	cur    atomic.Pointer[memSnapshot]
	closed atomic.Bool
	seed   maphash.Seed
}

func openMemory() *memDB {
	m := &memDB{seed: maphash.MakeSeed()}
	m.cur.Store(&memSnapshot{tree: btree.NewG(memDegree, memLess), last: &memCommit{}})
	return m
}

func (m *memDB) close() error {
	m.closed.Store(true)
	// Let the data go even if a caller keeps the DB.
	m.cur.Store(&memSnapshot{tree: btree.NewG(memDegree, memLess), last: &memCommit{}})
	return nil
}

// In memory, a disk is neither full nor damaged.
func (m *memDB) full() error                  { return nil }
func (m *memDB) verify(context.Context) error { return nil }
func (m *memDB) damage() error                { return nil }

func (m *memDB) view(fn func(*Txn) error) error {
	if m.closed.Load() {
		return errClosed
	}
	// A reader keeps only the tree: holding the snapshot would keep alive every commit
	// made while it runs.
	v := viewPool.Get().(*viewTxn)
	v.m = memTxn{db: m, start: m.cur.Load().tree}
	v.t = Txn{m: &v.m}
	err := fn(&v.t)
	*v = viewTxn{}
	viewPool.Put(v)
	return err
}

// updateNow is update: in memory, commits are not grouped.
func (m *memDB) updateNow(fn func(*Txn) error) error { return m.update(fn) }

func (m *memDB) update(fn func(*Txn) error) error {
	// The transaction, its read set and its write list come from a pool and are reused
	// from try to try: a single write then allocates only what it stores.
	v := viewPool.Get().(*viewTxn)
	defer func() {
		clear(v.m.reads)
		clear(v.m.writes)
		clear(v.m.ranges)
		*v = viewTxn{m: memTxn{reads: v.m.reads, writes: v.m.writes[:0], ranges: v.m.ranges[:0]}}
		viewPool.Put(v)
	}()
	for range maxConflictRetries {
		if m.closed.Load() {
			return errClosed
		}
		base := m.cur.Load()
		clear(v.m.reads)
		clear(v.m.writes)
		clear(v.m.ranges)
		v.m = memTxn{db: m, start: base.tree, base: base, update: true,
			reads: v.m.reads, writes: v.m.writes[:0], ranges: v.m.ranges[:0]}
		v.t = Txn{m: &v.m}
		t := &v.m
		if err := fn(&v.t); err != nil {
			return err
		}
		err := t.commit()
		if !errors.Is(err, errMemConflict) {
			return err
		}
		// Let the winner finish before competing again.
		runtime.Gosched()
	}
	return ErrContention
}

// memTxn is a transaction on the in-memory engine.
type memTxn struct {
	db *memDB
	// start is the tree the transaction began on; base, its snapshot, for read-write ones.
	start *memTree
	base  *memSnapshot
	// work is start with this transaction's writes; nil until the first write.
	work *memTree
	// writes are this transaction's writes in order, to replay onto a newer tree.
	writes []*memEntry
	update bool
	// reads and ranges are what a read-write transaction read (keys by hash; a collision
	// costs at most a needless retry).
	reads  map[uint64]struct{}
	ranges []memRange
	// pivot is the search key of get, kept here so that a lookup allocates none.
	pivot memEntry
}

// memRange is a scanned key range [lo, hi), unbounded above when open.
type memRange struct {
	lo, hi []byte
	open   bool
}

func (r *memRange) contains(k []byte) bool {
	return bytes.Compare(k, r.lo) >= 0 && (r.open || bytes.Compare(k, r.hi) < 0)
}

func (t *memTxn) tree() *memTree {
	if t.work != nil {
		return t.work
	}
	return t.start
}

func (t *memTxn) get(key []byte, fn func([]byte) error) (bool, error) {
	if t.update {
		if t.reads == nil {
			t.reads = make(map[uint64]struct{})
		}
		t.reads[maphash.Bytes(t.db.seed, key)] = struct{}{}
	}
	t.pivot.key = key
	e, ok := t.tree().Get(&t.pivot)
	t.pivot.key = nil
	if !ok {
		return false, nil
	}
	if fn == nil {
		return true, nil
	}
	return true, fn(e.value)
}

func (t *memTxn) writable() error {
	if !t.update {
		return errors.New("storage: write in a read-only transaction")
	}
	if t.work == nil {
		t.db.mu.Lock()
		t.work = t.start.Clone()
		t.db.mu.Unlock()
	}
	return nil
}

func (t *memTxn) set(key, value []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	// The store owns its bytes: callers may reuse theirs once the transaction ends.
	buf := make([]byte, len(key)+len(value))
	n := copy(buf, key)
	copy(buf[n:], value)
	e := &memEntry{key: buf[:n:n], value: buf[n:]}
	t.work.ReplaceOrInsert(e)
	t.writes = append(t.writes, e)
	return nil
}

func (t *memTxn) delete(key []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	e := &memEntry{key: bytes.Clone(key), deleted: true}
	t.work.Delete(e)
	t.writes = append(t.writes, e)
	return nil
}

func (t *memTxn) scan(lower, upper []byte) *memIter {
	tree := t.tree()
	if t.work != nil {
		// The iterator sees the transaction as it is now, whatever it writes later.
		tree = t.work.Clone()
	}
	it := &memIter{tree: tree, from: lower, upper: upper, chunk: 8, rng: -1}
	if t.update {
		lo := bytes.Clone(lower)
		if lo == nil {
			lo = []byte{}
		}
		t.ranges = append(t.ranges, memRange{lo: lo, hi: lo})
		it.txn, it.rng = t, len(t.ranges)-1
	}
	return it
}

// commit validates the transaction against the commits made since it started and publishes
// its writes.
func (t *memTxn) commit() error {
	if len(t.writes) == 0 {
		// It changed nothing: it is serializable at its snapshot.
		return nil
	}
	m := t.db
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return errClosed
	}
	cur := m.cur.Load()
	tree := t.work
	if cur != t.base {
		for c := t.base.last.next; c != nil; c = c.next {
			if t.conflicts(c) {
				return errMemConflict
			}
		}
		// Nothing it read changed: replay its writes onto the newest tree.
		tree = cur.tree.Clone()
		for _, e := range t.writes {
			if e.deleted {
				tree.Delete(e)
			} else {
				tree.ReplaceOrInsert(e)
			}
		}
	}
	c := &memCommit{keys: make([][]byte, len(t.writes))}
	for i, e := range t.writes {
		c.keys[i] = e.key
	}
	cur.last.next = c
	m.cur.Store(&memSnapshot{tree: tree, last: c})
	return nil
}

func (t *memTxn) conflicts(c *memCommit) bool {
	if c.everything {
		return true
	}
	for _, k := range c.keys {
		if _, ok := t.reads[maphash.Bytes(t.db.seed, k)]; ok {
			return true
		}
		for i := range t.ranges {
			if t.ranges[i].contains(k) {
				return true
			}
		}
	}
	return false
}

// memIter walks a tree in chunks: B-trees iterate by callback, so each chunk is collected
// by one descent and the next resumes after its last key. Chunks start small, for the
// common short scan, and grow.
type memIter struct {
	tree        *memTree
	from, upper []byte
	buf         []*memEntry
	pos         int
	chunk       int
	done        bool
	cur         *memEntry
	// txn and rng say where a read-write transaction records the range read so far.
	txn *memTxn
	rng int
}

const memMaxChunk = 256

func (it *memIter) next() bool {
	it.pos++
	if it.pos >= len(it.buf) {
		if it.done || !it.fill() {
			it.cur = nil
			return false
		}
	}
	it.cur = it.buf[it.pos]
	return true
}

// fill reads the next chunk and reports whether it holds anything.
func (it *memIter) fill() bool {
	clear(it.buf)
	it.buf, it.pos = it.buf[:0], 0
	n := it.chunk
	it.chunk = min(2*it.chunk, memMaxChunk)
	it.tree.AscendGreaterOrEqual(&memEntry{key: it.from}, func(e *memEntry) bool {
		if it.upper != nil && bytes.Compare(e.key, it.upper) >= 0 {
			return false
		}
		it.buf = append(it.buf, e)
		return len(it.buf) < n
	})
	if len(it.buf) < n {
		it.done = true
	} else {
		it.from = SuccessorOf(it.buf[len(it.buf)-1].key)
	}
	if it.txn != nil {
		r := &it.txn.ranges[it.rng]
		switch {
		case !it.done:
			r.hi = it.from
		case it.upper == nil:
			r.open = true
		default:
			r.hi = bytes.Clone(it.upper)
		}
	}
	return len(it.buf) > 0
}

func (it *memIter) close() {
	clear(it.buf)
	it.buf, it.cur, it.tree = nil, nil, nil
}
