// Command ratios reads `go test -bench` output (several runs of each benchmark, as from
// -count 5) and prints, as a Markdown table, every benchmark that has engine and badger
// sub-benchmarks: the median throughput of each, their ratio (engine ÷ badger), the medians
// of B/op and allocs/op, and for the benchmarks that have a target, whether the ratio
// meets it; with a cpu-ns/entity metric on both sides, also the ratio of CPU time per entity
// (badger ÷ engine, so that above 1 favours the engine, as the throughput ratio does). A benchmark with a btree sub-benchmark (the in-memory peer) gets a second row,
// "name (btree)", against it. Throughput is the benchmark's entities/s or scanned/s metric,
// or 1/ns/op.
//
//	go test -run '^$' -bench . -count 5 -benchmem ./bench | tee results.txt
//	go run ./bench/ratios results.txt
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// targets are the engine ÷ badger throughput ratios aimed at, on disk.
var targets = map[string]float64{
	"PointGet":             0.95,
	"Insert":               0.95,
	"UpdateIfMatch":        0.95,
	"BatchInsert/size=100": 0.95,
	"PartitionScan":        0.95,
	"FullScanFilter":       0.95,
	"ParallelGet":          0.95,
	"Query/Point":          0.9,
}

// btreeTarget is the engine ÷ btree ratio aimed at in memory, where the core
// benchmarks also run a btree sub-benchmark: when one is there, it is the peer that
// carries the target, and the badger row (raw Badger in memory) is shown without one.
const btreeTarget = 0.9

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: ratios FILE (go test -bench output; - for standard input)")
		os.Exit(2)
	}
	in := io.Reader(os.Stdin)
	if os.Args[1] != "-" {
		f, err := os.Open(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		in = f
	}
	runs, order, err := parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Print(table(runs, order))
}

// runs maps a benchmark's name (without "Benchmark" and the -procs suffix) to its metrics,
// unit → one value per run.
type runs map[string]map[string][]float64

var procs = regexp.MustCompile(`-\d+$`)

// parse reads benchmark result lines: name, iterations, then value-unit pairs.
func parse(r io.Reader) (runs, []string, error) {
	out := runs{}
	var order []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := procs.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		if out[name] == nil {
			out[name] = map[string][]float64{}
			order = append(order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: value %q: %v", f[0], f[i], err)
			}
			out[name][f[i+1]] = append(out[name][f[i+1]], v)
		}
	}
	return out, order, sc.Err()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// throughput is the median of the benchmark's rate metric, or of 1e9/ns/op without one.
func throughput(m map[string][]float64) (float64, string) {
	for _, unit := range []string{"entities/s", "scanned/s"} {
		if v, ok := m[unit]; ok {
			return median(v), unit
		}
	}
	if ns := median(m["ns/op"]); ns > 0 {
		return 1e9 / ns, "op/s"
	}
	return 0, ""
}

func table(r runs, order []string) string {
	var b strings.Builder
	b.WriteString("| Benchmark | engine | badger | ratio | target | CPU ratio | engine B/op | badger B/op | engine allocs/op | badger allocs/op |\n")
	b.WriteString("|---|--:|--:|--:|:-:|--:|--:|--:|--:|--:|\n")
	for _, name := range order {
		base, ok := strings.CutSuffix(name, "/engine")
		if !ok {
			continue
		}
		_, inMemory := r[base+"/btree"]
		for _, peer := range []string{"badger", "btree"} {
			bg := r[base+"/"+peer]
			if bg == nil {
				continue
			}
			t, ok := targets[base]
			label := base
			switch {
			case peer == "btree":
				t, ok, label = btreeTarget, true, base+" (btree)"
			case inMemory:
				ok = false
			}
			row(&b, label, r[name], bg, t, ok)
		}
	}
	return b.String()
}

// row writes one table row: the engine's figures against a peer's, and the target when
// there is one.
func row(b *strings.Builder, label string, e, bg map[string][]float64, t float64, hasTarget bool) {
	et, unit := throughput(e)
	bt, _ := throughput(bg)
	ratio := 0.0
	if bt > 0 {
		ratio = et / bt
	}
	target := ""
	if hasTarget {
		verdict := "pass"
		if ratio < t {
			verdict = "**miss**"
		}
		target = fmt.Sprintf("≥ %.2g %s", t, verdict)
	}
	// The CPU ratio is the peer's process CPU time per entity over the engine's: like the
	// throughput ratio, above 1 when the engine does the work more cheaply.
	cpu := ""
	if ec, bc := median(e["cpu-ns/entity"]), median(bg["cpu-ns/entity"]); ec > 0 && bc > 0 {
		cpu = fmt.Sprintf("%.2f", bc/ec)
	}
	fmt.Fprintf(b, "| %s | %s %s | %s | %.2f | %s | %s | %s | %s | %s | %s |\n", label,
		human(et), unit, human(bt), ratio, target, cpu,
		bytesHuman(median(e["B/op"])), bytesHuman(median(bg["B/op"])),
		human(median(e["allocs/op"])), human(median(bg["allocs/op"])))
}

// human prints a number with three significant digits and a k or M suffix.
func human(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func bytesHuman(v float64) string {
	switch {
	case v >= 1<<20:
		return strconv.FormatFloat(v/(1<<20), 'f', 1, 64) + " MiB"
	case v >= 1<<10:
		return strconv.FormatFloat(v/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " B"
}
