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

// Load writes keys given in ascending order straight into a level of the LSM tree, as
// table files (Badger's StreamWriter): no log, no memtable, and no compaction
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
// beside), writing what its memtables hold into the tree would rewrite more than
// loadMaxRewrite of it, or the tree has no level left above its data (see NewLoad). A Bulk
// does the same job.
var ErrNoLoad = errors.New("storage: the store does not take a direct load; use a Bulk")

// errUnsorted is Load.Set's refusal of a key not after the one before.
var errUnsorted = errors.New("storage: load: keys out of order")

// loadChunk is how many bytes of writes a Load gathers before it hands them to Badger; the
// table being built holds at most a table's worth more.
const loadChunk = 4 << 20

// loadMaxRewrite is the most of the tree a Load's start may rewrite. Badger streams only
// into a tree with its memtables and level 0 empty, so NewLoad writes the memtables out to
// level 0 and Badger merges level 0 into the level below it that holds data (its base
// level; it never puts newer writes under older ones), rewriting that level's tables whose
// keys fall between level 0's first and last key. After an earlier load that level holds
// the loaded keys: writes since that are all after them (or all before) rewrite next to
// nothing, writes on both sides of them rewrite them all.
func loadMaxRewrite(bo badger.Options) int64 { return 8 * bo.MemTableSize }

// NewLoad starts a direct load (see Load), or refuses with ErrNoLoad. It waits for the uses
// of the store under way to end.
//
// Badger writes a load's tables into the level above the highest one holding data (an
// empty store's are written into the lowest), so each load of a store takes a level; the
// tree has six below level 0, which Badger's compactions empty again by moving their data
// down. A load that would have to go into level 0 is refused.
func (d *DB) NewLoad() (*Load, error) {
	// A store with SyncWrites collects value-log garbage in the background, with a pass that
	// holds an iterator of the Badger instance across a moment with no lock held
	// (collectGarbage): the reopen below would close it under the pass's feet.
	if d.badgerDB == nil || d.damaged != nil || d.space.readOnly.Load() != nil || d.stopGC != nil {
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
	// Badger streams only with its memtables and level 0 empty (with tables in level 0,
	// PrepareIncremental flattens the tree and starts a second set of compactors, which
	// outlive Close). Closing writes the memtables out to level 0, and closing with
	// CompactL0OnClose merges level 0 into the level below. A tree within loadMaxRewrite
	// is closed that way at once; a larger one is closed plainly first, so that what the
	// merge would rewrite can be measured from level 0's tables before it is done.
	// (An open costs tens of milliseconds, so there are three at most; a store whose level 0
	// is empty after the merge keeps the option, which costs its Close a compaction.)
	var tree int64
	for _, l := range d.bdb.Levels() {
		tree += l.Size
	}
	small := tree <= loadMaxRewrite(d.bo)
	if err := d.reopen(d.bo.WithCompactL0OnClose(small)); err != nil {
		return nil, err
	}
	if !small && d.bdb.Levels()[0].NumTables > 0 {
		if mergeCost(d.bdb.Tables()) > loadMaxRewrite(d.bo) {
			return nil, ErrNoLoad
		}
		if err := d.reopen(d.bo.WithCompactL0OnClose(true)); err != nil {
			return nil, err
		}
	}
	if d.bdb.Levels()[0].NumTables > 0 {
		if err := d.reopen(d.bo); err != nil {
			return nil, err
		}
	}
	if levels := d.bdb.Levels(); levels[0].NumTables > 0 || len(levels) > 1 && levels[1].NumTables > 0 {
		return nil, ErrNoLoad // the load would go into level 0
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

// mergeCost is how many bytes of the tables below level 0 merging level 0 into its base
// level would rewrite, at most: the tables of the highest level below 0 that holds any
// (Badger's base level is never below it) whose keys overlap level 0's.
func mergeCost(tables []badger.TableInfo) int64 {
	var lo, hi []byte
	base := 0
	for _, t := range tables {
		left, right := userKey(t.Left), userKey(t.Right)
		switch {
		case t.Level == 0:
			if lo == nil || bytes.Compare(left, lo) < 0 {
				lo = left
			}
			if hi == nil || bytes.Compare(right, hi) > 0 {
				hi = right
			}
		case base == 0 || t.Level < base:
			base = t.Level
		}
	}
	if base == 0 {
		return 0
	}
	var cost int64
	for _, t := range tables {
		if t.Level == base && bytes.Compare(userKey(t.Left), hi) <= 0 && bytes.Compare(userKey(t.Right), lo) >= 0 {
			cost += int64(t.OnDiskSize)
		}
	}
	return cost
}

// userKey is a key of the tree without the version Badger appends to it.
func userKey(k []byte) []byte {
	if len(k) < 8 {
		return k
	}
	return k[:len(k)-8]
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

// LoadSpace says where a load's caller may keep temporary files, the store's directory
// ("" in memory), and how much memory it may hold gathering a load's keys: an eighth of
// the budget, the size of the memtables and table buffers a load leaves unused.
func (d *DB) LoadSpace() (dir string, memory int) {
	if d.badgerDB == nil {
		return "", 0
	}
	return d.bo.Dir, int(8 * d.bo.MemTableSize)
}
