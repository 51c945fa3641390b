package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/bench"
	"github.com/tabuladb/tabula/partition"
)

var ctx = context.Background()

// run runs the chosen figures, printing their tables to w and writing their charts to
// cfg.out.
func run(cfg config, w io.Writer) error {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	store := "on disk"
	if cfg.inMemory {
		store = "in memory"
	}
	fmt.Fprintf(w, "The performance case study against embedded Tabula: %s entities %s, %d cores, %v per point",
		cfg.shape, store, runtime.GOMAXPROCS(0), cfg.duration)
	if cfg.latency > 0 {
		fmt.Fprintf(w, ", %v simulated round trip", cfg.latency)
	}
	fmt.Fprintln(w)
	s := &study{cfg: cfg, w: w}
	steps := []struct {
		group string
		fn    func() error
	}{{"5-7", s.batchSizes}, {"8-9", s.partitions}, {"10-11", s.concurrency}, {"15", s.saturation}}
	for _, step := range steps {
		if cfg.figs[step.group] {
			if err := step.fn(); err != nil {
				return fmt.Errorf("figures %s: %w", step.group, err)
			}
		}
	}
	fmt.Fprintf(w, "\nCharts written to %s\n", cfg.out)
	return nil
}

type study struct {
	cfg  config
	w    io.Writer
	seed uint64
}

// db is a fresh database for one figure group, with the limits off until enforce is called
// and buckets of cfg.burst worth of tokens. Close it when done.
type db struct {
	*tabula.DB
	dir string
}

func (s *study) open() (*db, error) {
	opts := &tabula.Options{Limits: partition.Limits{
		Mode:           partition.LimitOff,
		PartitionBurst: partition.DefaultPartitionRate * s.cfg.burst.Seconds(),
		AccountBurst:   partition.DefaultAccountRate * s.cfg.burst.Seconds(),
	}}
	if s.cfg.inMemory {
		d, err := tabula.OpenInMemory(opts)
		return &db{DB: d}, err
	}
	dir, err := os.MkdirTemp("", "tabula-casestudy-")
	if err != nil {
		return nil, err
	}
	d, err := tabula.Open(dir, opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &db{DB: d, dir: dir}, nil
}

func (d *db) close() error {
	err := d.Close()
	if d.dir != "" {
		os.RemoveAll(d.dir)
	}
	return err
}

// fresh runs one point of a write figure on a database of its own, so that no point pays
// for the compactions of the writes of the points before it: sustained writes of 1 KiB
// entities outrun what Badger compacts on a small machine, and the study measured a service
// in its steady state. Opening and closing are not measured.
func (s *study) fresh(g int, mk func(t *tabula.Table) op) (sample, error) {
	d, err := s.open()
	if err != nil {
		return sample{}, err
	}
	t, err := d.CreateTable(ctx, "Fresh")
	if err != nil {
		d.close()
		return sample{}, err
	}
	smp, err := s.drive(g, 0, mk(t))
	return smp, firstErr(err, d.close())
}

func (s *study) workload() *bench.Workload {
	s.seed++
	return bench.NewWorkload(s.cfg.shape, s.seed)
}

// sample is what one point measured.
type sample struct {
	requests, throttled int64         // requests answered, and of those ServerBusy
	entities            int64         // entities of the successful requests
	latency             time.Duration // summed over successful requests
	elapsed             time.Duration
}

func (s sample) rate() float64 { return float64(s.entities) / s.elapsed.Seconds() }

func (s sample) meanLatency() time.Duration {
	if ok := s.requests - s.throttled; ok > 0 {
		return s.latency / time.Duration(ok)
	}
	return 0
}

func (s sample) throttledPct() float64 {
	if s.requests == 0 {
		return 0
	}
	return 100 * float64(s.throttled) / float64(s.requests)
}

// op is one request of goroutine g, its i-th; it returns how many entities it carried.
type op func(g, i int) (int, error)

// drive runs g goroutines issuing requests back to back for warmup and then the measured
// duration, counting what completes in the measured window. A request refused with
// ServerBusy is counted and followed by cfg.throttleWait; any other error stops the run.
func (s *study) drive(g int, warmup time.Duration, fn op) (sample, error) {
	var (
		measuring, stop atomic.Bool
		mu              sync.Mutex
		total           sample
		firstErr        error
		wg              sync.WaitGroup
	)
	for worker := range g {
		wg.Go(func() {
			var local sample
			rng := rand.New(rand.NewPCG(uint64(worker), s.seed))
			for i := 0; !stop.Load(); i++ {
				// The simulated round trip varies by ±20%, as a network's does; identical
				// sleeps would keep the goroutines in lockstep.
				var rtt time.Duration
				if s.cfg.latency > 0 {
					rtt = time.Duration(float64(s.cfg.latency) * (0.8 + 0.4*rng.Float64()))
					time.Sleep(rtt)
				}
				began := time.Now()
				n, err := fn(worker, i)
				took := time.Since(began) + rtt
				busy := errors.Is(err, tabula.ErrServerBusy)
				if err != nil && !busy {
					mu.Lock()
					firstErr = cmpOr(firstErr, err)
					mu.Unlock()
					stop.Store(true)
					break
				}
				if measuring.Load() && !stop.Load() {
					local.requests++
					if busy {
						local.throttled++
					} else {
						local.entities += int64(n)
						local.latency += took
					}
				}
				if busy {
					time.Sleep(s.cfg.throttleWait)
				}
			}
			mu.Lock()
			total.requests += local.requests
			total.throttled += local.throttled
			total.entities += local.entities
			total.latency += local.latency
			mu.Unlock()
		})
	}
	time.Sleep(warmup)
	measuring.Store(true)
	began := time.Now()
	time.Sleep(s.cfg.duration)
	stop.Store(true)
	total.elapsed = time.Since(began)
	wg.Wait()
	return total, firstErr
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// batchInsert returns an op inserting batches of size new entities, goroutine g into
// partition pks[g] (pks may repeat a key), with RowKeys JobID_VM<vm>_W<g>_Index.
func batchInsert(t *tabula.Table, w *bench.Workload, pks []string, vm, size int) op {
	prefixes := make([]string, len(pks))
	actions := make([][]tabula.Action, len(pks))
	for g := range pks {
		prefixes[g] = w.RowPrefix(vm, g+1)
		actions[g] = make([]tabula.Action, size)
	}
	return func(g, i int) (int, error) {
		a := actions[g]
		for k := range a {
			row := i*size + k
			a[k] = tabula.InsertAction(w.Entity(pks[g], bench.RowKey(prefixes[g], row), row))
		}
		if size == 1 {
			_, err := t.Insert(ctx, a[0].Entity)
			return 1, err
		}
		_, err := t.SubmitTransaction(ctx, a)
		return size, err
	}
}

// preload fills partition pks[g] with rows entities for goroutine g (call it while the
// limits are off) and returns an op that reads them back one by one in order, as the study's
// get test does.
func preload(t *tabula.Table, w *bench.Workload, pks []string, vm, rows int) (op, error) {
	prefixes := make([]string, len(pks))
	for g, pk := range pks {
		prefixes[g] = w.RowPrefix(vm, g+1)
		for from := 0; from < rows; from += tabula.MaxTransactionActions {
			var batch []tabula.Action
			for r := from; r < min(rows, from+tabula.MaxTransactionActions); r++ {
				batch = append(batch, tabula.InsertAction(w.Entity(pk, bench.RowKey(prefixes[g], r), r)))
			}
			if _, err := t.SubmitTransaction(ctx, batch); err != nil {
				return nil, err
			}
		}
	}
	return func(g, i int) (int, error) {
		_, err := t.Get(ctx, pks[g], bench.RowKey(prefixes[g], i%rows))
		return 1, err
	}, nil
}

func (s *study) table() *tabwriter.Writer {
	return tabwriter.NewWriter(s.w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// batchSizes: Figures 5, 6 and 7.
func (s *study) batchSizes() error {
	w := s.workload()
	cores := []int{1, runtime.GOMAXPROCS(0)}
	if cores[1] == 1 {
		cores = cores[:1]
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	fig5 := make([]series, len(cores))
	fig6 := make([]series, len(cores))
	fig7 := make([]series, len(cores))
	for c, n := range cores {
		runtime.GOMAXPROCS(n)
		name := fmt.Sprintf("%d core", n)
		if n > 1 {
			name += "s"
		}
		fig5[c].name, fig6[c].name, fig7[c].name = name, name, name
		for _, size := range s.cfg.batchSizes {
			one, err := s.fresh(1, func(t *tabula.Table) op { return batchInsert(t, w, w.GUIDs(1), 1, size) })
			if err != nil {
				return err
			}
			lat := one.meanLatency()
			fig5[c].add(float64(size), ms(lat))
			fig6[c].add(float64(size), ms(lat)/float64(size))
			many, err := s.fresh(30, func(t *tabula.Table) op { return batchInsert(t, w, w.GUIDs(30), 1, size) })
			if err != nil {
				return err
			}
			fig7[c].add(float64(size), many.rate())
		}
	}
	tw := s.table()
	fmt.Fprintln(s.w, "\nFigures 5-7: entity group transactions of N inserts (limits off)")
	fmt.Fprint(tw, "batch size\t")
	for _, sr := range fig5 {
		fmt.Fprintf(tw, "%s: ms/batch\tms/entity\t30 goroutines: entities/s\t", sr.name)
	}
	fmt.Fprintln(tw)
	for i, size := range s.cfg.batchSizes {
		fmt.Fprintf(tw, "%d\t", size)
		for c := range fig5 {
			fmt.Fprintf(tw, "%.3f\t%.4f\t%.0f\t", fig5[c].y[i], fig6[c].y[i], fig7[c].y[i])
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return firstErr(
		s.chart("fig05", "Figure 5: latency of a batch (one goroutine, one partition)", "batch size", "ms per batch", fig5),
		s.chart("fig06", "Figure 6: latency per entity in a batch", "batch size", "ms per entity", fig6),
		s.chart("fig07", "Figure 7: batches on multiple partitions, 30 goroutines", "batch size", "entities/s", fig7),
	)
}

// partitions: Figures 8 and 9, limits enforced.
func (s *study) partitions() error {
	d, err := s.open()
	if err != nil {
		return err
	}
	defer d.close()
	t, err := d.CreateTable(ctx, "Partitions")
	if err != nil {
		return err
	}
	w := s.workload()
	most := slices.Max(s.cfg.threads)
	hot := w.GUID()
	single, multi := make([]string, most), w.GUIDs(most)
	for g := range single {
		single[g] = hot
	}
	getSingle, err := preload(t, w, single, 1, s.cfg.rows)
	if err != nil {
		return err
	}
	getMulti, err := preload(t, w, multi, 2, s.cfg.rows)
	if err != nil {
		return err
	}
	d.SetLimitMode(partition.LimitEnforce)
	type run struct {
		fig    string
		layout string
		pks    []string
		get    op
	}
	runs := []run{
		{"8", "single partition", single, nil}, {"8", "multiple partitions", multi, nil},
		{"9", "single partition", single, getSingle}, {"9", "multiple partitions", multi, getMulti},
	}
	results := make([][]sample, len(runs))
	vm := 2
	for r, rn := range runs {
		for _, g := range s.cfg.threads {
			fn := rn.get
			if fn == nil {
				vm++
				fn = batchInsert(t, w, rn.pks, vm, 1)
			}
			smp, err := s.drive(g, s.cfg.warmup, fn)
			if err != nil {
				return err
			}
			results[r] = append(results[r], smp)
		}
	}
	var charts []error
	for f, fig := range []string{"8", "9"} {
		what := [...]string{"single-entity inserts", "single-entity gets"}[f]
		fmt.Fprintf(s.w, "\nFigure %s: %s, one partition vs one per goroutine (limits enforced)\n", fig, what)
		tw := s.table()
		fmt.Fprintln(tw, "goroutines\tsingle: entities/s\tthrottled %\tmulti: entities/s\tthrottled %\t")
		var sr []series
		for r, rn := range runs {
			if rn.fig == fig {
				x := series{name: rn.layout}
				for i, g := range s.cfg.threads {
					x.add(float64(g), results[r][i].rate())
				}
				sr = append(sr, x)
			}
		}
		for i, g := range s.cfg.threads {
			a, b := results[2*f][i], results[2*f+1][i]
			fmt.Fprintf(tw, "%d\t%.0f\t%.2f\t%.0f\t%.2f\t\n", g, a.rate(), a.throttledPct(), b.rate(), b.throttledPct())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		charts = append(charts, s.chart("fig0"+fig, "Figure "+fig+": "+what+", limits enforced", "goroutines", "entities/s", sr))
	}
	charts = append(charts, s.heatmap("heat08-09", d))
	return firstErr(charts...)
}

// heatmap saves the database's heat report beside the charts, as an SVG heat map: which
// range partitions were hot and how much was throttled, and when.
func (s *study) heatmap(file string, d *db) error {
	f, err := os.Create(filepath.Join(s.cfg.out, file+".svg"))
	if err != nil {
		return err
	}
	if err := d.HeatReport().WriteSVG(f); err != nil {
		f.Close()
		return err
	}
	fmt.Fprintf(s.w, "Heat map of this database: %s\n", filepath.Join(s.cfg.out, file+".svg"))
	return f.Close()
}

// concurrency: Figures 10 and 11, multiple partitions, limits off. Gets read a database
// loaded beforehand; every insert point writes to a fresh one (see fresh).
func (s *study) concurrency() error {
	d, err := s.open()
	if err != nil {
		return err
	}
	defer d.close()
	t, err := d.CreateTable(ctx, "Concurrency")
	if err != nil {
		return err
	}
	w := s.workload()
	most := slices.Max(s.cfg.threads)
	get, err := preload(t, w, w.GUIDs(most), 1, s.cfg.rows)
	if err != nil {
		return err
	}
	fig10, fig11 := series{name: "batches of 100"}, series{name: "gets"}
	fmt.Fprintln(s.w, "\nFigures 10-11: multiple partitions, one per goroutine (limits off)")
	tw := s.table()
	fmt.Fprintln(tw, "goroutines\tbatch inserts of 100: entities/s\tms/batch\tgets: entities/s\tms/get\t")
	for _, g := range s.cfg.threads {
		ins, err := s.fresh(g, func(t *tabula.Table) op { return batchInsert(t, w, w.GUIDs(g), 1, 100) })
		if err != nil {
			return err
		}
		gets, err := s.drive(g, 0, get)
		if err != nil {
			return err
		}
		fig10.add(float64(g), ins.rate())
		fig11.add(float64(g), gets.rate())
		fmt.Fprintf(tw, "%d\t%.0f\t%.3f\t%.0f\t%.4f\t\n", g, ins.rate(), ms(ins.meanLatency()), gets.rate(), ms(gets.meanLatency()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return firstErr(
		s.chart("fig10", "Figure 10: batch inserts (100 entities), multiple partitions", "goroutines", "entities/s", []series{fig10}),
		s.chart("fig11", "Figure 11: single-entity gets, multiple partitions", "goroutines", "entities/s", []series{fig11}),
	)
}

// saturation: Figure 15, batches of 100 into one partition, limits enforced.
func (s *study) saturation() error {
	d, err := s.open()
	if err != nil {
		return err
	}
	defer d.close()
	t, err := d.CreateTable(ctx, "Saturation")
	if err != nil {
		return err
	}
	d.SetLimitMode(partition.LimitEnforce)
	w := s.workload()
	hot := w.GUID()
	ok, pct := series{name: "successful entities/s"}, series{name: "throttled %"}
	fmt.Fprintln(s.w, "\nFigure 15: saturating one partition with batches of 100 (limits enforced)")
	tw := s.table()
	fmt.Fprintln(tw, "goroutines\tsuccessful entities/s\tthrottled requests %\tthrottled/s\t")
	for vm, g := range s.cfg.saturation {
		pks := make([]string, g)
		for i := range pks {
			pks[i] = hot
		}
		smp, err := s.drive(g, s.cfg.warmup, batchInsert(t, w, pks, vm+1, 100))
		if err != nil {
			return err
		}
		ok.add(float64(g), smp.rate())
		pct.add(float64(g), smp.throttledPct())
		fmt.Fprintf(tw, "%d\t%.0f\t%.1f\t%.0f\t\n", g, smp.rate(), smp.throttledPct(),
			float64(smp.throttled)/smp.elapsed.Seconds())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return firstErr(
		s.chart2("fig15", "Figure 15: saturating one partition with batches of 100, limits enforced", "goroutines", ok, pct),
		s.heatmap("heat15", d),
	)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
