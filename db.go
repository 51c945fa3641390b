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

	// The remaining options simulate how the service behaves under load (package partition).

	// Limits are the service's scalability targets, 2,000 entities/s per PartitionKey and
	// 20,000 per account (here, per DB), counted as the service counts: every entity
	// written, and every entity a query scans. The default mode, LimitObserve, refuses
	// nothing and counts what would have been throttled (see HeatReport); LimitEnforce
	// answers ServerBusy above the targets; LimitOff skips the accounting.
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
	forbidFullScans bool
	boundaries      bool

	// service simulates the service's range partitions, rate limits and faults.
	service *partition.Account

	// open holds the tables operations have resolved (see openTable).
	open openTables

	// filters caches compiled filters by their text (see DB.compile).
	filters     sync.Map // string → *compiledFilter
	filterCount atomic.Int64

	// stampMu guards the Timestamp clock.
	stampMu sync.Mutex
	// lastTicks is the last Timestamp handed out.
	lastTicks int64
	// reservedTicks is a persisted upper bound on handed-out Timestamps (see stamp).
	reservedTicks int64

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
	store, err := storage.Open(so)
	if err != nil {
		return nil, ErrInternal.with("%v", err)
	}
	if o.QueryBudget == 0 {
		o.QueryBudget = DefaultQueryBudget
	}
	db := &DB{
		store: store, clock: o.Clock,
		queryBudget: o.QueryBudget, forbidFullScans: o.ForbidFullScans, boundaries: o.BoundaryContinuations,
		service: partition.New(&partition.Options{Now: o.Clock, Limits: o.Limits, Balance: o.Balance, Faults: o.Faults}),
	}
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
		if err := db.store.Close(); err != nil {
			db.closeErr = ErrInternal.with("%v", err)
		}
	})
	return db.closeErr
}

// The Timestamp clock: max(now, last + 1 tick), so no two writes in a DB share a Timestamp
// (and therefore an ETag) even within one 100 ns tick or when the clock steps back. To keep
// that true across restarts, a bound a little ahead of the Timestamps handed out is persisted
// before they are used, and the clock resumes above it; with a real clock that costs one tiny
// write every reserveAhead.
const reserveAhead = 10 * ticksPerSecond

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
		db.reservedTicks = reserve
	}
	db.lastTicks = t
	return t, nil
}

func (db *DB) loadClock() error {
	err := db.store.View(func(tx *storage.Txn) error {
		_, err := tx.Get(clockKey, func(v []byte) error {
			if len(v) != 8 {
				return errCorrupt("clock record is not 8 bytes")
			}
			db.reservedTicks = int64(binary.BigEndian.Uint64(v))
			return nil
		})
		return err
	})
	db.lastTicks = db.reservedTicks
	return storageError(err)
}

// update runs fn in one atomic read-write transaction. Every write goes through here, so that
// concurrent writes can later be coalesced into one commit without touching the operations.
// fn may run more than once (see storage.DB.Update) and must have no other effects.
func (db *DB) update(ctx context.Context, fn func(tx *storage.Txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return storageError(db.store.Update(fn))
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
	switch d.Cause {
	case partition.CausePartitionLimit:
		why = "the PartitionKey is over its rate limit (Options.Limits)"
	case partition.CauseAccountLimit:
		why = "the database is over its rate limit (Options.Limits)"
	case partition.CauseOffline:
		why = "its range partition is offline while it splits (Options.Faults)"
	default:
		why = "injected fault (Options.Faults)"
	}
	return ErrServerBusy.withMessage(d.Message(), "%s: %s", what, why)
}

// HeatReport reports what the simulated service saw: per table, its range partitions with
// their entities, bytes, recent entities/s, throttled counts and splits, and the hottest
// PartitionKeys; the figures a partition stress test examines. Stored entities and bytes
// are counted from Open on.
func (db *DB) HeatReport() partition.Report { return db.service.Report() }

// ResetStats zeroes the traffic counters of the heat report, so one phase of a stress test
// can be read apart from the one before. It changes no behaviour.
func (db *DB) ResetStats() { db.service.ResetStats() }

// SetLimitMode switches what the rate limits do (see Options.Limits) while the DB runs.
func (db *DB) SetLimitMode(m partition.LimitMode) { db.service.SetLimitMode(m) }

// SetFaults replaces the fault injection (see Options.Faults) while the DB runs; the zero
// Faults turns it off.
func (db *DB) SetFaults(f partition.Faults) { db.service.SetFaults(f) }
