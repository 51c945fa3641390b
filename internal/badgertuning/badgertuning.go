// Package badgertuning is how Tabula tunes Badger for a memory budget: the options a store
// gives Badger (Options) and the Go runtime's memory limit it holds while open
// (HoldGoLimit). The storage package opens its stores with them; bench's raw-Badger
// baselines open Badger with the same, so that each ratio compares like with like.
package badgertuning

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// DefaultMemoryBudget is the memory budget of a store whose Options give none: 1 GiB, for a
// developer's laptop running the store beside an IDE. It is a cap, not a reservation:
// memtables and table builders take their shares as data comes (loading a million 1 KiB
// entities peaks near half of it). Its memtables of 16 MiB hold a table of ten thousand such entities, as a test
// loads one, whole: a scan of it reads no table file, and a load pays a quarter of the
// flushes and compactions that the smallest budget's memtables of 4 MiB cost (BENCHMARKS.md,
// "On disk beside in memory").
const DefaultMemoryBudget = 1 << 30

// MinMemoryBudget is the smallest budget Options honours; a smaller one is raised to
// it. Memtables are budget/64, and below 4 MiB Badger would refuse some of the Table
// service's transactions (100 entities with keys of 1 KiB and values just under the value
// threshold; see Options); the table builders that memtables of 4 MiB need take about
// half of this budget (see Options).
const MinMemoryBudget = 256 << 20

// Options are the options storage.Open gives Badger for a store in dir with a memory budget of
// budget bytes (0 means DefaultMemoryBudget). Badger's defaults take several GiB of
// anonymous memory loading a million 1 KiB entities; here one number is shared out, by what
// Badger v4 does with memory:
//
//   - Table builders take most of it. Each flush and each compaction builds a whole table in
//     a buffer (a Go slice) whose first page is twice the table size Badger is given and
//     which doubles when the table outgrows it; a compaction runs up to 8 builders plus one
//     per split, two compactions run at once, and Badger pools 8 used buffers, grown as
//     they were, for the next builders. So every table, flushed or compacted and at every
//     level, is a memtable's size (a table size multiplier of 1): no buffer outgrows its
//     first page, twice a memtable.
//   - Memtables: two, the fewest that let writes go on while one is flushed; Badger
//     allocates each one's arena at about 1.3 times its size.
//   - No compression: a builder would hold every block twice, and every block read would be
//     decompressed into the heap.
//   - No block cache. Uncompressed, unencrypted blocks are read in place from the
//     memory-mapped table files, and Badger costs each block it caches at the capacity of
//     its slice of the mapping, the rest of the file: a cache of budget/8 held a handful of
//     blocks, while every read paid for a lookup and an insert.
//   - No index cache: Badger uses it only for encrypted tables.
//   - Two compactors, Badger's fewest.
//   - Levels four times the size of the one above (Badger's default is ten): a compaction
//     merges a table with the tables it overlaps in the next level, so a smaller ratio means
//     fewer builders per compaction, and a leveled tree of ratio r rewrites an entity about
//     r/ln(r) times per factor of e it grows, least near 3. Level 0 keeps Badger's 5 tables:
//     every table there is one more place for each read to look.
//   - Blocks of 64 KiB rather than Badger's 4 KiB. Without a block cache, an iterator that
//     enters a block allocates and parses it afresh: in blocks of 4 KiB a scan of tables
//     paid that every three entities of 1 KiB (4,100 allocations a scan of 10,000, a tenth
//     of its CPU), in blocks of 64 KiB every 58 (250), and such a scan at the smallest
//     budget costs 15-20% less. Point reads search longer blocks at no cost measurement
//     could tell from noise. A block is also what salvage loses when one fails its checksum.
//
// What these buffers hold live stays under about half the budget; the Go runtime lets the
// heap grow to twice what is live between collections, which the runtime's soft memory
// limit, held while the store is open (see HoldGoLimit), keeps within the budget. The table
// files themselves are memory-mapped: their pages count in the resident set (RSS) but not in
// its anonymous part, and the kernel drops them under memory pressure.
//
// Badger refuses a transaction whose entries in the LSM tree exceed 15% of a memtable
// (ErrTxnTooBig). Values from ValueThreshold up go to the value log with only a pointer in
// the tree, so the threshold is set to that limit over 128, at most 64 KiB: then even 100
// writes of values just under it fit, and the transactions of the Table service (4 MiB, 100
// actions, entities of 1 MiB) commit at any budget, while small values, the common case,
// stay in the tree where reads and scans are fastest.
func Options(dir string, budget uint64) badger.Options {
	b := int64(min(EffectiveBudget(budget), 1<<50))
	memtable := b / 64
	maxBatch := txnLimit(memtable)
	bo := badger.DefaultOptions(dir).
		WithLoggingLevel(badger.WARNING).
		WithMetricsEnabled(false).
		WithMemTableSize(memtable).
		WithNumMemtables(2).
		WithBaseTableSize(memtable).
		WithCompression(options.None).
		WithBlockSize(64 << 10).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithNumCompactors(2).
		WithValueThreshold(min(maxBatch/128, maxValueThreshold)).
		// Value-log GC (storage/vloggc.go) gives back whole files, never the one being written, so
		// Badger's 1 GiB would keep up to a GiB of garbage and copy up to half of one per
		// pass (a pass of 256 MiB files took 0.5 s, of 64 MiB 0.13 s: BenchmarkOpenGC).
		// 64 MiB bounds both; a TiB of values is then 16k files, each an open descriptor.
		WithValueLogFileSize(64 << 20)
	bo.TableSizeMultiplier = 1 // no With method for it
	bo.LevelSizeMultiplier = 4
	// Every block of every table is verified once, at Open (storage/verify.go), and the tables made
	// later are made from verified data, so reads do not verify blocks again; Badger's
	// verification on read would also end a scan silently at a damaged block. A value in
	// the value log is verified each time it is read.
	return bo.WithVerifyValueChecksum(true)
}

// EffectiveBudget is the budget a store given budget bytes keeps to: the default for 0, and
// at least MinMemoryBudget.
func EffectiveBudget(budget uint64) uint64 {
	if budget == 0 {
		budget = DefaultMemoryBudget
	}
	return max(budget, MinMemoryBudget)
}

// maxValueThreshold is the largest value kept in Badger's LSM tree at any budget: larger ones
// are read less often than they are written over, and a tree of small entries keeps more of
// them per block.
const maxValueThreshold = 64 << 10

// The Go runtime lets the heap grow to about twice what is live between collections
// (GOGC=100), so a store holding half its budget live could take all of it, and more while
// a compaction's buffers turn over. A store opened with storage.Options.GoMemoryLimit therefore
// holds the runtime's soft memory limit (runtime/debug.SetMemoryLimit) while it is open.
//
// The limit is what the process used when the first such store opened (what the host
// program already uses) plus 15/16 of the open stores' budgets. The limit is soft; the last
// sixteenth is room for what the runtime lets past it while a collection runs (loading 1M
// entities with the limit at the whole budget, RssAnon peaked 14 MiB past the budget).
//
// So that a host program whose own heap grows is never made to collect more often than
// GOGC has it, the limit is raised after every collection to the heap GOGC aims at, when
// that is higher. The limit is taken only if the program has set none (GOMEMLIMIT,
// debug.SetMemoryLimit) and its collector is on; it is left to the program once the program
// sets one itself; and it is lifted when the last store closes.
var goLimit struct {
	sync.Mutex
	stores  int    // open stores counted in the limit
	budgets uint64 // their budgets, summed
	base    uint64 // the process's memory when the first of them opened
	owned   bool   // the limit is ours to set: the program has not set one since
	set     int64  // the limit last set
	cycle   uint64 // counts the holds, so that a sentinel of an earlier one stops
}

// noGoLimit is the runtime's memory limit when none is set.
const noGoLimit = math.MaxInt64

// HoldGoLimit counts a store of the given budget (0 for the default) in the Go runtime's
// memory limit (see goLimit), as storage.Open does for a store with storage.Options.GoMemoryLimit, and
// returns the function that stops counting it. The benchmarks give raw Badger the same limit.
func HoldGoLimit(budget uint64) (release func()) {
	budget = EffectiveBudget(budget)
	goLimit.Lock()
	defer goLimit.Unlock()
	if goLimit.stores == 0 {
		if debug.SetMemoryLimit(-1) != noGoLimit || gcPercent() < 0 {
			return func() {}
		}
		goLimit.base = processMemory()
		goLimit.owned, goLimit.set = true, noGoLimit
		goLimit.cycle++
		armGoLimit(goLimit.cycle)
	}
	goLimit.stores++
	goLimit.budgets += budget
	adjustGoLimit()
	var once sync.Once
	return func() {
		once.Do(func() {
			goLimit.Lock()
			defer goLimit.Unlock()
			goLimit.stores--
			goLimit.budgets -= budget
			if goLimit.stores > 0 {
				adjustGoLimit()
				return
			}
			if goLimit.owned && debug.SetMemoryLimit(-1) == goLimit.set {
				debug.SetMemoryLimit(noGoLimit)
			}
			goLimit.owned = false
		})
	}
}

// adjustGoLimit sets the limit to the base and budgets, or to the heap GOGC aims at after the
// last collection if that is more. Called with goLimit locked.
func adjustGoLimit() {
	if !goLimit.owned {
		return
	}
	if debug.SetMemoryLimit(-1) != goLimit.set {
		goLimit.owned = false // the program set a limit of its own
		return
	}
	if gcPercent() < 0 { // the program turned the collector off: the limit would be its only trigger
		debug.SetMemoryLimit(noGoLimit)
		goLimit.owned = false
		return
	}
	limit := max(goLimit.base+goLimit.budgets-goLimit.budgets/16, gogcGoal())
	goLimit.set = int64(min(limit, noGoLimit))
	debug.SetMemoryLimit(goLimit.set)
}

// armGoLimit has adjustGoLimit run after every collection while the stores of this hold are
// open: a finalizer runs once the collection that finds its object unreachable is over.
func armGoLimit(cycle uint64) {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		goLimit.Lock()
		defer goLimit.Unlock()
		if goLimit.cycle != cycle || goLimit.stores == 0 {
			return
		}
		adjustGoLimit()
		armGoLimit(cycle)
		afterAdjust()
	})
}

// afterAdjust is called after each adjustment that follows a collection; tests set it.
var afterAdjust = func() {}

// gcSentinel is an object that only its finalizer refers to. Its pointer keeps it out of
// the tiny allocator, whose objects are freed, and finalized, together.
type gcSentinel struct{ _ *byte }

// gcPercent is GOGC, as the program set it; negative when the collector is off.
func gcPercent() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// processMemory is the memory the Go runtime has from the system and has not returned: the
// heap, stacks and the runtime's own structures.
func processMemory() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// gogcGoal is the memory GOGC lets the process reach before the next collection: the heap
// live after the last one grown by GOGC percent, and the memory that is not heap.
func gogcGoal() uint64 {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/gogc:percent"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	live, gogc := s[0].Value.Uint64(), s[1].Value.Uint64()
	var heap uint64
	for _, h := range s[3:] {
		heap += h.Value.Uint64()
	}
	return live + live*gogc/100 + s[2].Value.Uint64() - heap
}

// TxnLimit is the most a transaction may hold in the LSM tree (keys, and values under the
// value threshold) with options bo: Badger refuses more than 15% of a memtable
// (badger.ErrTxnTooBig).
func TxnLimit(bo badger.Options) int64 { return txnLimit(bo.MemTableSize) }

func txnLimit(memtable int64) int64 { return memtable * 15 / 100 }
