// Package storage is the engine's storage layer: ordered keys and values, in Badger in a
// directory or in an ordered in-memory tree (memory.go) with the same transactions; Open
// chooses the engine once, and a DB hands each call to it (see engine). It is not a user
// API. Its one consumer is the root package (github.com/tabuladb/tabula), which builds
// tables, entities and the catalog on it; it exports only what that package calls:
//
//   - Open and Options, and a DB's read and read-write transactions (View, Update), which
//     hide conflict retries, with Txn's point reads and writes and Iterator's streaming
//     range scans; DeleteRange for dropped tables; Full, whether the disk is below the
//     reserve (space.go), and Options.OnFull, told of the first write refused for it;
//   - Snapshot (snapshot.go), the store at one instant: read (View), copied into a new
//     in-memory store (Open) or restored into one (DB.Restore);
//   - the key codec (AppendPart and friends, codec.go), whose byte order is the service's
//     UTF-16 code-unit order (see internal/keyorder);
//   - the errors the root package maps to the service's: ErrDiskFull, ErrContention,
//     ErrTooLarge, ErrOnDisk.
//
// It knows nothing of tables or entities. bench's raw-Badger baseline writes the same bytes
// with Badger directly, from the format's description, and checks that they match.
package storage

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/tabuladb/tabula/internal/badgertuning"
)

// Options say where and how to open the store.
type Options struct {
	// Dir is the directory holding the data; ignored when InMemory is set.
	Dir string
	// InMemory keeps everything in memory, in a store sized for tests (see memory.go):
	// opening one costs a few hundred bytes, and it holds values and transactions of any
	// size. Nothing survives Close.
	InMemory bool
	// SyncWrites makes every commit wait for an fsync of the value log. Without it, the
	// store syncs its logs every syncInterval in the background, which bounds what a power
	// cut loses to about that much of the last writes.
	SyncWrites bool
	// FreeSpace reports the bytes free on Dir's disk; nil asks the file system (see
	// space.go). Reserve is the free space below which writes are refused; 0 means
	// 512 MiB (see defaultReserve).
	FreeSpace func() (uint64, error)
	Reserve   uint64
	// OnFull, when set, is called with the error of the first write refused for lack
	// of space, and again for the first one after writes had resumed.
	OnFull func(error)
	// MemoryBudget is the memory, in bytes, that Badger's memtables, caches and compaction
	// buffers share (see internal/badgertuning); 0 means badgertuning.DefaultMemoryBudget,
	// and less than MinMemoryBudget means that. Ignored when InMemory is set.
	MemoryBudget uint64
	// GoMemoryLimit has the store hold the Go runtime's soft memory limit while it is open,
	// unless the program has set one (see badgertuning.HoldGoLimit). Ignored when InMemory is set.
	GoMemoryLimit bool

	// For tests: gcTicks, when set, starts the background value-log GC rounds of a store
	// with SyncWrites instead of a ticker of gcInterval (see vloggc.go); vlogFileSize, when
	// set, replaces badgertuning.Options' value-log file size.
	gcTicks      <-chan time.Time
	vlogFileSize int64
	// closeWait, when set, replaces defaultCloseWait.
	closeWait time.Duration
}

// syncInterval is how often a store without SyncWrites syncs its logs. The operating
// system's own writeback would reach the disk too, but only after half a minute (Linux's
// defaults), and a file system may keep unsynced writes longer: the power-loss test
// (powerloss_test.go in the root package) saw every write since the store opened lost
// without this.
const syncInterval = time.Second

// ErrTooLarge reports a transaction larger than Badger can commit at once (see
// badgertuning.TxnLimit); a table's data does not reach it.
var ErrTooLarge = errors.New("storage: transaction too large for the store")

// maxConflictRetries bounds how often Update re-runs a closure whose transaction lost a
// conflict. Each lost conflict means another writer committed, so the bound is only reached
// under pathological contention.
const maxConflictRetries = 1000

// ErrContention is returned by Update when a transaction lost maxConflictRetries conflicts in a row.
var ErrContention = errors.New("storage: transaction kept conflicting with concurrent writers")

// DB is an open store. It is safe for concurrent use.
type DB struct {
	// e is the engine, in memory or Badger's, which Open chooses once; DB's methods go to it.
	e engine
	// *badgerDB is e on disk, nil in memory: the Badger half's own code (the direct load,
	// load.go) reaches Badger's state through it.
	*badgerDB
}

// engine is what the in-memory store (memDB, memory.go) and Badger (badgerDB) each do their
// own way; the DB methods of the same names document them.
type engine interface {
	view(fn func(*Txn) error) error
	update(fn func(*Txn) error) error
	updateNow(fn func(*Txn) error) error
	close() error
	snapshot() (*Snapshot, error)
	restore(s *Snapshot) error
	full() error
	verify(ctx context.Context) error
	damage() error
	newBulk() bulkWriter
}

// newMemoryDB is the DB of an in-memory store.
func newMemoryDB(m *memDB) *DB { return &DB{e: m} }

// badgerDB is a store on disk, in Badger.
type badgerDB struct {
	// mu guards bdb, which a store opened read-only for lack of space replaces with a
	// writable one once there is space (see reopenWritable): every use read-locks it.
	mu    sync.RWMutex
	bdb   *badger.DB
	bo    badger.Options
	space *space // free-space watch of the Badger directory
	sync  bool   // SyncWrites

	// stopSyncs ends the background syncs (see syncInterval), syncs waits for them.
	stopSyncs chan struct{}
	syncs     sync.WaitGroup

	// stopGC ends the background value-log GC of a store with SyncWrites, gcs waits for it
	// (see vloggc.go).
	stopGC chan struct{}
	gcs    sync.WaitGroup

	group committer // the writes waiting for a group commit (see group.go)

	// commits is read-locked around every commit to Badger, from its call until Badger has
	// written it to its logs, and locked by syncLogs, which needs no commit in between, and
	// by a commit that puts values in the value log (see commit).
	commits sync.RWMutex
	// vlogSynced is the oldest value log file that syncValueLogs must sync: older ones were
	// complete when a sync reached them. Guarded by commits, locked.
	vlogSynced uint64

	releaseLimit func() // stops counting the store in the Go memory limit (see badgertuning.HoldGoLimit)

	// damaged are the tables Open found damaged, which make the store read-only: reads
	// that may need their keys fail with their Damage, and writes with errDamagedReadOnly.
	damaged []*Damage
	// values passes Badger's log on and keeps its last failure to read a value (readValue).
	values valueLogger
	// diskFailed is the first failed write or sync of the logs, after which no write is
	// acknowledged again (see failDisk).
	diskFailed atomic.Pointer[error]
	// closeWait bounds how long Close waits for Badger (see defaultCloseWait).
	closeWait time.Duration
	// unverified turns off what reads verify (readFaults, readValue), for the benchmarks
	// that measure its cost.
	unverified bool
}

// defaultCloseWait is how long Close waits for Badger to write out its memtables and close
// its files. On a disk that fails every write (a removed directory, a dead device) Badger
// retries its flush forever; past this, Close gives up and says what may not be durable.
const defaultCloseWait = 30 * time.Second

// errDiskFailed is the refusal of every write after one to the disk failed: after a failed
// fsync the kernel may already have dropped the pages it could not write, so a later fsync
// that succeeds proves nothing (PostgreSQL's "fsyncgate"), and only reopening the store
// tells what is durable.
var errDiskFailed = errors.New("storage: a write to the disk failed; no write is acknowledged until the database is reopened")

// failDisk records err, a failed write or sync of the logs, and returns the refusal every
// later write gets.
func (d *badgerDB) failDisk(err error) error {
	d.diskFailed.CompareAndSwap(nil, &err)
	return d.refuseFailed()
}

func (d *badgerDB) refuseFailed() error {
	if p := d.diskFailed.Load(); p != nil {
		return fmt.Errorf("%w (%v)", errDiskFailed, *p)
	}
	return nil
}

// Open opens (creating if needed) the store described by o.
func Open(o Options) (*DB, error) {
	if o.InMemory {
		return newMemoryDB(openMemory()), nil
	}
	d, err := openBadger(o)
	if err != nil {
		return nil, err
	}
	return &DB{e: d, badgerDB: d}, nil
}

// openBadger opens the store on disk that o describes.
func openBadger(o Options) (*badgerDB, error) {
	bo := badgertuning.Options(o.Dir, o.MemoryBudget).WithSyncWrites(o.SyncWrites)
	if o.vlogFileSize > 0 {
		bo.ValueLogFileSize = o.vlogFileSize
	}
	d := &badgerDB{space: newSpace(o), sync: o.SyncWrites, releaseLimit: func() {}, closeWait: cmp.Or(o.closeWait, defaultCloseWait)}
	d.values.Logger = bo.Logger
	bo.Logger = &d.values
	d.bo = bo
	d.space.onFull = o.OnFull
	// Deleting files takes no space, so this is done on a full disk too.
	if err := removeEmptyLogs(o.Dir); err != nil {
		return nil, fmt.Errorf("storage: open %q: %w", o.Dir, err)
	}
	in, err := inspect(o.Dir)
	if err == nil {
		err = in.fatal
	}
	if err != nil {
		return nil, fmt.Errorf("storage: open %q: %w", o.Dir, err)
	}
	if len(in.tables) > 0 {
		// Read what is intact and write nothing: a compaction would carry the damage into
		// new tables or drop what follows it. Badger verifies every block it reads, so
		// that a scan beside a damaged table never sees its bytes, and reads that need
		// one of its keys are refused (see Txn.damage).
		bdb, err := openReadOnly(bo.WithChecksumVerificationMode(options.OnBlockRead))
		if err != nil {
			return nil, fmt.Errorf("storage: open %q: %w; opening the rest read-only failed: %v", o.Dir, errors.Join(damages(in.tables)...), err)
		}
		d.bdb, d.damaged = bdb, in.tables
		return d, nil
	}
	if _, err := os.Stat(filepath.Join(o.Dir, badger.ManifestFilename)); err == nil && d.space.openReadOnly() {
		// A new directory opens writable on a full disk too (Badger's read-only open needs
		// a MANIFEST; its new files are sparse): Update refuses writes for want of space.
		bdb, err := openReadOnly(bo)
		if err != nil {
			return nil, fmt.Errorf("%w, and opening it read-only failed: %v", d.space.readOnly.Load(), err)
		}
		d.bdb = bdb
		d.holdGoLimit(o)
		return d, nil
	}
	if !o.SyncWrites {
		// A failed collection leaves the data where it was, to be opened as it is.
		_ = gcAtOpen(bo)
	}
	bdb, err := badger.Open(bo.WithCompactL0OnClose(worthCounting(bo.ValueDir, bo.ValueLogFileSize)))
	if err != nil {
		return nil, fmt.Errorf("storage: open %q: %w", o.Dir, err)
	}
	if err := syncDir(o.Dir); err != nil {
		_ = bdb.Close()
		return nil, fmt.Errorf("storage: open %q: %w", o.Dir, err)
	}
	d.bdb = bdb
	d.startSyncs()
	if o.SyncWrites {
		d.startGC(o.gcTicks)
	}
	d.holdGoLimit(o)
	return d, nil
}

// holdGoLimit counts the open store in the Go runtime's memory limit, if o asks.
func (d *badgerDB) holdGoLimit(o Options) {
	if o.GoMemoryLimit {
		d.releaseLimit = badgertuning.HoldGoLimit(o.MemoryBudget)
	}
}

// truncateNeeded is how Badger's read-only open names the memtable log it will not open
// because of bytes past the log's last whole transaction, and where that transaction ends.
var truncateNeeded = regexp.MustCompile(`while opening fid: (\d+) .*end offset: (\d+) < size: (\d+)`)

// openReadOnly opens a directory read-only. A directory left by a crash has memtable logs
// with bytes past their last whole transaction (the rest of the preallocated file, or a
// transaction cut short), which Badger's read-write open cuts off and its read-only open
// refuses ("Log truncate required to run DB"). openReadOnly cuts them off itself, as the
// read-write open would (only whole transactions stay; cutting frees space and takes none),
// and opens again.
func openReadOnly(bo badger.Options) (*badger.DB, error) {
	for {
		bdb, err := badger.Open(bo.WithReadOnly(true))
		if err == nil || !errors.Is(err, badger.ErrTruncateNeeded) && !strings.Contains(err.Error(), badger.ErrTruncateNeeded.Error()) {
			return bdb, err
		}
		m := truncateNeeded.FindStringSubmatch(err.Error())
		if m == nil {
			return nil, err
		}
		fid, _ := strconv.Atoi(m[1])
		end, _ := strconv.ParseInt(m[2], 10, 64)
		log := filepath.Join(bo.Dir, fmt.Sprintf("%05d.mem", fid))
		st, serr := os.Stat(log)
		if serr != nil || st.Size() <= end {
			return nil, err // no progress to make
		}
		if terr := os.Truncate(log, end); terr != nil {
			return nil, fmt.Errorf("%v; cutting %s to its last whole transaction failed: %w", err, log, terr)
		}
	}
}

func (d *badgerDB) startSyncs() {
	if !d.sync {
		d.stopSyncs = make(chan struct{})
		d.syncs.Go(d.syncEvery)
	}
}

// reopenWritable replaces a store opened read-only for lack of space with a writable one,
// once the disk has space again; it reports whether the store is writable. It waits for no
// reader: while one runs (a long scan), the write that asked is refused and the next one
// tries again.
func (d *badgerDB) reopenWritable() bool {
	if !d.space.spaceAgain() || !d.mu.TryLock() {
		return false
	}
	defer d.mu.Unlock()
	if d.space.readOnly.Load() == nil {
		return true // another write did it
	}
	if err := d.bdb.Close(); err != nil {
		return false
	}
	bdb, err := badger.Open(d.bo)
	if err != nil {
		// Back to reading; if even that fails, reads fail with Badger's closed-store errors.
		if bdb, err = openReadOnly(d.bo); err == nil {
			d.bdb = bdb
		}
		return false
	}
	d.bdb = bdb
	d.space.readOnly.Store(nil)
	d.startSyncs()
	return true
}

// syncEvery syncs the store's logs every syncInterval until Close.
func (d *badgerDB) syncEvery() {
	tick := time.NewTicker(syncInterval)
	defer tick.Stop()
	for {
		select {
		case <-d.stopSyncs:
			return
		case <-tick.C:
			// A failed sync leaves the writes where they were, in the file cache; the next
			// tick, or Close, tries again.
			_ = d.syncLogs()
		}
	}
}

// syncLogs makes every commit so far durable, value log before memtable log. Badger's own
// Sync syncs the memtable log first: a power cut between the two leaves a log entry that
// points past the end of the value log, a value that cannot be read, and Badger fails
// reading it ("Invalid value pointer offset"; the power-loss test in the root package
// found it). So commits are held off (commits) while every value log file is synced, then
// Badger's Sync syncs the memtable log, which then points only at synced values.
func (d *badgerDB) syncLogs() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	d.commits.Lock()
	defer d.commits.Unlock()
	if d.damaged != nil || d.space.readOnly.Load() != nil {
		return nil // nothing written, nothing to sync
	}
	err := d.syncValueLogs()
	if err == nil {
		err = d.bdb.Sync()
	}
	if err != nil {
		return d.failDisk(err)
	}
	return nil
}

// syncValueLogs fsyncs the value log files that may hold unsynced writes. An fsync through
// a descriptor of its own makes the file's content durable, the pages Badger wrote through
// its mapping too. Badger writes only to its newest file, so a file older than the newest at
// one sync is complete and synced by it, and is skipped from then on: an fsync costs about
// 0.25 ms even for a file with nothing to write (2 cores, ext4 on virtio; 71 ms for 256
// files), which every commit of a large value would otherwise pay once per file.
// Called with commits locked.
func (d *badgerDB) syncValueLogs() error {
	logs, err := filepath.Glob(filepath.Join(d.bo.ValueDir, "*.vlog"))
	if err != nil {
		return err
	}
	newest := d.vlogSynced
	for _, name := range logs {
		fid, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(name), ".vlog"), 10, 32)
		if err != nil || fid < d.vlogSynced {
			continue
		}
		newest = max(newest, fid)
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("storage: sync %s: %w", name, err)
		}
	}
	d.vlogSynced = newest
	return nil
}

// commit commits txn to Badger; valueLog says a value written in it is at least Badger's
// value threshold, so goes to the value log with only a pointer in the LSM tree.
//
// Without SyncWrites, such a commit is made alone and every value log synced before any
// other commit may start. Badger writes a memtable out as a table when a later commit finds
// it full, and does not sync the value log first: a power cut soon after would leave a
// durable table pointing at value-log bytes that never reached the disk, an entity that
// cannot be read (Badger issue 2000, "Value missing after power failure"; the power-loss
// test in the root package found it). A commit that finds the memtable full comes after
// this one's sync, so every table points only at synced values. The price is an fsync for
// each such commit, paid only by entities too large for the tree (see badgertuning.Options).
//
// A failed sync does not fail the commit, which is made and visible: as after Badger's own
// failed sync under SyncWrites, the background sync tries again.
func (d *badgerDB) commit(txn *badger.Txn, valueLog bool) error {
	if err := d.refuseFailed(); err != nil {
		return err
	}
	if !valueLog || d.sync {
		d.commits.RLock()
		defer d.commits.RUnlock()
		return d.commitErr(txn.Commit())
	}
	d.commits.Lock()
	defer d.commits.Unlock()
	if err := txn.Commit(); err != nil {
		return d.commitErr(err)
	}
	if err := d.syncValueLogs(); err != nil {
		return d.failDisk(err)
	}
	return nil
}

// commitErr passes on the error of a commit, and takes one that is not the transaction's
// own (a conflict, a size) for a failed write of the logs, which nothing may acknowledge
// after (see errDiskFailed).
func (d *badgerDB) commitErr(err error) error {
	if err == nil || errors.Is(err, badger.ErrConflict) || errors.Is(err, badger.ErrTxnTooBig) || errors.Is(err, badger.ErrDBClosed) {
		return err
	}
	return d.failDisk(err)
}

// Close flushes and closes the store.
func (d *DB) Close() error { return d.e.close() }

func (d *badgerDB) close() error {
	if d.stopSyncs != nil {
		close(d.stopSyncs)
		d.syncs.Wait()
	}
	if d.stopGC != nil { // waits for at most the pass under way
		close(d.stopGC)
		d.gcs.Wait()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.releaseLimit()
	closed := make(chan error, 1)
	go func() { closed <- d.bdb.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			return fmt.Errorf("storage: close: %w", err)
		}
		return nil
	case <-time.After(d.closeWait):
		// Badger goes on trying in the background; the process may exit.
		return fmt.Errorf("storage: close: the store did not finish writing to %s within %v (is the disk failing, or the directory gone?): the writes of about the last second may not be durable", d.bo.Dir, d.closeWait)
	}
}

// viewTxn is the Txn of a View, with the in-memory store's transaction beside it; they come
// from viewPool, so that a point read allocates neither.
type viewTxn struct {
	t Txn
	m memTxn
}

var viewPool = sync.Pool{New: func() any { return new(viewTxn) }}

// View runs fn in a read-only snapshot.
func (d *DB) View(fn func(*Txn) error) error { return d.e.view(fn) }

func (d *badgerDB) view(fn func(*Txn) error) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	// What badger.DB.View does, with a pooled Txn rather than a closure and a Txn per read.
	if d.bdb.IsClosed() {
		return badger.ErrDBClosed
	}
	txn := d.bdb.NewTransaction(false)
	defer txn.Discard()
	v := viewPool.Get().(*viewTxn)
	v.t = Txn{t: txn, db: d}
	var err error
	if d.unverified {
		err = fn(&v.t)
	} else {
		err = readFaults(&v.t, fn)
	}
	if v.t.damage != nil {
		err = v.t.damage
	}
	v.t = Txn{}
	viewPool.Put(v)
	return err
}

// readFaults runs fn, turning a fault reading a mapped file (the disk failed to read a page
// of a table or a log, or the file was cut short under the mapping) into an error: the
// process would otherwise crash with SIGBUS.
func readFaults(t *Txn, fn func(*Txn) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			err = &Damage{File: "a file of the store", Err: fmt.Errorf("reading it failed: %v (at address %#x)", r, fault.Addr())}
		}
	}()
	return fn(t)
}

// Update runs fn in a read-write transaction and commits it. When the commit loses a conflict
// with a concurrent writer, fn runs again on a fresh snapshot, so any condition it checks is
// checked against the data that wins; fn must therefore have no effects outside the
// transaction that a re-run would duplicate. An error returned by fn discards the
// transaction and is returned unchanged.
//
// On disk, concurrent Updates share commits (see group.go): fn may run on another writer's
// goroutine, after the writes queued before it and seeing them, and it must not call
// Update itself (use UpdateNow for a write that must be committed before fn goes on).
func (d *DB) Update(fn func(*Txn) error) error { return d.e.update(fn) }

func (d *badgerDB) update(fn func(*Txn) error) error {
	if d.damaged != nil {
		return d.refuseDamaged()
	}
	if ro := d.space.readOnly.Load(); ro != nil && !d.reopenWritable() {
		return d.space.refuse(ro)
	}
	if err := d.space.full(); err != nil {
		return d.space.refuse(err)
	}
	return d.updateGrouped(fn)
}

// UpdateNow is Update in a transaction of its own, committed at once outside any group
// commit. It is for a small write made from inside an Update closure that must be durable
// before the closure goes on (the root package's Timestamp reservation).
func (d *DB) UpdateNow(fn func(*Txn) error) error { return d.e.updateNow(fn) }

func (d *badgerDB) updateNow(fn func(*Txn) error) error {
	if d.damaged != nil {
		return d.refuseDamaged()
	}
	if ro := d.space.readOnly.Load(); ro != nil && !d.reopenWritable() {
		return d.space.refuse(ro)
	}
	if err := d.space.full(); err != nil {
		return d.space.refuse(err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	for range maxConflictRetries {
		err := d.updateOnce(fn)
		if errors.Is(err, badger.ErrTxnTooBig) {
			return ErrTooLarge
		}
		if !errors.Is(err, badger.ErrConflict) {
			return err
		}
		// Let the winner finish before competing again.
		runtime.Gosched()
	}
	return ErrContention
}

// updateOnce is badger.DB.Update, committed by commit.
func (d *badgerDB) updateOnce(fn func(*Txn) error) error {
	if d.bdb.IsClosed() {
		return badger.ErrDBClosed
	}
	txn := d.bdb.NewTransaction(true)
	defer txn.Discard()
	t := Txn{t: txn, db: d}
	if err := fn(&t); err != nil {
		return err
	}
	return d.commit(txn, t.valueLog)
}

// deleteChunk is how many keys DeleteRange removes per transaction: large enough to be
// cheap per key, small enough to stay far below Badger's transaction size limit.
const deleteChunk = 1000

// DeleteRange deletes every key in [lower, upper), a chunk of keys per transaction, and
// stops early when ctx is done. It is meant for ranges nothing writes to any more (a dropped
// table): unlike Badger's DropPrefix, which refuses all writes while it runs, it never gets
// in the way of other writers.
func (d *DB) DeleteRange(ctx context.Context, lower, upper []byte) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var keys [][]byte
		err := d.View(func(tx *Txn) error {
			it := tx.Scan(lower, upper)
			defer it.Close()
			for len(keys) < deleteChunk && it.Next() {
				keys = append(keys, bytes.Clone(it.Key()))
			}
			return nil
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		err = d.Update(func(tx *Txn) error {
			for _, k := range keys {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		lower = SuccessorOf(keys[len(keys)-1])
	}
}

// Txn is a transaction passed to View or Update closures; it is valid only inside them.
//
// Txn and Iterator choose the engine per call (m or t), not through an interface as DB does:
// a closure given to Get or Value through an interface method escapes to the heap, which
// cost the core benchmarks an allocation per entity read (BenchmarkUpdateIfMatch in memory,
// 18 to 21 allocations an operation).
type Txn struct {
	t  *badger.Txn
	m  *memTxn   // instead of t, in memory
	db *badgerDB // with t
	// writes counts the Sets and Deletes made, and tooBig says one was refused as making
	// the transaction too large: a group commit needs both (see group.go). valueLog says a
	// value went to Badger's value log (see badgerDB.commit).
	writes   int
	tooBig   bool
	valueLog bool
	// damage is the first damaged table a read of this transaction needed, which View
	// returns whatever the closure does: a scan that met it ended early.
	damage error
}

// Get looks key up and, when present, calls fn with its value, which is valid only during fn.
func (t *Txn) Get(key []byte, fn func(value []byte) error) (found bool, err error) {
	if t.m != nil {
		return t.m.get(key, fn)
	}
	if err := t.db.damagedIn(key, nil, true); err != nil {
		t.damage = cmp.Or(t.damage, err)
		return false, err
	}
	item, err := t.t.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storage: get: %w", err)
	}
	if fn == nil {
		return true, nil
	}
	return true, t.db.readValue(item, fn)
}

// Set writes value under key. Neither slice may change until the transaction ends.
func (t *Txn) Set(key, value []byte) error {
	if t.m != nil {
		return t.m.set(key, value)
	}
	err := t.t.Set(key, value)
	if errors.Is(err, badger.ErrTxnTooBig) {
		t.tooBig = true
		return ErrTooLarge
	}
	if err != nil {
		return fmt.Errorf("storage: set: %w", err)
	}
	t.writes++
	t.valueLog = t.valueLog || t.db.inValueLog(value)
	return nil
}

// inValueLog says Badger keeps value in its value log rather than in the LSM tree.
func (d *badgerDB) inValueLog(value []byte) bool {
	return int64(len(value)) >= d.bo.ValueThreshold
}

// Delete removes key; deleting an absent key is not an error.
func (t *Txn) Delete(key []byte) error {
	if t.m != nil {
		return t.m.delete(key)
	}
	err := t.t.Delete(key)
	if errors.Is(err, badger.ErrTxnTooBig) {
		t.tooBig = true
		return ErrTooLarge
	}
	if err != nil {
		return fmt.Errorf("storage: delete: %w", err)
	}
	t.writes++
	return nil
}

// Scan returns an iterator over the keys k with lower <= k < upper, in byte order. A nil upper
// means no upper bound. Values are read only when asked for. Close it when done.
func (t *Txn) Scan(lower, upper []byte) *Iterator {
	if t.m != nil {
		return &Iterator{m: t.m.scan(lower, upper)}
	}
	opts := badger.DefaultIteratorOptions
	// Values are small and live in the LSM tree; prefetching them costs more than it saves.
	opts.PrefetchValues = false
	opts.Prefix = commonPrefix(lower, upper)
	if err := t.db.damagedIn(lower, upper, false); err != nil {
		// Nothing of the range is read: a scan that stops at the damage would look
		// like one that ended, so View fails with it instead.
		t.damage = cmp.Or(t.damage, err)
		return &Iterator{}
	}
	return &Iterator{it: t.t.NewIterator(opts), lower: lower, upper: upper, db: t.db}
}

// Iterator walks a key range in order. It is not safe for concurrent use.
type Iterator struct {
	it           *badger.Iterator
	lower, upper []byte
	started      bool
	item         *badger.Item
	m            *memIter // instead of it, in memory
	db           *badgerDB
}

// Next advances to the next key in range and reports whether there is one.
func (it *Iterator) Next() bool {
	if it.m != nil {
		return it.m.next()
	}
	if it.it == nil {
		return false // refused for damage
	}
	if !it.started {
		it.started = true
		it.it.Seek(it.lower)
	} else {
		it.it.Next()
	}
	if !it.it.Valid() {
		it.item = nil
		return false
	}
	item := it.it.Item()
	if it.upper != nil && bytes.Compare(item.Key(), it.upper) >= 0 {
		it.item = nil
		return false
	}
	it.item = item
	return true
}

// Key returns the current key; it is valid until the next call to Next.
func (it *Iterator) Key() []byte {
	if it.m != nil {
		return it.m.cur.key
	}
	return it.item.Key()
}

// Value calls fn with the current value, which is valid only during fn.
func (it *Iterator) Value(fn func(value []byte) error) error {
	if it.m != nil {
		return fn(it.m.cur.value)
	}
	return it.db.readValue(it.item, fn)
}

// Close releases the iterator.
func (it *Iterator) Close() {
	if it.m != nil {
		it.m.close()
		return
	}
	if it.it != nil {
		it.it.Close()
	}
}

// commonPrefix is the longest prefix shared by every key in [lower, upper), which lets Badger
// skip tables that cannot hold the range.
func commonPrefix(lower, upper []byte) []byte {
	if upper == nil {
		return nil
	}
	n := 0
	for n < len(lower) && n < len(upper) && lower[n] == upper[n] {
		n++
	}
	// A key between two keys that share a prefix shares it too.
	return lower[:n:n]
}

// errDamagedReadOnly is the refusal of a write to a store that Open found damaged.
var errDamagedReadOnly = errors.New("storage: the store is read-only because part of it is damaged")

// refuseDamaged is the error of a write to a damaged store: errDamagedReadOnly, with the
// damage.
func (d *badgerDB) refuseDamaged() error {
	return fmt.Errorf("%w: %w", errDamagedReadOnly, errors.Join(damages(d.damaged)...))
}

// damagedIn returns the damage of the first damaged table that may hold a key in
// [lower, upper), or lower itself when point is set, or nil.
func (d *badgerDB) damagedIn(lower, upper []byte, point bool) error {
	for _, dmg := range d.damaged {
		if dmg.covers(lower, upper, point) {
			return dmg
		}
	}
	return nil
}

func damages(ds []*Damage) []error {
	errs := make([]error, len(ds))
	for i, d := range ds {
		errs[i] = d
	}
	return errs
}
