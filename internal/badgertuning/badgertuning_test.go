package badgertuning

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4/options"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Options shares one budget out across Badger's memtables, caches and compaction, and
// keeps the value threshold low enough for the service's largest transaction.
func TestOptions(t *testing.T) {
	const MiB = 1 << 20
	for _, tc := range []struct {
		budget    uint64
		memtable  int64
		threshold int64
	}{
		{0, 16 * MiB, 19660}, // the default
		{256 * MiB, 4 * MiB, 4915},
		{1, 4 * MiB, 4915}, // raised to the minimum
		{128 * MiB, 4 * MiB, 4915},
		{1 << 30, 16 * MiB, 19660},
		{16 << 30, 256 * MiB, 64 << 10}, // threshold capped
	} {
		t.Run(fmt.Sprint(tc.budget), func(t *testing.T) {
			o := Options("dir", tc.budget)
			assert.Equal(t, "dir", o.Dir)
			assert.Equal(t, tc.memtable, o.MemTableSize, "memtable")
			assert.Equal(t, 2, o.NumMemtables)
			assert.Zero(t, o.BlockCacheSize, "block cache: see Options")
			assert.Zero(t, o.IndexCacheSize, "index cache")
			assert.Equal(t, 2, o.NumCompactors)
			assert.Equal(t, options.None, o.Compression)
			assert.Equal(t, tc.threshold, o.ValueThreshold, "value threshold")
			assert.Equal(t, options.NoVerification, o.ChecksumVerificationMode, "blocks checked once, at storage.Open (storage/verify.go)")
			assert.True(t, o.VerifyValueChecksum, "value-log entries checked as read")
			// Every table is a memtable's size, at every level, so that a table builder's
			// first buffer (twice the table size) holds a flushed memtable's table, blocks
			// filled to three quarters and all, and no pooled buffer grows past it.
			assert.Equal(t, o.MemTableSize, o.BaseTableSize, "table")
			assert.Equal(t, 1, o.TableSizeMultiplier)
			// The service's largest transaction: 100 values just under the threshold fit in
			// Badger's batch limit (15% of a memtable).
			assert.Less(t, 100*(o.ValueThreshold+1024), TxnLimit(o))
			assert.Equal(t, o.MemTableSize*15/100, TxnLimit(o))
		})
	}
}

// The memory limit a store holds is the process's memory when it opened plus the budgets of
// the stores open, and is lifted when the last closes.
func TestHoldGoLimit(t *testing.T) {
	noLimit(t)
	first := HoldGoLimit(1 << 30)
	one := debug.SetMemoryLimit(-1)
	assert.Less(t, one, int64(noGoLimit))
	assert.GreaterOrEqual(t, one, int64(1<<30)*15/16)
	second := HoldGoLimit(0)
	assert.Equal(t, one+DefaultMemoryBudget*15/16, debug.SetMemoryLimit(-1), "a second store adds its budget")
	first()
	first() // a second call does nothing
	assert.Equal(t, one+(DefaultMemoryBudget-1<<30)*15/16, debug.SetMemoryLimit(-1))
	second()
	assert.Equal(t, int64(noGoLimit), debug.SetMemoryLimit(-1), "lifted when the last store closes")
}

// A limit the program set, before a store opens or while it is open, is the program's: the
// store leaves it alone.
func TestHoldGoLimitLeavesTheProgramsLimit(t *testing.T) {
	noLimit(t)
	debug.SetMemoryLimit(1 << 40)
	HoldGoLimit(0)()
	assert.Equal(t, int64(1<<40), debug.SetMemoryLimit(-1), "set before")

	debug.SetMemoryLimit(noGoLimit)
	release := HoldGoLimit(0)
	debug.SetMemoryLimit(1 << 40)
	other := HoldGoLimit(0)
	goLimit.Lock()
	adjustGoLimit()
	goLimit.Unlock()
	other()
	release()
	assert.Equal(t, int64(1<<40), debug.SetMemoryLimit(-1), "set while open")

	debug.SetMemoryLimit(noGoLimit)
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	HoldGoLimit(0)()
	assert.Equal(t, int64(noGoLimit), debug.SetMemoryLimit(-1), "collector off")
}

// A host program whose heap outgrows the budget is not made to collect more often than GOGC
// has it: after each collection, the limit rises to the heap GOGC aims at.
func TestHoldGoLimitFollowsALargerHeap(t *testing.T) {
	noLimit(t)
	adjusted := make(chan struct{}, 1)
	afterAdjust = func() {
		select {
		case adjusted <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { afterAdjust = func() {} })
	// The limit starts from what the process holds from the system; memory an earlier test
	// freed but the runtime kept would count as the host's and could put the start above
	// the heap GOGC aims at below.
	debug.FreeOSMemory()
	release := HoldGoLimit(MinMemoryBudget)
	defer release()
	held := debug.SetMemoryLimit(-1)

	host := make([]*[1 << 20]byte, 384) // 384 MiB live, more than the budget
	for i := range host {
		host[i] = new([1 << 20]byte)
	}
	// Collections ran while host grew, and their adjustments, made with less of it live, may
	// have signalled already; so collect, and wait for the adjustment after, until one has
	// seen host whole. Each round waits for an event (a collection, then the adjustment that
	// follows it), never for time; a limit that does not follow the heap stops at hang.
	want := int64(2*len(host)) << 20   // at least the heap GOGC=100 aims at
	hang := time.NewTimer(time.Minute) // a hang, not a wait for behaviour
	defer hang.Stop()
	for debug.SetMemoryLimit(-1) < want {
		runtime.GC()
		select {
		case <-adjusted:
		case <-hang.C:
			t.Fatalf("the limit, %d, did not reach the heap GOGC aims at, %d, after collections", debug.SetMemoryLimit(-1), want)
		}
	}
	assert.Greater(t, debug.SetMemoryLimit(-1), held)
	runtime.KeepAlive(host)
}

// noLimit makes sure the test starts with no memory limit and no store holding one, and
// ends the same way.
func noLimit(t *testing.T) {
	t.Helper()
	goLimit.Lock()
	stores := goLimit.stores
	goLimit.Unlock()
	require.Zero(t, stores, "a store of another test holds the memory limit")
	old := debug.SetMemoryLimit(noGoLimit)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
}
