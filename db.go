package tabula

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// DB is an open Tabula database: a set of tables in one store (Badger on disk, an ordered
// tree in memory). It is safe for concurrent use; every operation is atomic.
type DB struct {
	store *storage.DB
	clock func() time.Time

	queryBudget time.Duration
	queries     querySwitches // of every namespace without its own (runtimesettings.go)
	nsQueries   sync.Map      // namespace → *querySwitches, for those given their own
	settingsMu  sync.Mutex    // serialises changes to the query switches
	deleting    beingDeleted  // tables in the TableBeingDeleted state (Options.TableDeleteDelay)
	flavor      *flavorRules  // nil for the Table service's rules (Options.Flavor)

	// service simulates the service's range partitions, rate limits and faults.
	service *partition.Service

	// open holds the tables operations have resolved (see openTable).
	open openTables

	// filters caches compiled filters by their text (see DB.compile); filterMu guards
	// adding to it, and filterBytes is what it holds, at most filterCacheBytes.
	filters          sync.Map // string → *compiledFilter
	filterMu         sync.Mutex
	filterBytes      int64
	filterCacheBytes int64

	// stampMu guards the Timestamp clock.
	stampMu sync.Mutex
	// lastTicks is the last Timestamp handed out.
	lastTicks int64
	// reservedTicks is a persisted upper bound on handed-out Timestamps (see stamp);
	// clockSaved says the persisted bound is lastTicks, marked clean (see saveClock).
	reservedTicks int64
	clockSaved    bool

	// background tracks the work done in the background: deletions of dropped tables' data
	// (the next Open resumes what they left) and the first counts of tables' statistics
	// (see countInBackground). Close stops and waits for it.
	background     sync.WaitGroup
	stopBackground context.CancelFunc
	backgroundCtx  context.Context

	// snaps are the snapshots on disk not yet closed, which Close closes; snapMu guards
	// it and orders taking a snapshot against Close.
	snapMu sync.Mutex
	snaps  map[*Snapshot]struct{}
	// base is the snapshot the store's data came from (Snapshot.Open, Restore), if any:
	// tables not resolved since hold its data (see storedStats).
	base atomic.Pointer[Snapshot]
	// restoreMu is held by Restore, and read-locked by what must not overlap one (the
	// background drop DeleteTable starts after its commit; Close).
	restoreMu sync.RWMutex

	closeOnce sync.Once
	closeErr  error
	isClosed  atomic.Bool
	// closeWatch ends the contexts of the reads that give way to Close (see untilClosed).
	closeWatch closeWatch
}

// closeWatch cancels the contexts of long reads when Close begins.
type closeWatch struct {
	mu      sync.Mutex
	next    int
	cancels map[int]context.CancelCauseFunc
	// ended is closed when Close begins, once every long read's context has ended (made
	// by open).
	ended chan struct{}
}

// Open opens the database in dir, creating it if needed. Reopening a directory brings back
// every table and entity.
func Open(dir string, opts *Options) (*DB, error) {
	if dir == "" {
		return nil, ErrInvalidInput.WithDetail("directory is empty; use OpenInMemory for a database without one")
	}
	return open(storage.Options{Dir: dir}, opts)
}

// OpenInMemory opens an empty database that lives in memory and vanishes on Close: the
// fast, disposable kind that tests want, one per test if they like. Opening one allocates a
// few kilobytes and takes microseconds; its memory grows with the data it holds and nothing
// else. It holds everything a database on disk holds (entities of 1 MiB in any script,
// transactions of 100 actions up to 4 MiB, tables as large as memory allows) with the same
// atomic, serializable operations.
func OpenInMemory(opts *Options) (*DB, error) {
	return open(storage.Options{InMemory: true}, opts)
}

func open(so storage.Options, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	// Checked before the store opens; openOn takes it from the options again.
	if _, err := rulesOf(o.Flavor); err != nil {
		return nil, err
	}
	so.SyncWrites = o.SyncWrites
	so.FreeSpace, so.Reserve = o.freeSpace, o.DiskReserve
	so.MemoryBudget, so.GoMemoryLimit = o.MemoryBudget, !o.NoGoMemoryLimit
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// The first write refused for want of space says why; the ones after it only answer
	// ErrDiskFull, until writes have resumed.
	so.OnFull = func(err error) {
		logger.Warn("tabula: writes refused for want of disk space", "dir", so.Dir, "err", storageError(err))
	}
	store, err := storage.Open(so)
	if err != nil {
		return nil, openError(so.Dir, err)
	}
	if err := store.Damaged(); err != nil {
		logger.Error("tabula: the database has damaged files and is open read-only: reads that need them fail, every other read answers, and writes are refused",
			"dir", so.Dir, "err", storageError(err))
	}
	if err := store.Full(); err != nil {
		logger.Warn("tabula: the disk has less free space than the reserve: reads answer, and writes are refused until it has",
			"dir", so.Dir, "err", storageError(err))
	}
	return openOn(store, &o, so.Dir, nil)
}

// inUsePhrase is how Badger says that another process holds a directory's lock, on every
// platform; its own text names its internals and no way out.
const inUsePhrase = "Another process is using this Badger database"

// openError says why the store in dir did not open: for a directory another process holds,
// which process (Badger writes its pid in the directory's LOCK file) and what to do.
func openError(dir string, err error) error {
	if !strings.Contains(err.Error(), inUsePhrase) {
		return storageError(err)
	}
	who := "another process"
	if pid, rerr := os.ReadFile(filepath.Join(dir, "LOCK")); rerr == nil && len(bytes.TrimSpace(pid)) > 0 {
		who = "process " + string(bytes.TrimSpace(pid))
	}
	return ErrInternal.WithDetail("the data directory %q is in use by %s, which opened it first (another tabula serve, "+
		"import, export or check, or a program embedding Tabula): stop that process, or open another directory", dir, who)
}

// openOn opens a DB on an open store, of the directory dir ("" in memory). lastTicks, when
// set, is the last Timestamp handed out on the data the store holds (a store opened from a
// Snapshot, in the current format), and the clock starts there instead of reading the store.
func openOn(store *storage.DB, opts *Options, dir string, lastTicks *int64) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	flavor, err := rulesOf(o.Flavor)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	if o.QueryBudget == 0 {
		o.QueryBudget = DefaultQueryBudget
	}
	db := &DB{
		store: store, clock: o.Clock, queryBudget: o.QueryBudget, filterCacheBytes: filterCacheBytes,
		service: partition.NewService(&partition.Options{Now: o.Clock, Limits: o.Limits, Balance: o.Balance, Faults: o.Faults}),
	}
	db.queries.forbidFullScans.Store(o.ForbidFullScans)
	db.queries.boundaries.Store(o.BoundaryContinuations)
	db.deleting.delay = max(o.TableDeleteDelay, 0)
	db.flavor = flavor
	db.backgroundCtx, db.stopBackground = context.WithCancel(context.Background())
	db.closeWatch.ended = make(chan struct{})
	if lastTicks != nil {
		db.lastTicks = *lastTicks
	} else if err := db.openFormat(dir, o.Logger); err != nil {
		_ = store.Close()
		return nil, err
	} else if err := db.loadClock(); err != nil {
		_ = store.Close()
		return nil, err
	}
	if err := db.resumeDrops(); err != nil {
		_ = store.Close()
		return nil, err
	}
	return db, nil
}

// Close waits for background work and closes the database. Calling it again is harmless.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.restoreMu.Lock()
		defer db.restoreMu.Unlock()
		db.snapMu.Lock()
		db.isClosed.Store(true)
		db.snapMu.Unlock()
		db.closeWatch.cancelReads()
		db.closeSnapshots()
		db.stopBackground()
		db.background.Wait()
		db.saveClock()
		if err := db.store.Close(); err != nil {
			db.closeErr = ErrInternal.WithDetail("%v", err)
		}
	})
	return db.closeErr
}

// errClosedDuring is the cause of a long read's context ended by Close (see untilClosed).
var errClosedDuring = errors.New("the database was closed")

// untilClosed returns ctx, ended also when Close begins, for a read that may run for
// minutes (an export): closing the store waits for every read under way, and requests
// arriving meanwhile would queue behind it. closedDuring turns the read's error into one
// that says so. stop must be called when the read ends.
func (db *DB) untilClosed(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	r := &db.closeWatch
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.ended:
		cancel(errClosedDuring)
		return ctx, func() {}
	default:
	}
	if r.cancels == nil {
		r.cancels = make(map[int]context.CancelCauseFunc)
	}
	id := r.next
	r.next++
	r.cancels[id] = cancel
	return ctx, func() {
		r.mu.Lock()
		delete(r.cancels, id)
		r.mu.Unlock()
		cancel(nil)
	}
}

// cancelReads ends every long read's context, at once: a read that checks its context after
// Close has begun sees it ended.
func (r *closeWatch) cancelReads() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cancel := range r.cancels {
		cancel(errClosedDuring)
	}
	clear(r.cancels)
	close(r.ended)
}

// closedDuring is err, or errClosedDuring when ctx (from untilClosed) ended because the
// database was closed.
func closedDuring(ctx context.Context, err error) error {
	if err != nil && context.Cause(ctx) == errClosedDuring {
		return ErrInternal.WithDetail("%v", errClosedDuring)
	}
	return err
}

// DiskFull returns an error matching ErrDiskFull when the database's disk has less free
// space than Options.DiskReserve, or the database is open read-only for lack of it (until a
// write finds the space again); otherwise, and in memory, nil. Writes are refused meanwhile.
func (db *DB) DiskFull() error {
	return storageError(db.store.Full())
}

// closed reports whether Close has been called.
func (db *DB) closed() bool { return db.isClosed.Load() }

// update runs fn in one atomic read-write transaction. Every write goes through here, so that
// concurrent writes can later be coalesced into one commit without touching the operations.
// fn may run more than once (see storage.DB.Update) and must have no other effects. When ctx
// ends while fn runs (the client went away), the transaction is discarded, not committed.
func (db *DB) update(ctx context.Context, fn func(tx *storage.Txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return storageError(db.store.Update(func(tx *storage.Txn) error {
		if err := fn(tx); err != nil {
			return err
		}
		return ctx.Err()
	}))
}

// view runs fn in a read-only snapshot.
func (db *DB) view(ctx context.Context, fn func(tx *storage.Txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return storageError(db.store.View(fn))
}
