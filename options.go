package tabula

import (
	"log/slog"
	"time"

	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// MinMemoryBudget is the smallest Options.MemoryBudget honoured: a smaller one is raised to
// it, as below it Badger would refuse some of the Table service's transactions.
const MinMemoryBudget = storage.MinMemoryBudget

// Options tune a DB. The zero value (or a nil *Options) is the default.
type Options struct {
	// SyncWrites makes every write wait until the operating system has flushed it to disk.
	//
	// Off (the default), a write is acknowledged once it is in the operating system's file
	// cache: a process crash loses nothing acknowledged, but a power loss or kernel crash can
	// lose the last writes acknowledged before it (about the last second: the store syncs its logs every second). What
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

	// TableDeleteDelay keeps a deleted table's name in the service's transient
	// TableBeingDeleted state for this long, on Clock: creating a table of that name, or
	// any operation on it, gets 409 TableBeingDeleted until it has passed, as on the
	// service, which takes at least 40 seconds (ServiceTableDeleteDelay). The emulators
	// free the name at once, so retry code for that answer never runs against them; this
	// is how to run it. 0, the default, frees the name at once.
	TableDeleteDelay time.Duration

	// Flavor is the service whose rules the DB enforces: FlavorTable, the default, the Azure
	// Table service's; FlavorCosmos adds the rules in which the Cosmos DB for Table API is
	// stricter (a 255-byte RowKey, no empty keys, 2 MiB transactions, reserved property
	// names, case-sensitive table names, query results not in key order), with Cosmos DB's
	// answers. See Flavor.
	Flavor Flavor

	// DiskReserve is the free space, in bytes, that a database on disk keeps on its disk:
	// with less, writes fail with ErrDiskFull (reads go on), and Open opens the database
	// read-only. The store writes through memory-mapped files, and running out of space
	// there would kill the process rather than fail a write, so the reserve leaves room for
	// its flushes and compactions. 0 means 512 MiB; lower it only on a disk too small for
	// that, and only as far as the data written between two compactions needs.
	DiskReserve uint64

	// MemoryBudget is the memory, in bytes, that a database on disk lets its store take for
	// its write buffers (memtables), its caches and its compactions, with the Go heap's
	// room to collect in (see NoGoMemoryLimit); the process's own allocations (requests,
	// query results) come on top, and so do the pages of the memory-mapped table files, which
	// count in the resident set but which the kernel drops under memory pressure. 0 means
	// 1 GiB (internal/badgertuning says why); the smallest honoured is MinMemoryBudget,
	// 256 MiB. A larger budget buys fewer flushes and compactions; a smaller one holds less
	// while loading. It does not matter for OpenInMemory.
	MemoryBudget uint64

	// NoGoMemoryLimit leaves the Go runtime's soft memory limit alone. Otherwise, while a
	// database on disk is open and unless the program has set a limit itself (GOMEMLIMIT,
	// runtime/debug.SetMemoryLimit) or turned the collector off, Open sets the limit to
	// what the process used when the first such database opened plus 15/16 of the open
	// databases' MemoryBudgets (the limit is soft: the rest is room for what the runtime lets
	// past it). Without it the Go heap grows to twice what it holds live between
	// collections (GOGC=100), and the store's buffers would take twice their budget. The
	// limit is raised after each collection to the heap GOGC aims at when that is higher,
	// so a program whose own heap grows is never made to collect more often than GOGC has
	// it; it is lifted when the last database closes, and left to the program as soon as it
	// sets a limit of its own.
	NoGoMemoryLimit bool

	// Logger receives what the database has to report outside any call's result: that Open
	// upgraded a directory written in an older format, which builds of that format then
	// refuse to open (Info), or found one it could not yet upgrade for want of disk space
	// (Warn); and that the disk has less free space than DiskReserve (Warn: at Open, and at
	// the first write refused for it, again after writes had resumed). nil means slog.Default(), as a nil http.Server.ErrorLog means the log
	// package's standard logger.
	Logger *slog.Logger

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
