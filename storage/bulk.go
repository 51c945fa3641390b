package storage

import (
	"errors"
	"fmt"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// Bulk writes a load of keys that nothing reads or writes until the load is done (the root
// package's import stages a table under an ID no catalog entry names, and publishes it
// after Flush). Such keys need none of a transaction's guarantees towards other writers, so
// on disk Bulk fills Badger transactions as large as Badger takes and commits them without
// waiting: while Badger writes one to its log and memtable, the caller prepares the next
// (as Badger's WriteBatch does). A transaction that reads nothing cannot conflict, and the
// keys' commit order does not matter while nobody sees them; the store's other rules hold
// as for Update: each commit is refused when the disk is below the reserve or the store is
// open read-only for lack of space.
//
// A Bulk is not safe for concurrent use; its writes become visible, in no particular
// order, as their transactions commit, and all of them once Flush returns. Cancel (or a
// failed Flush) leaves some committed and some not: the caller must be able to delete
// the range (the import's staged table has a drop marker for that).
type Bulk struct{ w bulkWriter }

// bulkWriter is a Bulk on one engine: badgerBulk on disk, memBulk in memory.
type bulkWriter interface {
	set(key, value []byte) error
	flush() error
	cancel()
}

// NewBulk starts a bulk load.
func (d *DB) NewBulk() *Bulk { return &Bulk{w: d.e.newBulk()} }

// Set writes value under key. Neither slice may change until Flush or Cancel returns.
func (b *Bulk) Set(key, value []byte) error { return b.w.set(key, value) }

// Flush commits what Set gave and waits until every write is committed and visible. The
// Bulk can go on after it.
func (b *Bulk) Flush() error { return b.w.flush() }

// Cancel drops the writes not yet committed and waits for the commits under way.
func (b *Bulk) Cancel() { b.w.cancel() }

// badgerBulk is a Bulk on disk.
type badgerBulk struct {
	d        *badgerDB
	txn      *badger.Txn // the transaction being filled, nil before the first Set
	n        int         // writes in txn
	valueLog bool        // a value in txn goes to the value log (see badgerDB.commit)

	// slots bounds the commits in flight, and so the memory they hold; done counts them.
	slots chan struct{}
	done  sync.WaitGroup
	mu    sync.Mutex
	err   error // the first failed commit's
}

// bulkInFlight is how many of a Bulk's commits may wait for Badger at once: two keep its
// writer busy while the caller fills the next, and each holds a transaction of up to 15% of
// a memtable.
const bulkInFlight = 2

// memBulkBytes is how much a Bulk on the in-memory store gathers before applying it.
const memBulkBytes = 4 << 20

func (d *badgerDB) newBulk() bulkWriter {
	return &badgerBulk{d: d, slots: make(chan struct{}, bulkInFlight)}
}

func (b *badgerBulk) set(key, value []byte) error {
	if err := b.failed(); err != nil {
		return err
	}
	if b.txn == nil {
		if err := b.begin(); err != nil {
			return err
		}
	}
	err := b.txn.Set(key, value)
	if errors.Is(err, badger.ErrTxnTooBig) && b.n > 0 {
		if err := b.commit(true); err != nil {
			return err
		}
		err = b.txn.Set(key, value)
	}
	if errors.Is(err, badger.ErrTxnTooBig) {
		return ErrTooLarge
	}
	if err != nil {
		return fmt.Errorf("storage: set: %w", err)
	}
	b.n++
	b.valueLog = b.valueLog || b.d.inValueLog(value)
	return nil
}

func (b *badgerBulk) flush() error {
	var err error
	if b.txn != nil {
		err = b.commit(false)
	}
	b.done.Wait()
	return errors.Join(err, b.failed())
}

func (b *badgerBulk) cancel() {
	if b.txn != nil {
		b.txn.Discard()
		b.txn, b.n, b.valueLog = nil, 0, false
	}
	b.done.Wait()
}

// begin starts the next transaction, on a store that takes writes (as Update would find it:
// one opened read-only for lack of space becomes writable once there is space again).
func (b *badgerBulk) begin() error {
	d := b.d
	if ro := d.space.readOnly.Load(); ro != nil && !d.reopenWritable() {
		return d.space.refuse(ro)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.bdb.IsClosed() {
		return badger.ErrDBClosed
	}
	b.txn = d.bdb.NewTransaction(true)
	return nil
}

func (b *badgerBulk) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// commit sends the transaction being filled to Badger, with the checks Update makes first,
// and returns at once: its outcome is the Bulk's next error, if it fails. With next, it
// begins the next transaction first: a transaction begun after a commit waits for that
// commit to be written (its read timestamp is the commit's), which would leave the caller
// and Badger's writer taking turns; one begun before does not, and reading nothing it
// cannot conflict.
func (b *badgerBulk) commit(next bool) error {
	txn, valueLog := b.txn, b.valueLog
	b.txn, b.valueLog = nil, false
	if b.n == 0 {
		txn.Discard()
		return nil
	}
	b.n = 0
	if next {
		if err := b.begin(); err != nil {
			txn.Discard()
			return err
		}
	}
	d := b.d
	if err := d.space.full(); err != nil {
		txn.Discard()
		return d.space.refuse(err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.bdb.IsClosed() {
		txn.Discard()
		return badger.ErrDBClosed
	}
	if valueLog && !d.sync {
		// It must be made alone and synced (see badgerDB.commit), so waiting is the only way.
		b.fail(d.commit(txn, true))
		return nil
	}
	b.slots <- struct{}{}
	b.done.Add(1)
	d.commits.RLock() // until Badger has written it (see syncLogs)
	txn.CommitWith(func(err error) {
		d.commits.RUnlock()
		defer b.done.Done()
		<-b.slots
		b.fail(err)
	})
	return nil
}

// fail records the error of a commit, if it failed, as the Bulk's, unless one came first.
func (b *badgerBulk) fail(err error) {
	if err == nil {
		return
	}
	if errors.Is(err, badger.ErrTxnTooBig) {
		err = ErrTooLarge
	} else {
		err = fmt.Errorf("storage: commit: %w", err)
	}
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
}

// memBulk is a Bulk in memory: it gathers up to memBulkBytes of writes and applies them in
// one transaction.
type memBulk struct {
	m      *memDB
	writes [][2][]byte // not yet applied
	size   int
}

func (m *memDB) newBulk() bulkWriter { return &memBulk{m: m} }

func (b *memBulk) set(key, value []byte) error {
	b.writes = append(b.writes, [2][]byte{key, value})
	if b.size += len(key) + len(value); b.size >= memBulkBytes {
		return b.flush()
	}
	return nil
}

func (b *memBulk) cancel() { b.writes, b.size = nil, 0 }

// flush applies the writes gathered in one transaction.
func (b *memBulk) flush() error {
	if len(b.writes) == 0 {
		return nil
	}
	writes := b.writes
	b.writes, b.size = nil, 0
	return b.m.update(func(tx *Txn) error {
		for _, w := range writes {
			if err := tx.Set(w[0], w[1]); err != nil {
				return err
			}
		}
		return nil
	})
}
