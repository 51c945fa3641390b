package main

import (
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	in := `goos: linux
BenchmarkPointGet/engine-2   100  20000 ns/op  50000 entities/s  7000 B/op  55 allocs/op
BenchmarkPointGet/engine-2   100  10000 ns/op  100000 entities/s  7000 B/op  55 allocs/op
BenchmarkPointGet/engine-2   100  25000 ns/op  40000 entities/s  7000 B/op  55 allocs/op
BenchmarkPointGet/badger-2   100  10000 ns/op  100000 entities/s  5000 B/op  20 allocs/op
BenchmarkQuery/Point/engine-2   100  20000 ns/op  50000 scanned/s
BenchmarkQuery/Point/badger-2   100  10000 ns/op  100000 scanned/s
BenchmarkLimits/Insert/mode=off-2   100  20000 ns/op
PASS
`
	r, order, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	got := table(r, order)
	for _, want := range []string{
		"| PointGet | 50k entities/s | 100k | 0.50 | ≥ 0.95 **miss** |  | 6.8 KiB | 4.9 KiB | 55 | 20 |",
		"| Query/Point | 50k scanned/s | 100k | 0.50 | ≥ 0.9 **miss** |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Limits") {
		t.Errorf("a benchmark without engine and badger sides is in the table:\n%s", got)
	}
}

// In memory, a btree sub-benchmark is the peer with the target, and the badger row has none.
func TestTableBtree(t *testing.T) {
	in := `BenchmarkInsert/engine-2   100  20000 ns/op  95000 entities/s  4000 cpu-ns/entity
BenchmarkInsert/badger-2   100  10000 ns/op  50000 entities/s  6000 cpu-ns/entity
BenchmarkInsert/btree-2   100  10000 ns/op  100000 entities/s  3000 cpu-ns/entity
`
	r, order, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	got := table(r, order)
	for _, want := range []string{
		"| Insert | 95k entities/s | 50k | 1.90 |  | 1.50 |",
		"| Insert (btree) | 95k entities/s | 100k | 0.95 | ≥ 0.9 pass | 0.75 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
