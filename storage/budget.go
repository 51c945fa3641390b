package storage

import (
	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// DefaultMemoryBudget is the memory budget of a store whose Options give none: enough for
// a developer's laptop running the store beside an IDE.
const DefaultMemoryBudget = 256 << 20

// MinMemoryBudget is the smallest budget BadgerOptions honours; a smaller one is raised to
// it. Below it the memtables get so small that Badger flushes after every few transactions.
const MinMemoryBudget = 64 << 20

// BadgerOptions are the options Open gives Badger for a store in dir with a memory budget of
// budget bytes (0 means DefaultMemoryBudget). Badger's defaults took 2.8 GiB of anonymous
// memory loading 1M 1 KiB entities (five 64 MiB memtables, a 256 MiB block cache, every
// table's index in memory, four compactors); here one number is shared out. The shares were
// measured with BenchmarkLoadWithinBudget (bench/) at 400,000 entities:
//
//   - Memtables: two of budget/16 each (16 MiB at the default). Badger allocates a
//     memtable's arena at about 1.3 times its size, so the two take about a sixth of the
//     budget. Two is the fewest that lets writes go on while one is flushed. Size matters
//     beyond the arenas: a flush builds the memtable's whole table in a buffer that Badger
//     keeps pooled (up to eight of them) for the next table, so halving the memtables from
//     budget/8 cut the load's peak RssAnon from 744 to 524 MiB (at 68k and 53k entities/s);
//     budget/32 reached 264 MiB but loaded at only 39k entities/s.
//   - No compression: with Snappy, each table builder holds every block twice (plain and
//     compressed) and every block read from disk is decompressed into the heap; without it
//     the peak fell from 1,203 to 744 MiB (at 75k and 68k entities/s). Tables take more
//     disk instead.
//   - Block cache: budget/5 (51 MiB at the default), the hot blocks of the tables.
//   - Index cache: budget/10 (25 MiB at the default). With an index cache, Badger keeps only
//     the cached tables' indexes and bloom filters in memory instead of every table's, which
//     made its memory grow with the data.
//   - Compaction: two compactors (Badger's fewest) and tables of budget/128 (2 MiB at the
//     default, Badger's own base size).
//
// The budget bounds what these buffers hold live; the Go runtime lets the heap grow to about
// twice its live size between collections (GOGC=100), so the process's anonymous memory can
// reach about twice the store's share, unless the program sets a memory limit
// (runtime/debug.SetMemoryLimit, or GOMEMLIMIT).
//
// Badger refuses a transaction whose entries in the LSM tree exceed 15% of a memtable
// (ErrTxnTooBig). Values from ValueThreshold up go to the value log with only a pointer in
// the tree, so the threshold is set to that limit over 128, at most 64 KiB: then even 100
// writes of values just under it fit, and the transactions of the Table service (4 MiB, 100
// actions, entities of 1 MiB) commit at any budget, while small values, the common case,
// stay in the tree where reads and scans are fastest.
func BadgerOptions(dir string, budget uint64) badger.Options {
	if budget == 0 {
		budget = DefaultMemoryBudget
	}
	budget = max(budget, MinMemoryBudget)
	b := int64(min(budget, 1<<50))
	memtable := b / 16
	maxBatch := memtable * 15 / 100 // Badger's limit on a transaction's entries in the tree
	bo := badger.DefaultOptions(dir).
		WithLoggingLevel(badger.WARNING).
		WithMetricsEnabled(false).
		WithMemTableSize(memtable).
		WithNumMemtables(2).
		WithCompression(options.None).
		WithBlockCacheSize(b / 5).
		WithIndexCacheSize(b / 10).
		WithNumCompactors(2).
		WithBaseTableSize(b / 128).
		WithValueThreshold(min(maxBatch/128, maxValueThreshold))
	return bo
}

// maxValueThreshold is the largest value kept in Badger's LSM tree at any budget: larger ones
// are read less often than they are written over, and a tree of small entries keeps more of
// them per block.
const maxValueThreshold = 64 << 10
