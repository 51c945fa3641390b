package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula"
)

// scaleSizes are the table sizes BenchmarkScale measures, in entities.
var scaleSizes = []int{10_000, 100_000, 1_000_000, 10_000_000}

// scaleRows is the size of every partition of the scale table: a partition query returns
// 100 entities whatever the table's size.
const scaleRows = 100

// scaleLimit reads TABULA_SCALE: unset (or 0) skips the scale benchmark, "1" runs every
// size, and a larger number runs the sizes up to it (TABULA_SCALE=1000000 stops at 1M).
func scaleLimit(b *testing.B) int {
	s := os.Getenv("TABULA_SCALE")
	if s == "" || s == "0" {
		b.Skip("set TABULA_SCALE=1 (every size) or TABULA_SCALE=<entities> to run the scale benchmark")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		b.Fatalf("TABULA_SCALE=%q: want 1 or a number of entities", s)
	}
	if n == 1 {
		return scaleSizes[len(scaleSizes)-1]
	}
	return n
}

// BenchmarkScale grows one table on disk through 10k, 100k, 1M and 10M entities (GUID
// partitions of 100 rows, loaded in transactions of 100) and at each size measures a point
// get and a whole-partition query of 100 rows, at random keys; each reports the process's
// memory and the database's size on disk. Loading is not timed; PointGet reports its rate
// (load-entities/s), the wait for compactions after it (settle-s) and the peaks of the
// process's anonymous memory and resident set through both, sampled every 10 ms
// (load-peak-anon-MB, load-peak-RSS-MB). The cost per operation should stay nearly flat
// and the anonymous memory under the memory budget at every size.
func BenchmarkScale(b *testing.B) {
	limit := scaleLimit(b)
	dir := b.TempDir()
	db := openScaleDB(b, dir)
	t := createTable(b, db, "Scale")
	w := NewWorkload(shape, 12)
	var pks, prefixes []string
	for _, size := range scaleSizes {
		if size > limit {
			break
		}
		b.Run(fmt.Sprintf("entities=%d", size), func(b *testing.B) {
			var parts []partitionLoad
			for p := len(pks); p < size/scaleRows; p++ {
				pks, prefixes = append(pks, w.GUID()), append(prefixes, w.RowPrefix(p/1000, p%1000))
				parts = append(parts, partitionLoad{pk: pks[p], prefix: prefixes[p], to: scaleRows, base: p * scaleRows})
			}
			stop, peak := sampleMemory(10 * time.Millisecond)
			began := time.Now()
			loadEngine(b, t, w, parts)
			loadRate := float64(len(parts)*scaleRows) / time.Since(began).Seconds()
			settled := settle(dir, 3*time.Second, 5*time.Minute)
			stop()
			writeHeapProfile(b, size)
			rng := rand.New(rand.NewPCG(uint64(size), 1))
			b.Run("PointGet", func(b *testing.B) {
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					p := rng.IntN(len(pks))
					if _, err := t.Get(ctx, pks[p], RowKey(prefixes[p], rng.IntN(scaleRows))); err != nil {
						b.Fatal(err)
					}
					n++
				}
				reportRate(b, n, "entities/s")
				reportFootprint(b, dir)
				b.ReportMetric(loadRate, "load-entities/s")
				b.ReportMetric(settled.Seconds(), "settle-s")
				b.ReportMetric(float64(peak["RssAnon"])/(1<<20), "load-peak-anon-MB")
				b.ReportMetric(float64(peak["VmRSS"])/(1<<20), "load-peak-RSS-MB")
			})
			b.Run("PartitionQuery", func(b *testing.B) {
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					p := rng.IntN(len(pks))
					page, err := t.Query(ctx, tabula.Query{Filter: partitionFilter(pks[p])})
					if err != nil {
						b.Fatal(err)
					}
					if len(page.Entities) != scaleRows || !page.Continuation.IsZero() {
						b.Fatalf("partition query returned %d entities", len(page.Entities))
					}
					n += len(page.Entities)
				}
				reportRate(b, n, "entities/s")
				reportFootprint(b, dir)
			})
		})
	}
}

// openScaleDB opens the scale database on disk whatever TABULA_BENCH_STORE says (10M
// entities of 1 KiB do not belong in memory), with the memory budget TABULA_BENCH_BUDGET
// sets.
func openScaleDB(b *testing.B, dir string) *tabula.DB {
	db, err := tabula.Open(dir, &tabula.Options{MemoryBudget: benchBudget(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := db.Close(); err != nil {
			b.Error(err)
		}
	})
	return db
}

// reportFootprint reports the process's memory (see memory), the Go heap in use and the
// disk space dir takes.
func reportFootprint(b *testing.B, dir string) {
	if m, err := memory(); err == nil {
		b.ReportMetric(float64(m["VmHWM"])/(1<<20), "peak-RSS-MB")
		b.ReportMetric(float64(m["VmRSS"])/(1<<20), "RSS-MB")
		b.ReportMetric(float64(m["RssAnon"])/(1<<20), "anon-RSS-MB")
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	b.ReportMetric(float64(diskUsage(dir))/(1<<20), "disk-MB")
}

// writeHeapProfile writes a heap profile of the loaded, settled store to the directory
// TABULA_SCALE_HEAPPROFILE names, if it is set: what holds the memory at each size.
func writeHeapProfile(b *testing.B, size int) {
	dir := os.Getenv("TABULA_SCALE_HEAPPROFILE")
	if dir == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%d.pprof", size)))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// diskUsage is the space the files under dir take: allocated blocks, since Badger's files
// are sparse and their apparent sizes larger.
func diskUsage(dir string) int64 {
	var size int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				size += allocated(info)
			}
		}
		return nil
	})
	return size
}

// settle waits until the disk usage of dir has not changed for quiet (the store's
// background compactions are done), or for at most limit, and returns how long it waited.
func settle(dir string, quiet, limit time.Duration) time.Duration {
	began := time.Now()
	last, since := diskUsage(dir), time.Now()
	for time.Since(began) < limit && time.Since(since) < quiet {
		time.Sleep(250 * time.Millisecond)
		if now := diskUsage(dir); now != last {
			last, since = now, time.Now()
		}
	}
	return time.Since(began)
}

// memory reads the process's memory figures from /proc/self/status, in bytes: VmHWM (peak
// resident set), VmRSS (current), and RssAnon (its anonymous part: heap, stacks and caches,
// not mapped files).
func memory() (map[string]int64, error) { return procStatus("self") }

// procStatus reads the memory figures of memory from /proc/PID/status.
func procStatus(pid string) (map[string]int64, error) {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != "VmHWM" && name != "VmRSS" && name != "RssAnon" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return nil, err
		}
		out[name] = kb << 10
	}
	return out, nil
}

// sampleMemory samples the process's memory (see memory) every interval until stop is
// called, which returns after a last sample; peak then holds the largest sample of each
// figure, in bytes.
func sampleMemory(interval time.Duration) (stop func(), peak map[string]int64) {
	peak = map[string]int64{}
	sample := func() {
		if m, err := memory(); err == nil {
			for k, v := range m {
				peak[k] = max(peak[k], v)
			}
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				sample()
				return
			case <-tick.C:
				sample()
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }, peak
}

func TestMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	m, err := memory()
	if err != nil || m["VmHWM"] <= 0 || m["VmRSS"] <= 0 || m["VmRSS"] > m["VmHWM"] || m["RssAnon"] > m["VmRSS"] {
		t.Errorf("memory() = %v, %v", m, err)
	}
}
