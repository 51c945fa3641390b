package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula"
)

// testNow is the time of every harness: the DB stamps entities from it (each write one
// 100 ns tick later) and the server dates responses with it.
var testNow = time.Date(2024, 5, 6, 7, 8, 9, 123456700, time.UTC)

// harness is a server with fixed clocks and numbered request IDs, driven with raw HTTP
// requests signed as the Go SDK signs them, so that responses are byte-for-byte
// reproducible.
type harness struct {
	t  testing.TB
	s  *Server
	db *tabula.DB
}

func newHarness(t testing.TB, opts *tabula.Options) *harness {
	t.Helper()
	o := tabula.Options{}
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = func() time.Time { return testNow }
	}
	db, err := tabula.OpenInMemory(&o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(db, &Options{Clock: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	s.newID = func() string { return fmt.Sprintf("00000000-0000-0000-0000-%012d", n.Add(1)) }
	return &harness{t: t, s: s, db: db}
}

// request is one raw HTTP request to the harness.
type request struct {
	method, target string // target: path and query, as on the wire
	header         map[string]string
	body           string
	unsigned       bool
}

// do serves a request signed with the development account's key (Shared Key Lite over
// x-ms-date, as the Go SDK signs) and returns the response.
func (h *harness) do(r request) *http.Response {
	h.t.Helper()
	return serveRequest(h.s, r)
}

// serveRequest builds r as harness.do describes, signs it unless r.unsigned, and serves it
// through handler.
func serveRequest(handler http.Handler, r request) *http.Response {
	req := httptest.NewRequest(r.method, r.target, strings.NewReader(r.body))
	req.Host = "127.0.0.1:10002"
	if r.body == "" {
		req.Body = http.NoBody
		req.ContentLength = 0
	}
	req.Header.Set("x-ms-version", "2019-02-02")
	req.Header.Set("DataServiceVersion", "3.0")
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	if !r.unsigned {
		signLite(req, DevelopmentAccountName, DevelopmentAccountKey, testNow)
	}
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	return rec.Result()
}

// signLite signs req with Shared Key Lite as the Go SDK does: the date, then
// /account + the escaped path (+ ?comp=).
func signLite(req *http.Request, account, key string, now time.Time) {
	date := now.UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	path, query, _ := strings.Cut(req.RequestURI, "?")
	resource := "/" + account + path
	if q, err := url.ParseQuery(query); err == nil && q.Has("comp") {
		resource += "?comp=" + q.Get("comp")
	}
	req.Header.Set("Authorization", "SharedKeyLite "+account+":"+hmacBase64(key, date+"\n"+resource))
}

func hmacBase64(key, message string) string {
	k, _ := base64.StdEncoding.DecodeString(key)
	m := hmac.New(sha256.New, k)
	m.Write([]byte(message))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func body(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dump renders a response for a golden file: status, the headers in name order, a blank
// line and the body.
func dump(t testing.TB, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", resp.Proto, resp.Status)
	names := make([]string, 0, len(resp.Header))
	for name := range resp.Header {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range resp.Header[name] {
			fmt.Fprintf(&b, "%s: %s\n", name, v)
		}
	}
	b.WriteString("\n")
	b.WriteString(body(t, resp))
	return b.String()
}

// mustStatus checks a response's status and returns its body.
func mustStatus(t testing.TB, resp *http.Response, status int) string {
	t.Helper()
	b := body(t, resp)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s; detail %s", resp.StatusCode, status, b, resp.Header.Get("X-Tabula-Error-Detail"))
	}
	return b
}

// createTable creates a table through the protocol.
func (h *harness) createTable(name string) {
	h.t.Helper()
	mustStatus(h.t, h.do(request{method: "POST", target: "/devstoreaccount1/Tables",
		header: map[string]string{"Content-Type": "application/json"}, body: `{"TableName":"` + name + `"}`}), 201)
}

// insert adds an entity through the protocol.
func (h *harness) insert(table, entityJSON string) {
	h.t.Helper()
	mustStatus(h.t, h.do(request{method: "POST", target: "/devstoreaccount1/" + table,
		header: map[string]string{"Content-Type": "application/json", "Prefer": "return-no-content"}, body: entityJSON}), 204)
}
