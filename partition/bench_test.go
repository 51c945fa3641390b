package partition

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// The hot path: one Admit per operation, with the real clock (time.Now is
// part of the cost the root package will pay). Limits are set out of reach
// so every operation takes the admitting path; "throttled" benchmarks run
// the default limits against one key, so most operations take the refusing
// path.
//
//	go test -run '^$' -bench . -benchtime 200ms ./partition/

var benchKeys = func() []string {
	ks := make([]string, 4096)
	for i := range ks {
		ks[i] = fmt.Sprintf("pk-%06d", i*7919%100000)
	}
	return ks
}()

func benchService(mode LimitMode, unlimited bool, balance Balance) *Service {
	l := Limits{Mode: mode}
	if unlimited {
		l.PartitionRate, l.AccountRate = math.Inf(1), math.Inf(1)
	}
	return NewService(&Options{Limits: l, Balance: balance})
}

func BenchmarkAdmit(b *testing.B) {
	for _, mode := range []LimitMode{LimitOff, LimitObserve, LimitEnforce} {
		b.Run(mode.String(), func(b *testing.B) {
			tb := benchService(mode, true, Balance{}).Table("", "t")
			i := 0
			for b.Loop() {
				tb.Admit(benchKeys[i&4095], KindInsert, 1)
				i++
			}
		})
		b.Run(mode.String()+"/parallel", func(b *testing.B) {
			tb := benchService(mode, true, Balance{}).Table("", "t")
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(seq.Add(1)) * 1000
				for pb.Next() {
					tb.Admit(benchKeys[i&4095], KindInsert, 1)
					i++
				}
			})
		})
	}
	for _, mode := range []LimitMode{LimitObserve, LimitEnforce} {
		b.Run(mode.String()+"/throttled", func(b *testing.B) {
			tb := benchService(mode, false, Balance{}).Table("", "t")
			for b.Loop() {
				tb.Admit("hot", KindInsert, 1)
			}
		})
	}
	// With 1,000 range partitions the lookup walks a three-level B-tree.
	b.Run("observe/1000-ranges", func(b *testing.B) {
		tb := benchService(LimitObserve, true, Balance{}).Table("", "t")
		for i := 1; i < 1000; i++ {
			tb.SplitAt(fmt.Sprintf("pk-%06d", i*100))
		}
		i := 0
		for b.Loop() {
			tb.Admit(benchKeys[i&4095], KindInsert, 1)
			i++
		}
	})
	b.Run("observe/balancing-disabled", func(b *testing.B) {
		tb := benchService(LimitObserve, true, Balance{Disabled: true}).Table("", "t")
		i := 0
		for b.Loop() {
			tb.Admit(benchKeys[i&4095], KindInsert, 1)
			i++
		}
	})
	// The account bucket on every admission: PartitionKeys unlimited, the account's rate
	// out of reach but finite, so each Admit takes the account's bucket too.
	b.Run("enforce/account-bucket", func(b *testing.B) {
		svc := NewService(&Options{Limits: Limits{Mode: LimitEnforce, PartitionRate: math.Inf(1), AccountRate: 1e15}})
		tb := svc.Table("", "t")
		i := 0
		for b.Loop() {
			tb.Admit(benchKeys[i&4095], KindInsert, 1)
			i++
		}
	})
	b.Run("faults", func(b *testing.B) {
		svc := NewService(&Options{Limits: Limits{Mode: LimitOff}, Faults: Faults{ServerBusy: 0.01, Timeout: 0.01}})
		tb := svc.Table("", "t")
		i := 0
		for b.Loop() {
			tb.Admit(benchKeys[i&4095], KindInsert, 1)
			i++
		}
	})
}

func BenchmarkRecordWrite(b *testing.B) {
	tb := NewService(nil).Table("", "t")
	for i := 1; i < 100; i++ {
		tb.SplitAt(fmt.Sprintf("pk-%06d", i*1000))
	}
	i := 0
	for b.Loop() {
		tb.RecordWrite(benchKeys[i&4095], 1, 1024)
		i++
	}
}

func BenchmarkCharge(b *testing.B) {
	tb := benchService(LimitObserve, true, Balance{}).Table("", "t")
	i := 0
	for b.Loop() {
		tb.Charge(benchKeys[i&4095], 100)
		i++
	}
}

func BenchmarkMustEndPage(b *testing.B) {
	tb := NewService(&Options{Faults: Faults{ContinuationEvery: 1000}}).Table("", "pages")
	i := 0
	for b.Loop() {
		tb.MustEndPage(i & 1023)
		i++
	}
}

func BenchmarkTimeNow(b *testing.B) {
	for b.Loop() {
		_ = time.Now().UnixNano()
	}
}
