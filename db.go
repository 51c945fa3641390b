package tabula

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// Options tune a DB. The zero value (or a nil *Options) is the default.
type Options struct {
	// SyncWrites makes every write wait until the operating system has flushed it to disk.
	//
	// Off (the default), a write is acknowledged once it is in the operating system's file
	// cache: a process crash loses nothing acknowledged, but a power loss or kernel crash can
	// lose the last writes acknowledged before it (typically the last few seconds). What
	// survives is always whole transactions, never part of one. On, nothing acknowledged is
	// lost even on power loss, at the price of an fsync per write (milliseconds on most
	// disks). The choice does not matter for OpenInMemory.
	SyncWrites bool

	// Clock returns the current time; it stamps every write's Timestamp and measures query
	// budgets. Tests inject a fake clock to make Timestamps, ETags and budgets exact.
	// Default: time.Now.
	Clock func() time.Time

	// QueryBudget is how long one query page may run before it ends early with a
	// continuation token, measured on Clock. Default: DefaultQueryBudget (5 s, the
	// service's limit); negative means no budget.
	QueryBudget time.Duration

	// ForbidFullScans makes a query that the service would run as a full table scan fail
	// with ErrFullScanForbidden (Tabula's own error), so tests catch filters that would be
	// slow on the service even when Tabula runs them cheaply.
	ForbidFullScans bool

	// DiskReserve is the free space, in bytes, that a database on disk keeps on its disk:
	// with less, writes fail with ErrDiskFull (reads go on), and Open opens the database
	// read-only. The store writes through memory-mapped files, and running out of space
	// there would kill the process rather than fail a write, so the reserve leaves room for
	// its flushes and compactions. 0 means 512 MiB; lower it only on a disk too small for
	// that, and only as far as the data written between two compactions needs.
	DiskReserve uint64

	// freeSpace replaces the file system's free-space figure, for tests.
	freeSpace func() (uint64, error)

	// The remaining options simulate how the service behaves under load (package partition).

	// Limits are the service's scalability targets, 2,000 entities/s per PartitionKey and
	// 20,000 per account, each namespace (DB.Namespace) being an account with a limit of its
	// own, counted as the service counts: every entity written, and every entity a query
	// scans. The default mode, LimitObserve, refuses nothing and counts what would have
	// been throttled (see HeatReport); LimitEnforce answers ServerBusy above the targets;
	// LimitOff skips the accounting.
	Limits partition.Limits
	// Balance tunes the simulated load balancer, which splits range partitions that stay
	// hot and merges neighbours that stay cold, on Clock.
	Balance partition.Balance
	// Faults injects ServerBusy and OperationTimedOut, forced continuations and partitions
	// offline while they split, deterministically from a seed, so that a client's retry
	// and continuation paths get exercised. Off by default.
	Faults partition.Faults
	// BoundaryContinuations ends a query page where its scan crosses into another range
	// partition, as the service may: a page can then be short, or empty, and still carry a
	// continuation token.
	BoundaryContinuations bool
}

// DB is an open Tabula database: a set of tables in one store (Badger on disk, an ordered
// tree in memory). It is safe for concurrent use; every operation is atomic.
type DB struct {
	store *storage.DB
	clock func() time.Time

	queryBudget     time.Duration
	forbidFullScans atomic.Bool // see SetForbidFullScans
	boundaries      atomic.Bool // see SetBoundaryContinuations

	// service simulates the service's range partitions, rate limits and faults.
	service *partition.Account

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

	// drops tracks background deletions of dropped tables' data; Close stops and waits for
	// them, and the next Open resumes what they left.
	drops     sync.WaitGroup
	stopDrops context.CancelFunc
	dropsCtx  context.Context

	closeOnce sync.Once
	closeErr  error
}

// Open opens the database in dir, creating it if needed. Reopening a directory brings back
// every table and entity.
func Open(dir string, opts *Options) (*DB, error) {
	if dir == "" {
		return nil, ErrInvalidInput.with("directory is empty; use OpenInMemory for a database without one")
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
	so.SyncWrites = o.SyncWrites
	so.FreeSpace, so.Reserve = o.freeSpace, o.DiskReserve
	store, err := storage.Open(so)
	if err != nil {
		return nil, ErrInternal.with("%v", err)
	}
	if o.QueryBudget == 0 {
		o.QueryBudget = DefaultQueryBudget
	}
	db := &DB{
		store: store, clock: o.Clock, queryBudget: o.QueryBudget, filterCacheBytes: filterCacheBytes,
		service: partition.New(&partition.Options{Now: o.Clock, Limits: o.Limits, Balance: o.Balance, Faults: o.Faults}),
	}
	db.forbidFullScans.Store(o.ForbidFullScans)
	db.boundaries.Store(o.BoundaryContinuations)
	db.dropsCtx, db.stopDrops = context.WithCancel(context.Background())
	if err := db.loadClock(); err != nil {
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
		db.stopDrops()
		db.drops.Wait()
		db.saveClock()
		if err := db.store.Close(); err != nil {
			db.closeErr = ErrInternal.with("%v", err)
		}
	})
	return db.closeErr
}

// The Timestamp clock: max(now, last + 1 tick), so no two writes in a DB share a Timestamp
// (and therefore an ETag) even within one 100 ns tick or when the clock steps back. To keep
// that true across restarts, a bound a little ahead of the Timestamps handed out is persisted
// before they are used (with a real clock, one tiny write every reserveAhead), and Close
// replaces it with the last Timestamp really handed out, marked clean. A database closed
// cleanly therefore resumes at max(now, last + 1 tick), exactly. One that was not (a crash,
// a kill) finds only the reservation; if its clock has passed it, now is right, and if not
// (a restart within reserveAhead of the crash, or a clock stepped back) it reads the newest
// Timestamp stored, a scan of every record that only such a restart pays. Resuming every
// restart from the reservation pushed Timestamps up to reserveAhead further into the
// future each time.
const reserveAhead = 10 * ticksPerSecond

// clockClean ends the clock record that Close writes: the bound before it is the last
// Timestamp handed out, not a reservation.
const clockClean = 'c'

// stamp returns the next Timestamp, in ticks.
func (db *DB) stamp() (int64, error) {
	db.stampMu.Lock()
	defer db.stampMu.Unlock()
	t := max(ticksOf(db.clock()), db.lastTicks+1)
	if t > db.reservedTicks {
		reserve := t + reserveAhead
		err := db.store.Update(func(tx *storage.Txn) error {
			return tx.Set(clockKey, binary.BigEndian.AppendUint64(nil, uint64(reserve)))
		})
		if err != nil {
			return 0, storageError(err)
		}
		db.reservedTicks, db.clockSaved = reserve, false
	}
	db.lastTicks = t
	return t, nil
}

func (db *DB) loadClock() error {
	found := false
	err := db.store.View(func(tx *storage.Txn) (err error) {
		found, err = tx.Get(clockKey, func(v []byte) error {
			switch {
			case len(v) == 9 && v[8] == clockClean:
				db.clockSaved = true
			case len(v) != 8:
				return errCorrupt("clock record is neither 8 nor 9 bytes")
			}
			db.reservedTicks = int64(binary.BigEndian.Uint64(v[:8]))
			return nil
		})
		if err != nil || !found || db.clockSaved || ticksOf(db.clock()) > db.reservedTicks {
			// Every Timestamp handed out so far is at most the stored bound (the last one
			// exactly after a clean Close), and now is past it if it was a reservation.
			db.lastTicks = db.reservedTicks
			return err
		}
		db.lastTicks, err = newestStoredTicks(tx)
		return err
	})
	return storageError(err)
}

// newestStoredTicks returns the newest Timestamp of any entity or table on disk.
func newestStoredTicks(tx *storage.Txn) (int64, error) {
	var newest int64
	for _, prefix := range []byte{prefixEntity, prefixTable} {
		it := tx.Scan([]byte{prefix}, []byte{prefix + 1})
		err := func() error {
			defer it.Close()
			for it.Next() {
				err := it.Value(func(v []byte) error {
					var ticks int64
					var err error
					if prefix == prefixEntity {
						ticks, err = recordTicks(v)
					} else {
						var rec tableRecord
						rec, err = decodeTableRecord(v)
						ticks = rec.Created
					}
					newest = max(newest, ticks)
					return err
				})
				if err != nil {
					return err
				}
			}
			return nil
		}()
		if err != nil {
			return 0, err
		}
	}
	return newest, nil
}

// saveClock replaces the persisted reservation with the last Timestamp handed out, so that
// the next Open resumes from it rather than from the reservation. Close calls it; a failure
// (a full disk, say) leaves the reservation, which is safe.
func (db *DB) saveClock() {
	db.stampMu.Lock()
	defer db.stampMu.Unlock()
	if db.clockSaved {
		return
	}
	err := db.store.Update(func(tx *storage.Txn) error {
		return tx.Set(clockKey, append(binary.BigEndian.AppendUint64(nil, uint64(db.lastTicks)), clockClean))
	})
	if err == nil {
		db.reservedTicks, db.clockSaved = db.lastTicks, true
	}
}

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

// storageError passes Tabula's own errors and context errors through and turns anything else
// from the storage layer into the service's errors, so Badger's never leak.
func storageError(err error) error {
	if err == nil {
		return nil
	}
	var te *Error
	switch {
	case errors.As(err, &te) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, storage.ErrDiskFull):
		return ErrDiskFull.with("%v", err)
	case errors.Is(err, storage.ErrContention):
		return ErrServerBusy.with("too many concurrent writers on the same entities; retry")
	case errors.Is(err, storage.ErrTooLarge):
		// The service would accept this; the store cannot commit it at once.
		return ErrInternal.with("the write is too large for the store to commit at once")
	default:
		return ErrInternal.with("%v", err)
	}
}

// admit asks the simulated service whether an operation may run and turns a refusal into the
// service's error: 503 ServerBusy for a throttle or an offline partition, 500
// OperationTimedOut for an injected timeout.
func admit(d partition.Decision, what string) error {
	switch d.Fault {
	case partition.FaultNone:
		return nil
	case partition.FaultOperationTimedOut:
		return ErrOperationTimedOut.with("%s: injected timeout (Options.Faults)", what)
	}
	var why string
	sentinel := ErrServerBusy
	switch d.Cause {
	case partition.CausePartitionLimit:
		why, sentinel = "the PartitionKey is over its rate limit (Options.Limits)", ErrPartitionBusy
	case partition.CauseAccountLimit:
		why, sentinel = "the database is over its rate limit (Options.Limits)", ErrAccountBusy
	case partition.CauseOffline:
		why, sentinel = "its range partition is offline while it splits (Options.Faults)", ErrPartitionBusy
	default:
		why = "injected fault (Options.Faults)"
	}
	return sentinel.withMessage(d.Message(), "%s: %s", what, why)
}

// HeatReport reports what the simulated service saw: per table, its range partitions with
// their entities, bytes, recent entities/s, throttled counts and splits, and the hottest
// PartitionKeys; the figures a partition stress test examines. Stored entities and bytes
// describe the data on disk, also right after a reopen: a table's are counted from disk when
// it is first used after Open (a report uses them all), and kept up by every write since.
func (db *DB) HeatReport() partition.Report {
	// A table that cannot be counted now (a storage error) is left out of this report.
	_ = db.resolveAll(context.Background())
	return db.service.Report()
}

// ResetStats zeroes the traffic counters of the heat report, so one phase of a stress test
// can be read apart from the one before. It changes no behaviour.
func (db *DB) ResetStats() { db.service.ResetStats() }

// SetLimitMode switches what the rate limits do (see Options.Limits) while the DB runs.
func (db *DB) SetLimitMode(m partition.LimitMode) { db.service.SetLimitMode(m) }

// SetFaults replaces the fault injection (see Options.Faults) while the DB runs; the zero
// Faults turns it off.
func (db *DB) SetFaults(f partition.Faults) { db.service.SetFaults(f) }

// SetRates replaces the rate limits' rates and bursts (see Options.Limits) while the DB runs;
// l.Mode and l.MaxKeys are ignored (SetLimitMode switches the mode), and zero fields take their
// defaults. Every bucket starts full under the new rates.
func (db *DB) SetRates(l partition.Limits) { db.service.SetRates(l) }

// Limits returns the rate limits in force, defaults filled in.
func (db *DB) Limits() partition.Limits { return db.service.Limits() }

// Faults returns the fault injection in force (see Options.Faults).
func (db *DB) Faults() partition.Faults { return db.service.Faults() }

// SetForbidFullScans switches Options.ForbidFullScans while the DB runs; queries prepared from
// then on follow it.
func (db *DB) SetForbidFullScans(on bool) { db.forbidFullScans.Store(on) }

// ForbidFullScans reports whether queries the service would run as full table scans fail.
func (db *DB) ForbidFullScans() bool { return db.forbidFullScans.Load() }

// SetBoundaryContinuations switches Options.BoundaryContinuations while the DB runs; query
// pages started from then on follow it.
func (db *DB) SetBoundaryContinuations(on bool) { db.boundaries.Store(on) }

// BoundaryContinuations reports whether query pages end where their scan crosses into another
// range partition.
func (db *DB) BoundaryContinuations() bool { return db.boundaries.Load() }
