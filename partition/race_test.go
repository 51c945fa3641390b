package partition

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// atomicClock is a fake clock goroutines can advance concurrently.
type atomicClock struct{ ns atomic.Int64 }

func (c *atomicClock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Many goroutines admit, charge and record on shared tables while the clock
// moves, ranges split and merge, modes and faults change and reports are
// taken. Run with -race; the totals must still add up.
func TestConcurrentUse(t *testing.T) {
	clk := &atomicClock{}
	clk.ns.Store(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	svc := NewService(&Options{Now: clk.Now, Seed: 3, Limits: Limits{MaxKeys: 256},
		Balance: Balance{SplitAfter: 2 * time.Second, MergeAfter: 3 * time.Second, Window: time.Second,
			Interval: 100 * time.Millisecond, SampleSize: 16}})

	const workers, ops = 8, 3000
	var wrote [2]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			tb := svc.Table("", fmt.Sprint("t", w%2))
			key := guidKeys(uint64(w))
			for i := range ops {
				pk := key(0)
				if i%4 == 0 {
					pk = "hot"
				}
				switch i % 5 {
				case 0:
					if tb.Admit(pk, KindQuery, 0).ok() {
						tb.Charge(pk, 50)
					}
				default:
					if tb.Admit(pk, KindInsert, 1).ok() {
						tb.RecordWrite(pk, 1, 100)
						wrote[w%2].Add(1)
					}
				}
				tb.NextBoundary(pk)
				clk.ns.Add(int64(50 * time.Microsecond))
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			svc.SetLimitMode(LimitMode(i % 3))
			if i%2 == 0 {
				svc.SetFaults(Faults{Seed: uint64(i), ServerBusy: 0.01, OfflineOnSplit: true, OfflineFor: time.Millisecond})
			} else {
				svc.SetFaults(Faults{})
			}
			_ = svc.Report().String()
			svc.balanceNow()
			svc.Table("", "t0").SplitAt(fmt.Sprintf("%x", i))
			svc.Table("", "t0").MustEndPage(i)
			svc.AdmitTableOp("", KindQueryTables)
			if i == 100 {
				svc.ResetStats()
			}
		}
	})
	wg.Wait()

	rep := svc.Report()
	require.Len(t, rep.Tables, 2)
	for i, tr := range rep.Tables {
		assert.Equal(t, wrote[i].Load(), tr.Entities, tr.Name)
		assert.Equal(t, 100*wrote[i].Load(), tr.Bytes, tr.Name)
	}
}
