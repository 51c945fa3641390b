package partition

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// fakeClock is the injected clock of every test: time moves only when a
// test says so, so minutes of load run in milliseconds and never sleep.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// offer drives a steady workload on the fake clock: calls per second for
// dur, each Admit(key(i), kind, n), spacing calls evenly. It returns the
// entities admitted and refused.
func offer(clk *fakeClock, t *Table, callsPerSec int, dur time.Duration, kind Kind, n int, key func(i int) string) (admitted, refused int) {
	step := time.Second / time.Duration(callsPerSec)
	calls := int(dur / step)
	for i := range calls {
		if t.Admit(key(i), kind, n).ok() {
			admitted += n
		} else {
			refused += n
		}
		clk.Advance(step)
	}
	return admitted, refused
}

// guidKeys returns a deterministic stream of random GUID-shaped keys.
func guidKeys(seed uint64) func(int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	return func(int) string {
		a, b := r.Uint64(), r.Uint64()
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
	}
}

// counterKeys returns zero-padded increasing keys starting at base: the
// append-only pattern.
func counterKeys(base int) func(int) string {
	return func(i int) string { return fmt.Sprintf("%010d", base+i) }
}
