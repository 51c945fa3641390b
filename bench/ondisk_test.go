package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/badgertuning"
	"github.com/tabuladb/tabula/server"
)

// What the store on disk costs beside the store in memory, through the server's handler
// (the wire counted, no socket), as a test or a developer's server meets it: the first scan
// of a table just loaded, and 100-entity transactions from many clients. Each runs memory,
// disk and raw Badger (given the options storage.Open gives Badger, doing the same logical
// work without the wire) in one process, and reports disk and badger as a ratio to memory
// (x-memory), so that a run on a loaded machine still compares like with like.

// handler is a server over db, with the development account's key to sign requests.
type handler struct {
	h   http.Handler
	key []byte
}

func newHandler(b *testing.B, db *tabula.DB) *handler {
	b.Helper()
	h, err := server.New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	key, err := base64.StdEncoding.DecodeString(server.DevelopmentAccountKey)
	if err != nil {
		b.Fatal(err)
	}
	return &handler{h: h, key: key}
}

// serve runs req into out and fails b unless the status is want.
func (h *handler) serve(b *testing.B, out *wireWriter, req *http.Request, want int) {
	out.reset()
	h.h.ServeHTTP(out, req)
	if out.code != want {
		b.Fatalf("%s %s: status %d, want %d: %.300s", req.Method, req.URL, out.code, want, out.body.String())
	}
}

// batch is a signed POST /$batch inserting entities into table in one change set.
func (h *handler) batch(b *testing.B, table string, entities []tabula.Entity) *http.Request {
	return signedRequest(b, h.key, "POST", "$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_B"},
		batchBody(table, entities))
}

// loadTable creates table and inserts parts partitions of rows entities through the
// handler, one $batch of up to 100 per request, one request after the other, as a test
// filling a table would.
func (h *handler) loadTable(b *testing.B, w *Workload, table string, parts, rows int) {
	b.Helper()
	out := &wireWriter{h: http.Header{}}
	h.serve(b, out, signedRequest(b, h.key, "POST", "Tables", map[string]string{"Prefer": "return-no-content"},
		[]byte(`{"TableName":"`+table+`"}`)), http.StatusNoContent)
	entities := make([]tabula.Entity, 0, tabula.MaxTransactionActions)
	for p := range parts {
		pk, prefix := w.GUID(), w.RowPrefix(1, p+1)
		for row := 0; row < rows; row += tabula.MaxTransactionActions {
			entities = entities[:0]
			for r := row; r < min(row+tabula.MaxTransactionActions, rows); r++ {
				entities = append(entities, w.Entity(pk, RowKey(prefix, r), p*rows+r))
			}
			h.serve(b, out, h.batch(b, table, entities), http.StatusAccepted)
		}
	}
}

// scanNoMatch queries table with noMatchFilter through the handler to its last page and
// returns how many requests that took.
func (h *handler) scanNoMatch(b *testing.B, out *wireWriter, table string) (requests int) {
	next := http.Header{}
	for {
		h.serve(b, out, signedRequest(b, h.key, "GET", pageTarget(table, noMatchFilter, next), nil, nil), http.StatusOK)
		requests++
		if !bytes.Contains(out.body.Bytes(), []byte(`"value":[]`)) {
			b.Fatalf("entities matched: %.200s", out.body.String())
		}
		pk := out.h.Get("x-ms-continuation-NextPartitionKey")
		if pk == "" {
			return requests
		}
		next = http.Header{}
		next.Set("x-ms-continuation-NextPartitionKey", pk)
		next.Set("x-ms-continuation-NextRowKey", out.h.Get("x-ms-continuation-NextRowKey"))
	}
}

// openFresh opens an empty database of the given kind ("memory" or "disk") in dir, on disk
// with the memory budget TABULA_BENCH_BUDGET sets.
func openFresh(b *testing.B, kind, dir string) *tabula.DB {
	b.Helper()
	var db *tabula.DB
	var err error
	if kind == "memory" {
		db, err = tabula.OpenInMemory(nil)
	} else {
		db, err = tabula.Open(dir, &tabula.Options{MemoryBudget: benchBudget(b)})
	}
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// openRawFresh opens raw Badger in dir with the options storage.Open would give it under
// the memory budget TABULA_BENCH_BUDGET sets.
func openRawFresh(b *testing.B, dir string) *badger.DB {
	b.Helper()
	db, err := badger.Open(badgertuning.Options(dir, benchBudget(b)))
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// memoryTime is the in-memory sub-benchmark's time per operation, the x-memory ratio's
// denominator; sub-benchmarks run in order, memory first.
type memoryTime struct{ perOp float64 }

func (m *memoryTime) report(b *testing.B, kind string, perOp float64, unit string) {
	if kind == "memory" {
		m.perOp = perOp
		return
	}
	if m.perOp > 0 {
		b.ReportMetric(perOp/m.perOp, unit)
	}
}

// BenchmarkFreshScan loads a table of 10,000 entities of 1 KiB (100 partitions of 100)
// through the handler into a new database, as a test would, then times one scan of it with
// a filter on a non-key property that matches nothing, page by page through the handler:
// what the first scan after a load costs, before the store has settled (on disk, level 0
// and the memtables as the load left them). Only the scan is timed; each operation is a
// new database. The badger run loads the same records in the same transactions into raw
// Badger and scans them without the wire, decoding every record (copying its strings, which
// the engine does not). The badger-iterator run is the floor Badger sets under any scan of
// it: its iterator, with the options storage.Scan gives it, reading every value through
// Item.Value and nothing more (no decoding, no filter, no wire). x-memory is the time per
// scan over the in-memory store's.
func BenchmarkFreshScan(b *testing.B) {
	const parts, rows = 100, 100
	var mem memoryTime
	for _, kind := range []string{"memory", "disk", "badger", "badger-iterator"} {
		b.Run(kind, func(b *testing.B) {
			out := &wireWriter{h: http.Header{}}
			w := NewWorkload(ShapePayload, 16)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				dir, err := os.MkdirTemp(b.TempDir(), "fresh")
				if err != nil {
					b.Fatal(err)
				}
				var scan func()
				var closeStore func() error
				switch kind {
				case "badger", "badger-iterator":
					db := openRawFresh(b, dir)
					loadRawTransactions(b, db, w, parts, rows)
					scan = func() { rawScanNoMatch(b, db, parts*rows) }
					if kind == "badger-iterator" {
						scan = func() { rawIterate(b, db, parts*rows) }
					}
					closeStore = db.Close
				default:
					db := openFresh(b, kind, dir)
					h := newHandler(b, db)
					h.loadTable(b, w, "Fresh", parts, rows)
					scan = func() { h.scanNoMatch(b, out, "Fresh") }
					closeStore = db.Close
				}
				b.StartTimer()
				c0, _ := threadCPU()
				// Labelled, so that a CPU profile of the whole run (loads included) can be
				// narrowed to the scans: go tool pprof -tagfocus phase=scan.
				pprof.Do(context.Background(), scanLabels, func(context.Context) { scan() })
				c1, _ := threadCPU()
				b.StopTimer()
				cpu += c1 - c0
				if err := closeStore(); err != nil {
					b.Fatal(err)
				}
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			if n := b.N; n > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n)/1e6, "ms/scan")
				if _, ok := threadCPU(); ok {
					perScan := float64(cpu.Nanoseconds()) / float64(n)
					b.ReportMetric(perScan/1e6, "cpu-ms/scan")
					mem.report(b, kind, perScan, "x-memory")
				}
			}
		})
	}
}

// scanLabels mark the timed scans of BenchmarkFreshScan in a CPU profile.
var scanLabels = pprof.Labels("phase", "scan")

// loadRawTransactions writes parts partitions of rows records into raw Badger under the
// first table's ID, one transaction per 100 rows that checks each key absent and sets it,
// as the engine's transactions do.
func loadRawTransactions(b *testing.B, db *badger.DB, w *Workload, parts, rows int) {
	b.Helper()
	rw := newRecordWriter()
	var clock rawClock
	for p := range parts {
		pk, prefix := w.GUID(), w.RowPrefix(1, p+1)
		for row := 0; row < rows; row += tabula.MaxTransactionActions {
			err := db.Update(func(txn *badger.Txn) error {
				for r := row; r < min(row+tabula.MaxTransactionActions, rows); r++ {
					key := entityKey(nil, rawTableID, pk, RowKey(prefix, r))
					if _, err := txn.Get(key); err != badger.ErrKeyNotFound {
						return fmt.Errorf("checking %x absent: %v", key, err)
					}
					if err := txn.Set(key, rw.appendRecord(nil, clock.next(), w.Props(p*rows+r))); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// rawIterate reads every value of the first table's records in raw Badger in one read
// transaction, through the iterator and Item.Value as storage.Scan does, looking at each
// value's first byte only, and fails b unless it read want values.
func rawIterate(b *testing.B, db *badger.DB, want int) {
	prefix := tablePrefix(nil, rawTableID)
	n := 0
	var first byte
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(iterOptions(prefix))
		defer it.Close()
		for it.Seek(prefix); it.Valid(); it.Next() {
			if err := it.Item().Value(func(v []byte) error { first |= v[0]; return nil }); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if n != want || first == 0 {
		b.Fatalf("read %d values, want %d", n, want)
	}
}

// rawScanNoMatch scans the first table's records in raw Badger in one read transaction,
// decoding each record and testing noMatchFilter's property, and fails b unless it
// examined want records and matched none.
func rawScanNoMatch(b *testing.B, db *badger.DB, want int) {
	prefix := tablePrefix(nil, rawTableID)
	page := make([]rawEntity, 1)
	match := func(_ []byte, r *rawRecord) bool {
		p, ok := r.prop("Payload")
		return ok && p.code == codeString && p.str == "nothing"
	}
	var next []byte
	scanned, kept, err := rawScan(db, prefix, prefix, nil, page, newRecordReader(), match, &next)
	if err != nil {
		b.Fatal(err)
	}
	if scanned != want || kept != 0 {
		b.Fatalf("scanned %d records and matched %d, want %d and none", scanned, kept, want)
	}
}

// BenchmarkHandlerTransaction inserts 100 new entities of 1 KiB per operation, each in a
// partition of its own, through POST /$batch from 16 clients at once (each client's
// requests built and signed before they are served, outside the CPU counted). It reports
// entities/s and cpu-ns/entity, the process's CPU time per entity over the run less the
// clients' own (what the server, its store and the garbage collector took, the store's
// flushes and compactions meanwhile included), and x-memory, that over the in-memory
// store's; on disk also settled-cpu-ns/entity, which adds the flushes and compactions left
// running when the writes end (until the store's files stop changing for a second, which
// costs little CPU). The badger run commits the same records in raw Badger, one
// transaction of 100 checks and Sets per operation, without the wire.
func BenchmarkHandlerTransaction(b *testing.B) {
	const size, clients = tabula.MaxTransactionActions, 16
	var mem memoryTime
	for _, kind := range []string{"memory", "disk", "badger"} {
		b.Run(kind, func(b *testing.B) {
			w := NewWorkload(ShapePayload, 35)
			dir := b.TempDir()
			var write func(out *wireWriter, op int, clientCPU *time.Duration)
			if kind == "badger" {
				db := openRawFresh(b, dir)
				b.Cleanup(func() { _ = db.Close() })
				write = func(_ *wireWriter, op int, clientCPU *time.Duration) {
					pk := fmt.Sprintf("p%010d", op)
					c0, _ := threadCPU()
					rw := newRecordWriter()
					keys, vals := make([][]byte, size), make([][]byte, size)
					for r := range size {
						keys[r] = entityKey(nil, rawTableID, pk, RowKey("r", r))
						vals[r] = rw.appendRecord(nil, int64(op*size+r), w.Props(op*size+r))
					}
					c1, _ := threadCPU()
					*clientCPU += c1 - c0
					err := db.Update(func(txn *badger.Txn) error {
						for i := range keys {
							if _, err := txn.Get(keys[i]); err != badger.ErrKeyNotFound {
								return fmt.Errorf("checking %x absent: %v", keys[i], err)
							}
							if err := txn.Set(keys[i], vals[i]); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Error(err)
					}
				}
			} else {
				db := openFresh(b, kind, dir)
				b.Cleanup(func() { _ = db.Close() })
				h := newHandler(b, db)
				h.loadTable(b, w, "Batch", 0, 0)
				write = func(out *wireWriter, op int, clientCPU *time.Duration) {
					pk := fmt.Sprintf("p%010d", op)
					c0, _ := threadCPU()
					entities := make([]tabula.Entity, size)
					for r := range entities {
						entities[r] = w.Entity(pk, RowKey("r", r), op*size+r)
					}
					req := h.batch(b, "Batch", entities)
					c1, _ := threadCPU()
					*clientCPU += c1 - c0
					out.reset()
					h.h.ServeHTTP(out, req)
					if out.code != http.StatusAccepted || bytes.Count(out.body.Bytes(), []byte("HTTP/1.1 204")) != size {
						b.Errorf("$batch: status %d: %.300s", out.code, out.body.String())
					}
				}
			}
			var ops atomic.Int64
			var mu sync.Mutex
			var clientCPU time.Duration
			b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			cpu0, _ := processCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				out := &wireWriter{h: http.Header{}}
				var mine time.Duration
				for pb.Next() {
					write(out, int(ops.Add(1)), &mine)
				}
				mu.Lock()
				clientCPU += mine
				mu.Unlock()
			})
			b.StopTimer()
			cpu1, ok := processCPU()
			n := int(ops.Load()) * size
			if s := b.Elapsed().Seconds(); s > 0 && n > 0 {
				b.ReportMetric(float64(n)/s, "entities/s")
			}
			if !ok || n == 0 {
				return
			}
			perEntity := float64((cpu1 - cpu0 - clientCPU).Nanoseconds()) / float64(n)
			b.ReportMetric(perEntity, "cpu-ns/entity")
			mem.report(b, kind, perEntity, "x-memory")
			if kind != "memory" {
				// The flushes and compactions the writes left behind are theirs too, and a
				// store with larger memtables leaves more of them: count them until the
				// store's files stop changing.
				settle(dir, time.Second, time.Minute)
				cpu2, _ := processCPU()
				b.ReportMetric(float64((cpu2-cpu0-clientCPU).Nanoseconds())/float64(n), "settled-cpu-ns/entity")
			}
		})
	}
}

// rawTableID is the table ID raw Badger's records are written under: the engine's first
// table's.
const rawTableID = 1
