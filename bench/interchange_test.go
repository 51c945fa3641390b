package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tabuladb/tabula"
)

// Export and import of an interchange file (issue 20): N entities of about 1 KiB (a
// 1,000-character String and an Int64), 100 to a partition, in one table, on disk. Each is
// a ratio against raw Badger doing the same writes (the same keys and records, in write
// batches of the import's size) and the same reads (one iteration over the table's keys and
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

// rawWrites writes the same keys and records as the import, in batches of 2,000 or of half
// the bytes the store takes in one transaction, whichever is less, as the import stages them.
func rawWrites(b *testing.B, dir string, n int) time.Duration {
	raw, err := openRaw(dir, false)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	limit := int(raw.Opts().MemTableSize * 15 / 100 / 2)
	pad := strings.Repeat("x", 1000)
	rw, clock := newRecordWriter(), &rawClock{}
	start := time.Now()
	for lo := 0; lo < n; {
		err := raw.Update(func(txn *badger.Txn) error {
			for size, i := 0, lo; i < min(lo+2000, n) && size < limit; i++ {
				e := interchangeEntity(i, pad)
				key := entityKey(nil, 1, e.PartitionKey, e.RowKey)
				record := rw.appendRecord(nil, clock.next(), e.Properties)
				if err := txn.Set(key, record); err != nil {
					return err
				}
				size += len(key) + len(record)
				lo = i + 1
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// rawReads reads every key and value of table 1 in dir once.
func rawReads(b *testing.B, dir string) (time.Duration, int) {
	raw, err := openRaw(dir, false)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
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
	return time.Since(start), n
}

func reportRates(b *testing.B, n int, engine, raw time.Duration) {
	e, r := float64(n)/engine.Seconds(), float64(n)/raw.Seconds()
	b.ReportMetric(e, "entities/s")
	b.ReportMetric(r, "badger-entities/s")
	b.ReportMetric(e/r, "ratio")
}

// BenchmarkImport: DB.Import of the file into a new table on disk, against raw Badger's
// writes of the same records.
func BenchmarkImport(b *testing.B) {
	n := interchangeSize(b)
	file := interchangeFile(n)
	b.SetBytes(int64(len(file)))
	var engine, raw time.Duration
	for b.Loop() {
		b.StopTimer()
		dir, rawDir := b.TempDir(), b.TempDir()
		db := openEngine(b, dir)
		b.StartTimer()
		start := time.Now()
		p, err := db.Import(ctx, bytes.NewReader(file), nil)
		engine += time.Since(start)
		b.StopTimer()
		if err != nil || p.Entities != int64(n) {
			b.Fatalf("imported %d of %d: %v", p.Entities, n, err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		raw += rawWrites(b, rawDir, n)
		b.StartTimer()
	}
	reportRates(b, n*b.N, engine, raw)
}

// BenchmarkExport: DB.Export of the table on disk to io.Discard, against raw Badger's
// iteration over the same records. Raw Badger reads first, once untimed, so that both read
// from a warm page cache.
func BenchmarkExport(b *testing.B) {
	n := interchangeSize(b)
	dir := b.TempDir()
	db := openEngine(b, dir)
	if _, err := db.Import(ctx, bytes.NewReader(interchangeFile(n)), nil); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	rawReads(b, dir)
	var engine, raw time.Duration
	for range b.N {
		d, got := rawReads(b, dir)
		if got < n {
			b.Fatalf("raw read %d of %d", got, n)
		}
		raw += d
	}
	db = openEngine(b, dir)
	defer db.Close()
	var written int64
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cw := &countWriter{}
		if err := db.Export(ctx, cw, nil); err != nil {
			b.Fatal(err)
		}
		engine += time.Since(start)
		written = cw.n
	}
	b.StopTimer()
	b.SetBytes(written)
	reportRates(b, n*b.N, engine, raw)
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
