package server

import (
	"bytes"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/wire"
)

// The request parsers against arbitrary input: none may panic, and the server must answer
// every request with the service's 4xx (or a success), never a 5xx.

// serve sends a signed request with a raw target (not necessarily a valid URL) and returns
// the response.
func (h *harness) serveRaw(method, target, contentType string, body []byte) *http.Response {
	req := httptest.NewRequest(method, "/", bytes.NewReader(body))
	req.Host = "127.0.0.1:10002"
	req.RequestURI = target
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	signLite(req, DevelopmentAccountName, DevelopmentAccountKey, testNow)
	rec := httptest.NewRecorder()
	h.s.ServeHTTP(rec, req)
	return rec.Result()
}

// no5xx allows the one 5xx the service itself answers to well-formed requests it does not
// implement (501 NotImplemented: OData functions, service properties).
func no5xx(t *testing.T, resp *http.Response, input any) {
	t.Helper()
	if resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented {
		t.Fatalf("status %d for %q: %s (%s)", resp.StatusCode, input, body(t, resp), resp.Header.Get("X-Tabula-Error-Detail"))
	}
}

func FuzzEntityJSON(f *testing.F) {
	for _, seed := range []string{
		wireEntity,
		`{"PartitionKey":"p","RowKey":"r"}`,
		`{"PartitionKey":"p","RowKey":"r","A":1,"A":2}`,
		`{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"-9223372036854775808"}`,
		`{"PartitionKey":"p","RowKey":"r","D@odata.type":"Edm.Double","D":"-Infinity","Z":-0.0,"E":1E-320}`,
		`{"PartitionKey":"p","RowKey":"r","T@odata.type":"Edm.DateTime","T":"9999-12-31T23:59:59.9999999Z"}`,
		`{"PartitionKey":"p","RowKey":"r","S":"\ud83d\ude00\u0000\\\"\/"}`,
		`{"PartitionKey":"","RowKey":"","odata.etag":"x","Timestamp":null}`,
		` { "PartitionKey" : "p" , "RowKey" : "r" , "b" : false } `,
		`{"RowKey@odata.type":"Edm.String","RowKey":"r","PartitionKey":"p","G@odata.type":"Edm.Guid","G":"00000000-0000-0000-0000-000000000000"}`,
	} {
		f.Add([]byte(seed))
	}
	h := newHarness(f, nil)
	h.createTable("Fuzz")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, keys := range []wire.Keys{wire.KeysFromBody, wire.KeysFromURL, wire.KeysFromResponse} {
			e, err := decodeEntity(data, keys)
			if err != nil {
				if err.StatusCode != 400 {
					t.Fatalf("decode refused %q with %d %s", data, err.StatusCode, err.Code)
				}
				continue
			}
			// What the server reads it writes back the same (DateTimes at the service's 100 ns).
			again, err := decodeEntity(EncodeEntity(e), wire.KeysFromBody)
			if err != nil {
				t.Fatalf("EncodeEntity(%q) does not read back: %v", data, err)
			}
			if keys != wire.KeysFromURL && (again.PartitionKey != e.PartitionKey || again.RowKey != e.RowKey) {
				t.Fatalf("keys of %q: %q %q, then %q %q", data, e.PartitionKey, e.RowKey, again.PartitionKey, again.RowKey)
			}
			if !sameProperties(e.Properties, again.Properties) {
				t.Fatalf("properties of %q: %v, then %v", data, e.Properties, again.Properties)
			}
		}
		resp := h.serveRaw("POST", "/devstoreaccount1/Fuzz", "application/json", data)
		no5xx(t, resp, data)
		resp = h.serveRaw("PUT", "/devstoreaccount1/Fuzz(PartitionKey='p',RowKey='put')", "application/json", data)
		no5xx(t, resp, data)
	})
}

func sameProperties(a, b tabula.Properties) bool {
	if len(a) != len(b) {
		return false
	}
	for name, va := range a {
		vb, ok := b[name]
		if !ok || va.EdmType() != vb.EdmType() {
			return false
		}
		switch va := va.(type) {
		case tabula.Double:
			if math.Float64bits(float64(va)) != math.Float64bits(float64(vb.(tabula.Double))) {
				return false
			}
		case tabula.DateTime:
			if !va.Time().Truncate(100).Equal(vb.(tabula.DateTime).Time()) {
				return false
			}
		case tabula.Binary:
			if !bytes.Equal(va, vb.(tabula.Binary)) {
				return false
			}
		default:
			if va != vb {
				return false
			}
		}
	}
	return true
}

func FuzzBatch(f *testing.F) {
	insert := func(rk string) string { return insertOp("Fuzz", `{"PartitionKey":"p","RowKey":"`+rk+`","N":1}`, true) }
	for _, seed := range []string{
		changeSetBody(insert("a"), insert("b")),
		changeSetBody(insert("a"), insertOp("Fuzz", `{"PartitionKey":"q","RowKey":"x"}`, false)),
		changeSetBody(subRequestText("PATCH", "Fuzz(PartitionKey='p',RowKey='a')", map[string]string{"If-Match": "*"}, `{"M":2}`),
			subRequestText("DELETE", "Fuzz(PartitionKey='p',RowKey='b')", map[string]string{"If-Match": "*"}, "")),
		changeSetBody(subRequestText("PUT", "Fuzz(PartitionKey='p',RowKey='c')", map[string]string{}, `{"M":3}`)),
		"--batch_B\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
			subRequestText("GET", "Fuzz(PartitionKey='p',RowKey='a')", map[string]string{}, "") + "\r\n--batch_B--\r\n",
		changeSetBody(),
		"--batch_B--\r\n",
	} {
		f.Add([]byte(seed))
	}
	h := newHarness(f, nil)
	h.createTable("Fuzz")
	f.Fuzz(func(t *testing.T, data []byte) {
		resp := h.serveRaw("POST", "/devstoreaccount1/$batch", "multipart/mixed; boundary=batch_B", data)
		no5xx(t, resp, data)
		if resp.StatusCode != http.StatusAccepted {
			return
		}
		// A 202 is a well-formed multipart document with at least one part.
		_, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		mr := multipart.NewReader(resp.Body, params["boundary"])
		part, err := mr.NextPart()
		if err != nil {
			t.Fatalf("202 for %q is not multipart: %v", data, err)
		}
		if _, err := io.ReadAll(part); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzKeyPredicate(f *testing.F) {
	for _, seed := range [][2]string{{"p", "r"}, {"a'b", "x,y)"}, {"", ""}, {"%2F", "''"}, {"PartitionKey='x'", ")("}, {"\x00\xff", "😀"}} {
		f.Add(seed[0], seed[1])
	}
	h := newHarness(f, nil)
	h.createTable("Fuzz")
	f.Fuzz(func(t *testing.T, pk, rk string) {
		// The keys an SDK puts in a URL read back exactly, unless they hold / or \, which
		// the service refuses in a URL.
		res, err := parseResource("Fuzz" + wire.KeyPredicate(pk, rk))
		switch {
		case strings.ContainsAny(pk+rk, `/\`):
			if err == nil {
				t.Fatalf("keys %q %q with / or \\ were accepted", pk, rk)
			}
		case err != nil:
			t.Fatalf("keys %q %q: %v", pk, rk, err)
		case res.kind != resEntity || res.table != "Fuzz" || res.pk != pk || res.rk != rk:
			t.Fatalf("keys %q %q read back as %+v", pk, rk, res)
		}
		// Anything at all after the account: a 4xx or a success, never a 5xx or a panic.
		for _, raw := range []string{pk, "Fuzz(" + pk + ")", "Fuzz(PartitionKey='" + pk + "',RowKey=" + rk} {
			_, _ = parseResource(raw)
			no5xx(t, h.serveRaw("GET", "/devstoreaccount1/"+raw, "", nil), raw)
			no5xx(t, h.serveRaw("DELETE", "/devstoreaccount1/"+raw+"?"+rk, "", nil), raw)
		}
	})
}

// FuzzSplitTarget checks the sub-request URL fast path against url.ParseRequestURI, which
// reads every URL the fast path declines.
func FuzzSplitTarget(f *testing.F) {
	for _, seed := range []string{
		"http://127.0.0.1:10002/devstoreaccount1/T?%24format=application%2Fjson%3Bodata%3Dminimalmetadata",
		"https://acct.table.core.windows.net/T(PartitionKey='p',RowKey='r')",
		"/devstoreaccount1/T(PartitionKey='a%20b',RowKey='')", "//h/p", "http://h", "http://u@h/p", "http://[::1]:80/a/T",
		"HTTP://h/a/T", "http://h:/a/T", "http://h/a/T?x=\x01", "http://h/a b",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, target string) {
		scheme, host, path, query, ok := splitTarget(target)
		if !ok {
			return
		}
		u, err := url.ParseRequestURI(target)
		if err != nil {
			t.Fatalf("splitTarget read %q, which url.ParseRequestURI refuses: %v", target, err)
		}
		if scheme != u.Scheme || host != u.Host || path != u.EscapedPath() || query != u.RawQuery {
			t.Fatalf("%q: split into %q %q %q %q, not %q %q %q %q", target, scheme, host, path, query, u.Scheme, u.Host, u.EscapedPath(), u.RawQuery)
		}
	})
}
