package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/badgertuning"
)

// Export and import of an interchange file: N entities of about 1 KiB (a
// 1,000-character String and an Int64), 100 to a partition, in one table, on disk. Each is
// a ratio against raw Badger doing the same writes (the same keys and records, through
// Badger's WriteBatch) and the same reads (one iteration over the table's keys and
// values) in the same run. TABULA_BENCH_INTERCHANGE sets N (default 20,000, so that CI's
// -benchtime 1x stays quick; the figure is for 1,000,000).

func interchangeSize(b *testing.B) int {
	n := 20_000
	if s := os.Getenv("TABULA_BENCH_INTERCHANGE"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("TABULA_BENCH_INTERCHANGE=%q: want a positive count", s)
		}
		n = v
	}
	return n
}

// interchangeEntity is entity i of the benchmark's table.
func interchangeEntity(i int, pad string) tabula.Entity {
	return tabula.Entity{PartitionKey: fmt.Sprintf("p%06d", i/100), RowKey: fmt.Sprintf("r%08d", i),
		Properties: tabula.Properties{"Payload": tabula.String(pad), "N": tabula.Int64(int64(i) << 33)}}
}

// interchangeFile writes the file of n entities.
func interchangeFile(n int) []byte {
	pad := strings.Repeat("x", 1000)
	var buf bytes.Buffer
	buf.WriteString(`{"@tabula":"export","version":1}` + "\n" + `{"@tabula":"table","account":"","table":"Bulk"}` + "\n")
	for i := range n {
		e := interchangeEntity(i, pad)
		fmt.Fprintf(&buf, `{"PartitionKey":%q,"RowKey":%q,"Timestamp":"2024-01-02T03:04:05.1234567Z","N@odata.type":"Edm.Int64","N":"%d","Payload":"%s"}`+"\n",
			e.PartitionKey, e.RowKey, int64(e.Properties["N"].(tabula.Int64)), pad)
	}
	fmt.Fprintf(&buf, `{"@tabula":"end","account":"","table":"Bulk","entities":%d}`+"\n"+`{"@tabula":"eof","tables":1,"entities":%d}`+"\n", n, n)
	return buf.Bytes()
}

// rawWrites writes the same keys and records as the import with Badger's WriteBatch, its own
// way of loading many keys: transactions as large as Badger takes, committed without
// waiting while the next is filled. It returns the time taken, the process's CPU time
// meanwhile (0 where it cannot be read), and how long Badger held writes back because
// level 0 had too many tables (the "Lifetime L0 stalled" it reports on Close).
func rawWrites(b *testing.B, dir string, n int, budget uint64) (elapsed, cpu, stalled time.Duration) {
	stalls := &stallLog{}
	// WithLoggingLevel replaces the logger, so it comes first.
	raw, err := badger.Open(badgertuning.Options(dir, budget).WithSyncWrites(false).
		WithLoggingLevel(badger.INFO).WithLogger(stalls))
	if err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("x", 1000)
	rw, clock := newRecordWriter(), &rawClock{}
	start, cpu0 := time.Now(), cpuNow()
	wb := raw.NewWriteBatch()
	for i := range n {
		e := interchangeEntity(i, pad)
		if err := wb.Set(entityKey(nil, 1, e.PartitionKey, e.RowKey), rw.appendRecord(nil, clock.next(), e.Properties)); err != nil {
			b.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		b.Fatal(err)
	}
	elapsed, cpu = time.Since(start), cpuNow()-cpu0
	if err := raw.Close(); err != nil {
		b.Fatal(err)
	}
	return elapsed, cpu, stalls.lifetime
}

// stallLog is a badger.Logger that keeps the L0 stall time Badger reports on Close and
// passes warnings and errors on to the test log's writer (stderr).
type stallLog struct{ lifetime time.Duration }

func (l *stallLog) Errorf(f string, a ...any)   { fmt.Fprintf(os.Stderr, "badger: "+f, a...) }
func (l *stallLog) Warningf(f string, a ...any) { fmt.Fprintf(os.Stderr, "badger: "+f, a...) }
func (l *stallLog) Debugf(string, ...any)       {}
func (l *stallLog) Infof(f string, a ...any) {
	if rest, ok := strings.CutPrefix(fmt.Sprintf(f, a...), "Lifetime L0 stalled for: "); ok {
		l.lifetime, _ = time.ParseDuration(strings.TrimSpace(rest))
	}
}

// rawReads reads every key and value of table 1 in dir once, with Badger opened with opts,
// and returns the time it took, the process's CPU time meanwhile and the entities read.
func rawReads(b *testing.B, opts badger.Options) (time.Duration, time.Duration, int) {
	raw, err := badger.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	cpu0, _ := processCPU()
	start := time.Now()
	n := 0
	prefix := tablePrefix(nil, 1)
	err = raw.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(iterOptions(prefix))
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			if err := it.Item().Value(func(v []byte) error { n += len(v) & 1; return nil }); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	wall := time.Since(start)
	cpu1, _ := processCPU()
	return wall, cpu1 - cpu0, n
}

func reportRates(b *testing.B, n int, engine, raw time.Duration) {
	e, r := float64(n)/engine.Seconds(), float64(n)/raw.Seconds()
	b.ReportMetric(e, "entities/s")
	b.ReportMetric(r, "badger-entities/s")
	b.ReportMetric(e/r, "ratio")
}

// interchangeReader streams the bytes interchangeFile(n) returns, a line at a time, for
// sizes whose file would not fit in memory (10M entities are 11 GB).
type interchangeReader struct {
	n, i   int // entities, and the next one to write
	stride int // when set, the i-th entity written is entity i×stride mod n: out of key order
	state  int // 0 the header, 1 entities, 2 the end, 3 done
	pad    string
	buf    []byte
	off    int
}

func newInterchangeReader(n int) *interchangeReader {
	return &interchangeReader{n: n, pad: strings.Repeat("x", 1000)}
}

func (r *interchangeReader) Read(p []byte) (int, error) {
	for r.off == len(r.buf) {
		r.buf, r.off = r.buf[:0], 0
		switch r.state {
		case 0:
			r.buf = append(r.buf, `{"@tabula":"export","version":1}`+"\n"+`{"@tabula":"table","account":"","table":"Bulk"}`+"\n"...)
			r.state = 1
		case 1:
			for ; r.i < r.n && len(r.buf) < 64<<10; r.i++ {
				e := interchangeEntity(int(int64(r.i)*int64(max(r.stride, 1))%int64(r.n)), r.pad)
				r.buf = fmt.Appendf(r.buf, `{"PartitionKey":%q,"RowKey":%q,"Timestamp":"2024-01-02T03:04:05.1234567Z","N@odata.type":"Edm.Int64","N":"%d","Payload":"%s"}`+"\n",
					e.PartitionKey, e.RowKey, int64(e.Properties["N"].(tabula.Int64)), r.pad)
			}
			if r.i == r.n {
				r.state = 2
			}
		case 2:
			r.buf = fmt.Appendf(r.buf, `{"@tabula":"end","account":"","table":"Bulk","entities":%d}`+"\n"+`{"@tabula":"eof","tables":1,"entities":%d}`+"\n", r.n, r.n)
			r.state = 3
		default:
			return 0, io.EOF
		}
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// BenchmarkImport: loading a file of N entities of about 1 KiB (one table, in key order, as
// an export writes it) from disk into a new database on disk, every way there is, in one
// run, each a fresh directory at the same memory budget:
//
//   - check-entities/s: CheckImport (tabula import --check), the file read and checked,
//     nothing written: the floor of any import on this CPU;
//   - entities/s: DB.Import with ImportOptions.Exclusive (tabula import --data), which loads
//     the table directly into the store (storage.Load), and import/check, its time over
//     CheckImport's;
//   - online-entities/s: DB.Import without it, through storage.Bulk (an import beside other
//     writers);
//   - badger-entities/s: raw Badger's WriteBatch writing the same keys and records (no JSON),
//     Badger's own way of loading many keys, and ratio, entities/s over it;
//   - disk-entities/s: the file's bytes written to a new file and fsynced, the disk's own
//     durable rate (as dd conv=fdatasync measures it) in entities.
//
// Each also reports the process's CPU time per entity (cpu-µs/entity, online-, badger-,
// check-), which a shared machine's load disturbs far less than the rates; peak-anon-MB is
// the peak of the process's anonymous memory during the exclusive import (RssAnon: the
// file is read from disk, its pages are not anonymous). For a size set by
// TABULA_BENCH_INTERCHANGE, compaction-s is how long Badger still compacts after the
// exclusive import (until the directory's disk usage stops changing for 5 s). The budget is
// TABULA_BENCH_BUDGET bytes (default: the default's); TABULA_BENCH_IMPORT_RAW=0 and
// TABULA_BENCH_IMPORT_ONLINE=0 leave out raw Badger and the online import (at 10M entities
// each writes about 12 GB). TABULA_BENCH_IMPORT_SHUFFLED=1 writes the file's entities out
// of key order (the exclusive import sorts them before its load; raw Badger still writes in
// key order).
func BenchmarkImport(b *testing.B) {
	n := interchangeSize(b)
	file := filepath.Join(b.TempDir(), "load.jsonl")
	source := newInterchangeReader(n)
	if os.Getenv("TABULA_BENCH_IMPORT_SHUFFLED") == "1" {
		source.stride = 2_654_435_761 // a prime (Knuth's multiplicative hash): every entity comes once, scattered, unless N is a multiple of it
	}
	size := writeFile(b, file, source, false)
	withRaw := os.Getenv("TABULA_BENCH_IMPORT_RAW") != "0"
	withOnline := os.Getenv("TABULA_BENCH_IMPORT_ONLINE") != "0"
	budget := benchBudget(b)
	var (
		load, online, raw, check, disk             time.Duration
		loadCPU, onlineCPU, rawCPU, checkCPU, debt time.Duration
		peakAnon                                   int64
	)
	importFrom := func(exclusive bool) (time.Duration, time.Duration, string) {
		dir := b.TempDir()
		db := openEngineWith(b, dir, &tabula.Options{MemoryBudget: budget})
		f, err := os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		start, cpu := time.Now(), cpuNow()
		p, err := db.Import(ctx, f, &tabula.ImportOptions{Exclusive: exclusive})
		elapsed, cpuUsed := time.Since(start), cpuNow()-cpu
		if err != nil || p.Entities != int64(n) {
			b.Fatalf("imported %d of %d: %v", p.Entities, n, err)
		}
		if exclusive && os.Getenv("TABULA_BENCH_INTERCHANGE") != "" {
			b.StopTimer()
			const quiet = 5 * time.Second
			debt += settle(dir, quiet, time.Hour) - quiet
			b.StartTimer()
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		return elapsed, cpuUsed, dir
	}
	b.SetBytes(size)
	for b.Loop() {
		b.StopTimer()
		f, err := os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		start, cpu := time.Now(), cpuNow()
		if _, err := tabula.CheckImport(ctx, f, nil); err != nil {
			b.Fatal(err)
		}
		check, checkCPU = check+time.Since(start), checkCPU+cpuNow()-cpu
		f.Close()

		runtime.GC()
		debug.FreeOSMemory()
		stop, peak := sampleMemory(10 * time.Millisecond)
		b.StartTimer()
		d, c, dir := importFrom(true)
		b.StopTimer()
		stop()
		peakAnon = max(peakAnon, peak["RssAnon"])
		load, loadCPU = load+d, loadCPU+c
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		if withOnline {
			d, c, dir := importFrom(false)
			online, onlineCPU = online+d, onlineCPU+c
			if err := os.RemoveAll(dir); err != nil {
				b.Fatal(err)
			}
		}
		if withRaw {
			rawDir := b.TempDir()
			d, c, _ := rawWrites(b, rawDir, n, budget)
			raw, rawCPU = raw+d, rawCPU+c
			if err := os.RemoveAll(rawDir); err != nil {
				b.Fatal(err)
			}
		}
		f, err = os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		copyTo := filepath.Join(b.TempDir(), "copy")
		start = time.Now()
		writeFile(b, copyTo, f, true)
		disk += time.Since(start)
		f.Close()
		if err := os.Remove(copyTo); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	total := float64(n * b.N)
	rate := func(d time.Duration) float64 { return total / d.Seconds() }
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / total }
	b.ReportMetric(rate(load), "entities/s")
	b.ReportMetric(rate(check), "check-entities/s")
	b.ReportMetric(load.Seconds()/check.Seconds(), "import/check")
	b.ReportMetric(rate(disk), "disk-entities/s")
	b.ReportMetric(float64(peakAnon)/(1<<20), "peak-anon-MB")
	if withOnline {
		b.ReportMetric(rate(online), "online-entities/s")
	}
	if withRaw {
		b.ReportMetric(rate(raw), "badger-entities/s")
		b.ReportMetric(rate(load)/rate(raw), "ratio")
	}
	if loadCPU > 0 {
		b.ReportMetric(per(loadCPU), "cpu-µs/entity")
		b.ReportMetric(per(checkCPU), "check-cpu-µs/entity")
		if withOnline {
			b.ReportMetric(per(onlineCPU), "online-cpu-µs/entity")
		}
		if withRaw {
			b.ReportMetric(per(rawCPU), "badger-cpu-µs/entity")
		}
	}
	if debt > 0 {
		b.ReportMetric(debt.Seconds()/float64(b.N), "compaction-s")
	}
}

// writeFile copies r to a new file at name, fsynced when sync says so, and returns its size.
func writeFile(b *testing.B, name string, r io.Reader, sync bool) int64 {
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.CopyBuffer(f, r, make([]byte, 1<<20))
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkExport: DB.Export of the table on disk to io.Discard, against raw Badger's
// iteration over the same records, once the load's tree is flattened. Both run in turn, three rounds each (the first round of
// raw Badger untimed, to warm the page cache), and each reports its fastest round, so that
// a burst of other work on a shared machine, or of compaction after the load, weighs on
// neither. cpu-ns/entity and badger-cpu-ns/entity are the CPU time the
// process spent per entity (on Linux), which the machine's other load changes less.
func BenchmarkExport(b *testing.B) {
	if inMemory {
		b.Skip("the export's figure is on disk: raw Badger reads the engine's directory")
	}
	n := interchangeSize(b)
	dir := b.TempDir()
	db := openEngine(b, dir)
	if _, err := db.Import(ctx, newInterchangeReader(n), &tabula.ImportOptions{Exclusive: true}); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	opts := badgertuning.Options(dir, 0).WithSyncWrites(false)
	// The load leaves compaction behind, which each open would go on with while the reads
	// are timed; flattened, the tree stays as it is through every round.
	tree, err := badger.Open(opts.WithLoggingLevel(badger.ERROR)) // Flatten warns as it waits on compactions
	if err != nil {
		b.Fatal(err)
	}
	if err := tree.Flatten(2); err != nil {
		b.Fatal(err)
	}
	if err := tree.Close(); err != nil {
		b.Fatal(err)
	}
	rawReads(b, opts)
	const rounds = 3
	var engine, raw, engineCPU, rawCPU time.Duration
	fastest := func(best *time.Duration, d time.Duration) {
		if *best == 0 || d < *best {
			*best = d
		}
	}
	var written int64
	b.ResetTimer()
	for range b.N {
		for range rounds {
			b.StopTimer()
			d, cpu, got := rawReads(b, opts)
			if got < n {
				b.Fatalf("raw read %d of %d", got, n)
			}
			fastest(&raw, d)
			rawCPU += cpu
			db, err := tabula.Open(dir, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			cpu0, _ := processCPU()
			start := time.Now()
			cw := &countWriter{}
			if err := db.Export(ctx, cw, nil); err != nil {
				b.Fatal(err)
			}
			fastest(&engine, time.Since(start))
			cpu1, _ := processCPU()
			engineCPU += cpu1 - cpu0
			written = cw.n
			b.StopTimer()
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	b.SetBytes(written * rounds)
	reportRates(b, n, engine, raw)
	// CPU time, of every thread of the process, per entity: what the rates would be on idle
	// cores, whatever else the machine runs.
	if engineCPU > 0 {
		b.ReportMetric(float64(engineCPU.Nanoseconds())/float64(n*rounds*b.N), "cpu-ns/entity")
		b.ReportMetric(float64(rawCPU.Nanoseconds())/float64(n*rounds*b.N), "badger-cpu-ns/entity")
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

func TestInterchangeReader(t *testing.T) {
	got, err := io.ReadAll(newInterchangeReader(1234))
	if err != nil || !bytes.Equal(got, interchangeFile(1234)) {
		t.Fatalf("the streamed file differs from interchangeFile's (%v)", err)
	}
}

// cpuNow is the process's CPU time, 0 where it is not read (the rates are then reported
// without their CPU figures).
func cpuNow() time.Duration {
	d, _ := processCPU()
	return d
}

// benchBudget is the memory budget TABULA_BENCH_BUDGET sets in bytes, 0 (the default's)
// when it is unset.
func benchBudget(b *testing.B) uint64 {
	s := os.Getenv("TABULA_BENCH_BUDGET")
	if s == "" {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		b.Fatalf("TABULA_BENCH_BUDGET=%q: want a size in bytes", s)
	}
	return v
}
