package storage

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/ristretto/v2/z"
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
type Bulk struct {
	d        *DB
	txn      *badger.Txn // on disk: the transaction being filled, nil before the first Set
	n        int         // writes in txn
	valueLog bool        // a value in txn goes to the value log (see DB.commit)

	// slots bounds the commits in flight, and so the memory they hold; done counts them.
	slots chan struct{}
	done  sync.WaitGroup
	mu    sync.Mutex
	err   error // the first failed commit's

	mem     [][2][]byte // in memory: the writes not yet applied
	memSize int
}

// bulkInFlight is how many of a Bulk's commits may wait for Badger at once: two keep its
// writer busy while the caller fills the next, and each holds a transaction of up to 15% of
// a memtable.
const bulkInFlight = 2

// memBulkBytes is how much a Bulk on the in-memory store gathers before applying it.
const memBulkBytes = 4 << 20

// NewBulk starts a bulk load.
func (d *DB) NewBulk() *Bulk {
	return &Bulk{d: d, slots: make(chan struct{}, bulkInFlight)}
}

// Set writes value under key. Neither slice may change until Flush or Cancel returns.
func (b *Bulk) Set(key, value []byte) error {
	if b.d.mem != nil {
		b.mem = append(b.mem, [2][]byte{key, value})
		if b.memSize += len(key) + len(value); b.memSize >= memBulkBytes {
			return b.applyMem()
		}
		return nil
	}
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

// Flush commits what Set gave and waits until every write is committed and visible. The
// Bulk can go on after it.
func (b *Bulk) Flush() error {
	if b.d.mem != nil {
		return b.applyMem()
	}
	var err error
	if b.txn != nil {
		err = b.commit(false)
	}
	b.done.Wait()
	return errors.Join(err, b.failed())
}

// Cancel drops the writes not yet committed and waits for the commits under way.
func (b *Bulk) Cancel() {
	if b.txn != nil {
		b.txn.Discard()
		b.txn, b.n, b.valueLog = nil, 0, false
	}
	b.mem, b.memSize = nil, 0
	b.done.Wait()
}

// begin starts the next transaction, on a store that takes writes (as Update would find it:
// one opened read-only for lack of space becomes writable once there is space again).
func (b *Bulk) begin() error {
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

func (b *Bulk) failed() error {
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
func (b *Bulk) commit(next bool) error {
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
		// It must be made alone and synced (see DB.commit), so waiting is the only way.
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
func (b *Bulk) fail(err error) {
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

// applyMem applies the writes gathered in memory in one transaction.
func (b *Bulk) applyMem() error {
	if len(b.mem) == 0 {
		return nil
	}
	writes := b.mem
	b.mem, b.memSize = nil, 0
	return b.d.Update(func(tx *Txn) error {
		for _, w := range writes {
			if err := tx.Set(w[0], w[1]); err != nil {
				return err
			}
		}
		return nil
	})
}

// Load writes keys given in ascending order straight into the LSM tree, below what it
// holds, as table files (Badger's StreamWriter): no log, no memtable, and no compaction
// rewrites them level by level on the way down, so a load costs about one write of its
// bytes where a Bulk costs one per level (about six for a gigabyte at the default budget).
// Badger takes no other write while it streams, so from NewLoad until Finish or Cancel a
// Load holds off every other use of the store, reads too: its caller must use the store for
// nothing else meanwhile (it would wait for itself). It is for a load nothing else uses the
// store during (an import into a database opened for it).
//
// The keys are visible once Finish returns, and durable: the table files and the value
// log are synced before it does. A crash or Cancel before leaves some of them written: as
// with a Bulk, the caller must be able to delete the range.
type Load struct {
	d       *DB
	sw      *badger.StreamWriter
	buf     *z.Buffer // the writes being gathered
	kv      pb.KV
	version uint64 // of every key written: after every one the store holds
	last    []byte // the last key given
	ended   bool

	// Badger's StreamWriter decodes and copies what it is given before its own goroutine
	// builds tables from it; a goroutine of the Load's hands it the chunks (full) while
	// Set gathers the next one in a spare buffer, so that the caller's work and that
	// decoding overlap on two cores.
	full, spare chan *z.Buffer
	written     chan struct{} // closed when the goroutine has handed its last chunk
	mu          sync.Mutex
	err         error // the first failed hand-over's
}

// ErrNoLoad is NewLoad's refusal when the store cannot be loaded that way, or not cheaply:
// it is in memory, open read-only, opened with SyncWrites (whose value-log collection runs
// beside), or holds more than a few tables already (Badger merges its levels into one
// before it streams; see loadMaxTree). A Bulk does the same job.
var ErrNoLoad = errors.New("storage: the store does not take a direct load; use a Bulk")

// errUnsorted is Load.Set's refusal of a key not after the one before.
var errUnsorted = errors.New("storage: load: keys out of order")

// loadChunk is how many bytes of writes a Load gathers before it hands them to Badger; the
// table being built holds at most a table's worth more.
const loadChunk = 4 << 20

// loadMaxTree is the size of the largest LSM tree a Load starts on. Badger streams only into
// a tree with nothing in level 0 and its memtables empty, so NewLoad writes them out and
// Badger merges what is above the lowest level into it: cheap for a new store or one a
// previous load filled, a rewrite of the store for one that grew by ordinary writes.
func loadMaxTree(bo badger.Options) int64 { return 8 * bo.MemTableSize }

// NewLoad starts a direct load (see Load), or refuses with ErrNoLoad. It waits for the uses
// of the store under way to end.
func (d *DB) NewLoad() (*Load, error) {
	// A store with SyncWrites collects value-log garbage in the background, with a pass that
	// holds an iterator of the Badger instance across a moment with no lock held
	// (collectGarbage): the reopen below would close it under the pass's feet.
	if d.mem != nil || d.damaged != nil || d.space.readOnly.Load() != nil || d.stopGC != nil {
		return nil, ErrNoLoad
	}
	if err := d.refuseFailed(); err != nil {
		return nil, err
	}
	if err := d.space.full(); err != nil {
		return nil, d.space.refuse(err)
	}
	d.mu.Lock()
	held := true
	defer func() {
		if held {
			d.mu.Unlock()
		}
	}()
	if d.bdb.IsClosed() {
		return nil, badger.ErrDBClosed
	}
	var tree int64
	for _, l := range d.bdb.Levels() {
		tree += l.Size
	}
	if tree > loadMaxTree(d.bo) {
		return nil, ErrNoLoad
	}
	// Badger streams only with its memtables and level 0 empty (with tables in level 0,
	// PrepareIncremental flattens the tree and starts a second set of compactors, which
	// outlive Close). Closing writes the memtables out to level 0, and closing with
	// CompactL0OnClose merges level 0 into the level below.
	// (An open costs tens of milliseconds, so there are two at most; a store whose level 0
	// is empty after the first keeps the option, which costs its Close a compaction.)
	if err := d.reopen(d.bo.WithCompactL0OnClose(true)); err != nil {
		return nil, err
	}
	if d.bdb.Levels()[0].NumTables > 0 {
		if err := d.reopen(d.bo); err != nil {
			return nil, err
		}
	}
	if d.bdb.Levels()[0].NumTables > 0 {
		return nil, ErrNoLoad
	}
	bdb := d.bdb
	sw := bdb.NewStreamWriter()
	if err := sw.PrepareIncremental(); err != nil {
		sw.Cancel()
		return nil, fmt.Errorf("storage: load: %w", err)
	}
	// Writes are held off, so the next commit's version is after every key stored.
	txn := bdb.NewTransaction(false)
	version := txn.ReadTs() + 1
	txn.Discard()
	held = false
	l := &Load{d: d, sw: sw, buf: newLoadBuffer(), version: version,
		full: make(chan *z.Buffer, 1), spare: make(chan *z.Buffer, 1), written: make(chan struct{})}
	l.spare <- newLoadBuffer()
	go l.hand()
	return l, nil
}

// reopen closes Badger and opens it again with bo; d.mu is locked. When it cannot open it,
// it opens it read-only, if it can, as reopenWritable does.
func (d *DB) reopen(bo badger.Options) error {
	if err := d.bdb.Close(); err != nil {
		return d.failDisk(err)
	}
	bdb, err := badger.Open(bo)
	if err != nil {
		if ro, rerr := openReadOnly(d.bo); rerr == nil {
			d.bdb = ro
		}
		return d.failDisk(err)
	}
	d.bdb = bdb
	return nil
}

func newLoadBuffer() *z.Buffer { return z.NewBuffer(loadChunk+loadChunk/8, "storage.Load") }

// Set writes value under key, which must be after the key before (errUnsorted otherwise).
// The slices may change once it returns.
func (l *Load) Set(key, value []byte) error {
	if l.last != nil && bytes.Compare(key, l.last) <= 0 {
		return errUnsorted
	}
	l.last = append(l.last[:0], key...)
	l.kv.Key, l.kv.Value, l.kv.Version = key, value, l.version
	badger.KVToBuffer(&l.kv, l.buf)
	l.kv.Key, l.kv.Value = nil, nil
	if l.buf.LenNoPadding() >= loadChunk {
		return l.send()
	}
	return nil
}

// send hands the chunk gathered to the goroutine, and takes a spare buffer for the next.
func (l *Load) send() error {
	if err := l.failed(); err != nil {
		return err
	}
	if l.buf.LenNoPadding() == 0 {
		return nil
	}
	l.full <- l.buf
	l.buf = <-l.spare
	return nil
}

// hand gives Badger each chunk sent, if the disk has room for it, until the first failure,
// and gives the buffers back.
func (l *Load) hand() {
	defer close(l.written)
	for buf := range l.full {
		if l.failed() == nil {
			err := l.d.space.full()
			if err != nil {
				err = l.d.space.refuse(err)
			} else if err = l.sw.Write(buf); err != nil {
				err = l.d.failDisk(fmt.Errorf("storage: load: %w", err))
			}
			if err != nil {
				l.mu.Lock()
				l.err = err
				l.mu.Unlock()
			}
		}
		buf.Reset()
		l.spare <- buf
	}
}

func (l *Load) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Finish writes what Set gave, syncs it, and ends the load: the keys are visible and
// durable, and the store takes its other uses again.
func (l *Load) Finish() error {
	if l.ended {
		return l.failed()
	}
	err := l.send()
	return errors.Join(err, l.end(err == nil))
}

// Cancel ends the load without writing what was not handed to Badger yet; what was is
// kept, to be deleted by the caller.
func (l *Load) Cancel() {
	if !l.ended {
		_ = l.end(false)
	}
}

// end ends the stream. Badger's Cancel would leave the tables written so far out of order
// in their level (it sorts them only in Flush), so a cancelled load is flushed too; then
// what it wrote is synced when keep says the caller relies on it.
func (l *Load) end(keep bool) error {
	l.ended = true
	defer l.d.mu.Unlock()
	close(l.full)
	<-l.written
	l.buf.Release()
	(<-l.spare).Release()
	if err := l.sw.Flush(); err != nil {
		return l.d.failDisk(fmt.Errorf("storage: load: %w", err))
	}
	if err := l.failed(); err != nil || !keep {
		return err
	}
	// The table files are synced as Badger writes them; values too large for the tree went
	// to the value log, which nothing has synced.
	l.d.commits.Lock()
	defer l.d.commits.Unlock()
	if err := l.d.syncValueLogs(); err != nil {
		return l.d.failDisk(err)
	}
	return nil
}
