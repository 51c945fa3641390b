package bench

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

// The wire benchmarks drive the server's http.Handler in-process, with no socket and no
// client library: each request is built and signed with Shared Key Lite (as the Go SDK
// signs) outside the measured time, and only ServeHTTP is timed, into a ResponseWriter
// that keeps the status, the headers and the body in reused buffers. The same work is
// done on the engine directly in the same loop, one operation of each in turn, so that
// the ratio holds steady on a loaded machine. Each side is measured in CPU time of the
// benchmark's thread (CLOCK_THREAD_CPUTIME_ID on Linux, the goroutine locked to its thread),
// which other processes on the machine do not inflate, and in wall time. Both run on one
// in-memory database (tabula.OpenInMemory), whatever TABULA_BENCH_STORE says. Reported per
// operation: engine-cpu-ns/op, http-cpu-ns/op and their ratio http/engine (CPU), and the
// wall-time figures engine-ns/op, http-ns/op and http/engine-wall. Where the thread clock
// cannot be read, http/engine is the wall-time ratio.

// wireWriter is a minimal http.ResponseWriter whose buffers are reused between requests.
type wireWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *wireWriter) Header() http.Header { return w.h }
func (w *wireWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *wireWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(p)
}
func (w *wireWriter) reset() {
	clear(w.h)
	w.code = 0
	w.body.Reset()
}

// wire is a server over an in-memory database, with a client's signing key.
type wire struct {
	db  *tabula.DB
	h   http.Handler
	key []byte
	out wireWriter
	// engine and http accumulate the measured wall time of each side, engineCPU and
	// httpCPU their CPU time; cpu says whether the thread clock is read.
	engine, http       time.Duration
	engineCPU, httpCPU time.Duration
	cpu                bool
	// Each measurement's own cost (reading the clocks), measured once and taken off each
	// side's total per measurement.
	overWall, overCPU      time.Duration
	engineCalls, httpCalls int
}

func newWire(b *testing.B) *wire {
	b.Helper()
	db, err := tabula.OpenInMemory(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	hd := newHandler(b, db)
	runtime.LockOSThread()
	b.Cleanup(runtime.UnlockOSThread)
	_, cpu := threadCPU()
	w := &wire{db: db, h: hd.h, key: hd.key, out: wireWriter{h: http.Header{}}, cpu: cpu}
	const calibrations = 10_000
	var wall, cpuTime time.Duration
	for range calibrations {
		w.measure(&wall, &cpuTime, func() {})
	}
	w.overWall, w.overCPU = wall/calibrations, cpuTime/calibrations
	return w
}

// measure runs f and adds its wall and CPU time to wall and cpu.
func (w *wire) measure(wall, cpu *time.Duration, f func()) {
	c0, _ := threadCPU()
	start := time.Now()
	f()
	*wall += time.Since(start)
	if w.cpu {
		c1, _ := threadCPU()
		*cpu += c1 - c0
	}
}

// request builds a signed request for target (path and query as on the wire, after the
// account), as the Go SDK would send it.
func (w *wire) request(b *testing.B, method, target string, header map[string]string, body []byte) *http.Request {
	b.Helper()
	return signedRequest(b, w.key, method, target, header, body)
}

// signedRequest builds a request for target signed with Shared Key Lite under key.
func signedRequest(b *testing.B, key []byte, method, target string, header map[string]string, body []byte) *http.Request {
	b.Helper()
	var r io.Reader = http.NoBody
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://127.0.0.1:10002/"+server.DevelopmentAccountName+"/"+target, r)
	if err != nil {
		b.Fatal(err)
	}
	req.RequestURI = req.URL.RequestURI()
	req.Header.Set("x-ms-version", "2019-02-02")
	req.Header.Set("DataServiceVersion", "3.0")
	req.Header.Set("Accept", "application/json;odata=minimalmetadata")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	resource := req.URL.EscapedPath()
	if q := req.URL.Query(); q.Has("comp") {
		resource += "?comp=" + q.Get("comp")
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(date + "\n" + resource))
	req.Header.Set("Authorization", "SharedKeyLite "+server.DevelopmentAccountName+":"+
		base64.StdEncoding.EncodeToString(m.Sum(nil)))
	return req
}

// serve times one request; it fails b unless the status is want.
func (w *wire) serve(b *testing.B, req *http.Request, want int) {
	w.out.reset()
	w.measure(&w.http, &w.httpCPU, func() { w.h.ServeHTTP(&w.out, req) })
	w.httpCalls++
	if w.out.code != want {
		b.Fatalf("%s %s: status %d, want %d: %s", req.Method, req.URL, w.out.code, want, w.out.body.String())
	}
}

// timeEngine times one call of the engine.
func (w *wire) timeEngine(b *testing.B, f func() error) {
	var err error
	w.measure(&w.engine, &w.engineCPU, func() { err = f() })
	w.engineCalls++
	if err != nil {
		b.Fatal(err)
	}
}

// report writes the two sides' time per operation and their ratio.
func (w *wire) report(b *testing.B, ops int) {
	if ops == 0 || w.engine == 0 {
		return
	}
	w.engine -= time.Duration(w.engineCalls) * w.overWall
	w.http -= time.Duration(w.httpCalls) * w.overWall
	w.engineCPU -= time.Duration(w.engineCalls) * w.overCPU
	w.httpCPU -= time.Duration(w.httpCalls) * w.overCPU
	b.ReportMetric(float64(w.engine.Nanoseconds())/float64(ops), "engine-ns/op")
	b.ReportMetric(float64(w.http.Nanoseconds())/float64(ops), "http-ns/op")
	if !w.cpu || w.engineCPU == 0 {
		b.ReportMetric(float64(w.http)/float64(w.engine), "http/engine")
		return
	}
	b.ReportMetric(float64(w.http)/float64(w.engine), "http/engine-wall")
	b.ReportMetric(float64(w.engineCPU.Nanoseconds())/float64(ops), "engine-cpu-ns/op")
	b.ReportMetric(float64(w.httpCPU.Nanoseconds())/float64(ops), "http-cpu-ns/op")
	b.ReportMetric(float64(w.httpCPU)/float64(w.engineCPU), "http/engine")
}

// load fills table with parts partitions of rows entities of 1 KiB, 100 per transaction,
// and returns the partition keys and row prefixes.
func (w *wire) load(b *testing.B, wl *Workload, table string, parts, rows int) (pks, prefixes []string) {
	b.Helper()
	t, err := w.db.CreateTable(ctx, table)
	if err != nil {
		b.Fatal(err)
	}
	var load []partitionLoad
	for p := range parts {
		pk, prefix := wl.GUID(), wl.RowPrefix(1, p+1)
		pks, prefixes = append(pks, pk), append(prefixes, prefix)
		load = append(load, partitionLoad{pk: pk, prefix: prefix, to: rows, base: p * rows})
	}
	loadEngine(b, t, wl, load)
	return pks, prefixes
}

func quoteKey(s string) string { return url.PathEscape(strings.ReplaceAll(s, "'", "''")) }

// BenchmarkWirePointGet reads one entity of 1 KiB by key, in a fixed shuffled order over
// 10,000 entities: Table.Get beside GET /Table(PartitionKey='…',RowKey='…').
func BenchmarkWirePointGet(b *testing.B) {
	w := newWire(b)
	wl := NewWorkload(ShapePayload, 31)
	pks, prefixes := w.load(b, wl, "Get", 100, 100)
	t := w.db.Table("Get")
	type key struct{ pk, rk string }
	var keys []key
	for r := range 100 {
		for p := range pks {
			keys = append(keys, key{pks[p], RowKey(prefixes[p], (r*37+p)%100)})
		}
	}
	n := 0
	for b.Loop() {
		k := keys[n%len(keys)]
		req := w.request(b, "GET", "Get(PartitionKey='"+quoteKey(k.pk)+"',RowKey='"+quoteKey(k.rk)+"')", nil, nil)
		w.timeEngine(b, func() error { _, err := t.Get(ctx, k.pk, k.rk); return err })
		w.serve(b, req, http.StatusOK)
		n++
	}
	w.report(b, n)
}

// BenchmarkWireInsert inserts one entity of 1 KiB, appending to a partition: Table.Insert
// beside POST /Table with Prefer: return-no-content (as the Go SDK's AddEntity sends).
func BenchmarkWireInsert(b *testing.B) {
	w := newWire(b)
	wl := NewWorkload(ShapePayload, 32)
	te, err := w.db.CreateTable(ctx, "InsertEngine")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.db.CreateTable(ctx, "InsertWire"); err != nil {
		b.Fatal(err)
	}
	pk, prefix := wl.GUID(), wl.RowPrefix(1, 1)
	n := 0
	for b.Loop() {
		e := wl.Entity(pk, RowKey(prefix, n), n)
		req := w.request(b, "POST", "InsertWire", map[string]string{"Prefer": "return-no-content"}, server.EncodeEntity(e))
		w.timeEngine(b, func() error { _, err := te.Insert(ctx, e); return err })
		w.serve(b, req, http.StatusNoContent)
		n++
	}
	w.report(b, n)
}

// batchBody is a $batch of one change set inserting entities, in the Go SDK's layout.
func batchBody(table string, entities []tabula.Entity) []byte {
	var b bytes.Buffer
	b.WriteString("--batch_B\r\nContent-Type: multipart/mixed; boundary=changeset_C\r\n\r\n")
	for i, e := range entities {
		body := server.EncodeEntity(e)
		b.WriteString("--changeset_C\r\nContent-Transfer-Encoding: binary\r\nContent-Type: application/http\r\n\r\n")
		b.WriteString("POST http://127.0.0.1:10002/" + server.DevelopmentAccountName + "/" + table +
			"?%24format=application%2Fjson%3Bodata%3Dminimalmetadata HTTP/1.1\r\n")
		b.WriteString("Accept: application/json;odata=minimalmetadata\r\n")
		b.WriteString("Content-Id: " + strconv.Itoa(i+1) + "\r\n")
		b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
		b.WriteString("Content-Type: application/json\r\nDataserviceversion: 3.0\r\nPrefer: return-no-content\r\nX-Ms-Version: 2019-02-02\r\n\r\n")
		b.Write(body)
		b.WriteString("\r\n")
	}
	b.WriteString("--changeset_C--\r\n\r\n--batch_B--\r\n")
	return b.Bytes()
}

// BenchmarkWireTransaction inserts 100 entities of 1 KiB in one entity group transaction:
// Table.SubmitTransaction beside POST /$batch. Per operation means per transaction.
func BenchmarkWireTransaction(b *testing.B) {
	const size = tabula.MaxTransactionActions
	w := newWire(b)
	wl := NewWorkload(ShapePayload, 33)
	te, err := w.db.CreateTable(ctx, "BatchEngine")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.db.CreateTable(ctx, "BatchWire"); err != nil {
		b.Fatal(err)
	}
	pk, prefix := wl.GUID(), wl.RowPrefix(1, 1)
	actions := make([]tabula.Action, size)
	entities := make([]tabula.Entity, size)
	n := 0
	for b.Loop() {
		for i := range entities {
			entities[i] = wl.Entity(pk, RowKey(prefix, n+i), n+i)
			actions[i] = tabula.InsertAction(entities[i])
		}
		req := w.request(b, "POST", "$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_B"},
			batchBody("BatchWire", entities))
		w.timeEngine(b, func() error { _, err := te.SubmitTransaction(ctx, actions); return err })
		w.serve(b, req, http.StatusAccepted)
		if c := bytes.Count(w.out.body.Bytes(), []byte("HTTP/1.1 204")); c != size {
			b.Fatalf("%d of %d inserts answered 204: %s", c, size, w.out.body.String())
		}
		n += size
	}
	w.report(b, n/size)
}

// pageTarget is the query URL for a filter and the continuation a response named.
func pageTarget(table, filter string, next http.Header) string {
	q := url.Values{"$filter": {filter}}
	if pk := next.Get("x-ms-continuation-NextPartitionKey"); pk != "" {
		q.Set("NextPartitionKey", pk)
		if rk := next.Get("x-ms-continuation-NextRowKey"); rk != "" {
			q.Set("NextRowKey", rk)
		}
	}
	return table + "()?" + q.Encode()
}

// BenchmarkWirePage reads one page of 1,000 entities of 1 KiB from a partition of 10,000,
// following continuations and starting over at the end: Table.Query beside GET
// /Table()?$filter=PartitionKey eq '…'.
func BenchmarkWirePage(b *testing.B) {
	w := newWire(b)
	wl := NewWorkload(ShapePayload, 34)
	pks, _ := w.load(b, wl, "Page", 1, 10_000)
	t := w.db.Table("Page")
	filter := partitionFilter(pks[0])
	q := tabula.Query{Filter: filter}
	next := http.Header{}
	n := 0
	for b.Loop() {
		req := w.request(b, "GET", pageTarget("Page", filter, next), nil, nil)
		var page tabula.Page
		w.timeEngine(b, func() error {
			var err error
			page, err = t.Query(ctx, q)
			return err
		})
		if len(page.Entities) != tabula.MaxEntitiesPerPage {
			b.Fatalf("engine page of %d entities", len(page.Entities))
		}
		q.Continuation = page.Continuation
		w.serve(b, req, http.StatusOK)
		clear(next)
		for _, h := range []string{"x-ms-continuation-NextPartitionKey", "x-ms-continuation-NextRowKey"} {
			if v := w.out.h.Get(h); v != "" {
				next.Set(h, v)
			}
		}
		n++
	}
	w.report(b, n)
}

// BenchmarkWireNoMatchScan scans a table of 10,000 entities of 1 KiB (100 partitions of
// 100) with a filter that matches none, to its last page: Table.Query pages beside GET
// /Table()?$filter=… pages. Per operation means per whole scan; scanned-ns is the server's
// time per entity scanned.
func BenchmarkWireNoMatchScan(b *testing.B) {
	const parts, rows = 100, 100
	w := newWire(b)
	wl := NewWorkload(ShapePayload, 16)
	w.load(b, wl, "NoMatch", parts, rows)
	t := w.db.Table("NoMatch")
	n, requests := 0, 0
	for b.Loop() {
		q := tabula.Query{Filter: noMatchFilter}
		scanned := 0
		for {
			var page tabula.Page
			w.timeEngine(b, func() error {
				var err error
				page, err = t.Query(ctx, q)
				return err
			})
			scanned += page.Plan.Scanned
			if page.Continuation.IsZero() {
				break
			}
			q.Continuation = page.Continuation
		}
		if scanned != parts*rows {
			b.Fatalf("engine scanned %d entities, want %d", scanned, parts*rows)
		}
		next := http.Header{}
		for {
			req := w.request(b, "GET", pageTarget("NoMatch", noMatchFilter, next), nil, nil)
			w.serve(b, req, http.StatusOK)
			requests++
			if !bytes.Contains(w.out.body.Bytes(), []byte(`"value":[]`)) {
				b.Fatalf("entities matched: %.200s", w.out.body.String())
			}
			pk := w.out.h.Get("x-ms-continuation-NextPartitionKey")
			if pk == "" {
				break
			}
			next = http.Header{}
			next.Set("x-ms-continuation-NextPartitionKey", pk)
			next.Set("x-ms-continuation-NextRowKey", w.out.h.Get("x-ms-continuation-NextRowKey"))
		}
		n++
	}
	w.report(b, n)
	if n > 0 {
		b.ReportMetric(float64(w.http.Nanoseconds())/float64(n*parts*rows), "http-ns/entity")
		if w.cpu {
			b.ReportMetric(float64(w.httpCPU.Nanoseconds())/float64(n*parts*rows), "http-cpu-ns/entity")
		}
		b.ReportMetric(float64(requests)/float64(n), "requests/scan")
	}
}
