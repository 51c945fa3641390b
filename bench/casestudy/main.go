// Command casestudy reruns a performance case study of Azure Table storage (its sections
// "Performance Case Study Methodology" and "Performance Results and Tips") against an embedded Tabula database, and
// prints a table and writes an SVG chart per figure:
//
//	Figures 5–6  batch size vs latency per batch and per entity, one goroutine, one
//	             partition, on one core and on every core (the study's small and XL VMs)
//	Figure 7     batch size vs throughput, 30 goroutines on their own partitions
//	Figures 8–9  single vs multi-partition inserts and gets as goroutines grow, with the
//	             service's limits enforced (2,000 entities/s per partition, 20,000 per account)
//	Figures 10–11 batch-of-100 inserts and gets vs goroutines, multiple partitions
//	Figure 15    saturating one partition with batches of 100: successful entities/s and
//	             the share of requests throttled
//
// The workload is the study's: GUID PartitionKeys, one per goroutine (or one shared by all
// in single-partition runs), RowKeys JobID_VMID_WorkerId_Index, and one 1 KiB Payload
// string (-shape mixed for five properties of mixed types). Each goroutine issues its next
// request as soon as the last one returns; after ServerBusy it waits -throttle-wait (the
// seed's clients waited 3 s). The rate-limited figures run -warmup unmeasured before each
// point, the study's "steady state", with buckets of -burst worth of tokens so that short
// runs are not dominated by a full bucket.
//
// Usage:
//
//	go run ./bench/casestudy [-d 300ms] [-out bench/casestudy/out] [-figs 5-7,8-9,10-11,15]
//
// The numbers are not Azure's: a request here is a function call, not a round trip to a
// server. -latency adds a simulated round trip to every request, which brings back the
// client-bound shapes of the study's charts. BENCHMARKS.md compares the shapes.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula/bench"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	if err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "casestudy:", err)
		os.Exit(1)
	}
}

// config is what the flags choose.
type config struct {
	duration     time.Duration // measured time per point
	warmup       time.Duration // unmeasured time before each rate-limited point
	out          string
	inMemory     bool
	shape        bench.Shape
	burst        time.Duration
	throttleWait time.Duration
	latency      time.Duration
	figs         map[string]bool
	batchSizes   []int
	threads      []int
	saturation   []int
	rows         int // rows preloaded per partition for the get figures
}

var allFigs = []string{"5-7", "8-9", "10-11", "15"}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("casestudy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg                           config
		store, shape, figs            string
		batchSizes, threads, saturate string
	)
	fs.DurationVar(&cfg.duration, "d", 300*time.Millisecond, "measured `duration` of each point")
	fs.DurationVar(&cfg.warmup, "warmup", 200*time.Millisecond, "unmeasured `duration` before each point of the rate-limited figures (8, 9, 15)")
	fs.StringVar(&cfg.out, "out", "bench/casestudy/out", "`directory` for the SVG charts (created if needed)")
	fs.StringVar(&store, "store", "disk", "`store`: disk (a temporary directory) or mem")
	fs.StringVar(&shape, "shape", "payload", "entity `shape`: payload (one 1 KiB string) or mixed (five typed properties)")
	fs.DurationVar(&cfg.burst, "burst", 100*time.Millisecond, "token bucket size, as a `duration` of each limit's rate")
	fs.DurationVar(&cfg.throttleWait, "throttle-wait", 50*time.Millisecond, "pause after ServerBusy before the next request (`duration`; the study used 3s)")
	fs.DurationVar(&cfg.latency, "latency", 0, "simulated client round trip added to every request, ±20% (`duration`)")
	fs.StringVar(&figs, "figs", strings.Join(allFigs, ","), "`figures` to run: a comma-separated subset of "+strings.Join(allFigs, ","))
	fs.StringVar(&batchSizes, "batch-sizes", "1,10,20,40,60,80,100", "batch `sizes` of figures 5-7")
	fs.StringVar(&threads, "threads", "1,2,4,8,16,32", "goroutine `counts` of figures 8-11")
	fs.StringVar(&saturate, "saturate", "10,20,30,40,50", "goroutine `counts` of figure 15")
	fs.IntVar(&cfg.rows, "rows", 500, "`rows` preloaded per partition for the get figures")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	fail := func(format string, a ...any) (config, error) {
		err := fmt.Errorf(format, a...)
		fmt.Fprintln(stderr, "casestudy:", err)
		return cfg, err
	}
	if fs.NArg() > 0 {
		return fail("unexpected arguments %q", fs.Args())
	}
	switch store {
	case "disk":
	case "mem":
		cfg.inMemory = true
	default:
		return fail("-store %q: want disk or mem", store)
	}
	var err error
	if cfg.shape, err = bench.ParseShape(shape); err != nil {
		return fail("%v", err)
	}
	cfg.figs = map[string]bool{}
	for _, f := range strings.Split(figs, ",") {
		if !slices.Contains(allFigs, f) {
			return fail("-figs: unknown figure group %q (want some of %s)", f, strings.Join(allFigs, ","))
		}
		cfg.figs[f] = true
	}
	for _, l := range []struct {
		name string
		text string
		dst  *[]int
		max  int
	}{{"batch-sizes", batchSizes, &cfg.batchSizes, 100}, {"threads", threads, &cfg.threads, 1024}, {"saturate", saturate, &cfg.saturation, 1024}} {
		if *l.dst, err = parseInts(l.text, l.max); err != nil {
			return fail("-%s: %v", l.name, err)
		}
	}
	if cfg.duration <= 0 || cfg.warmup < 0 || cfg.burst <= 0 || cfg.throttleWait < 0 || cfg.latency < 0 || cfg.rows < 1 {
		return fail("durations must be positive (warm-up, waits and latency may be 0) and -rows at least 1")
	}
	return cfg, nil
}

// parseInts reads a comma-separated list of integers in [1, max].
func parseInts(s string, max int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > max {
			return nil, fmt.Errorf("%q is not a number from 1 to %d", f, max)
		}
		out = append(out, n)
	}
	return out, nil
}
