package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loggedHarness is a harness whose server sits behind the request log, on a clock that
// advances 1.5 ms at each reading, so that every line is reproducible.
type loggedHarness struct {
	*harness
	handler http.Handler
	lines   bytes.Buffer
	debug   bytes.Buffer
}

func newLoggedHarness(t *testing.T, json bool) *loggedHarness {
	h := &loggedHarness{harness: newHarness(t, nil)}
	noTime := func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}
	var handler slog.Handler = slog.NewTextHandler(&h.lines, &slog.HandlerOptions{ReplaceAttr: noTime})
	if json {
		handler = slog.NewJSONHandler(&h.lines, &slog.HandlerOptions{ReplaceAttr: noTime})
	}
	now := testNow
	clock := func() time.Time { now = now.Add(1500 * time.Microsecond); return now }
	h.handler = RequestLog(h.s, LogOptions{Logger: slog.New(handler), Debug: &h.debug, Clock: clock})
	return h
}

// do serves r, signed as harness.do signs, through the request log.
func (h *loggedHarness) do(r request) *http.Response {
	h.t.Helper()
	return serveRequest(h.handler, r)
}

// requests runs one request of each kind the log reports differently.
func (h *loggedHarness) requests(t *testing.T) {
	jsonBody := map[string]string{"Content-Type": "application/json"}
	noContent := map[string]string{"Content-Type": "application/json", "Prefer": "return-no-content"}
	mustStatus(t, h.do(request{method: "POST", target: "/devstoreaccount1/Tables", header: jsonBody, body: `{"TableName":"Logged"}`}), 201)
	mustStatus(t, h.do(request{method: "POST", target: "/devstoreaccount1/Logged", header: noContent, body: `{"PartitionKey":"p","RowKey":"a"}`}), 204)
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Logged(PartitionKey='p',RowKey='a')"}), 200)
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Logged(PartitionKey='p',RowKey='zz')"}), 404)
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Logged()?$filter=PartitionKey%20eq%20'p'"}), 200)
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Logged()?$filter=Nope%20eq", header: jsonBody}), 400)
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Logged()?sv=2019-02-02&tn=Logged&sp=r&se=2030-01-01T00%3A00%3A00Z&sig=c2VjcmV0", unsigned: true}), 403)
	batch := map[string]string{"Content-Type": "multipart/mixed; boundary=batch_B", "Accept": "application/json;odata=minimalmetadata"}
	mustStatus(t, h.do(request{method: "POST", target: "/devstoreaccount1/$batch", header: batch, body: changeSetBody(
		insertOp("Logged", `{"PartitionKey":"p","RowKey":"b"}`, true),
		insertOp("Logged", `{"PartitionKey":"p","RowKey":"c"}`, true))}), 202)
	mustStatus(t, h.do(request{method: "POST", target: "/devstoreaccount1/$batch", header: batch, body: changeSetBody(
		insertOp("Logged", `{"PartitionKey":"p","RowKey":"d"}`, true),
		insertOp("Logged", `{"PartitionKey":"p","RowKey":"a"}`, true))}), 202)
}

// One line per request: method, path (signature redacted), status, the service's error
// code, duration, entities read or written, and Tabula's detail of an error.
func TestGoldenRequestLog(t *testing.T) {
	h := newLoggedHarness(t, false)
	h.requests(t)
	golden(t, "request_log_text", h.lines.String())
	assert.Equal(t, 9, strings.Count(h.lines.String(), "\n"))
}

func TestGoldenRequestLogJSON(t *testing.T) {
	h := newLoggedHarness(t, true)
	h.requests(t)
	golden(t, "request_log_json", h.lines.String())
}

// The debug dump holds whole requests and responses, and no credential.
func TestDebugDumpRedactsSecrets(t *testing.T) {
	h := newLoggedHarness(t, false)
	h.requests(t)
	mustStatus(t, h.do(request{method: "POST", target: "/devstoreaccount1/Logged", unsigned: true,
		header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."}}), 403)
	mustStatus(t, h.do(request{method: "POST", target: "/devstoreaccount1/Logged", header: map[string]string{"Content-Type": "application/json"},
		body: `{"PartitionKey":"p","RowKey":"s","Conn":"DefaultEndpointsProtocol=http;AccountName=a;AccountKey=c2VjcmV0LWtleQ==;"}`}), 201)
	dump := h.debug.String()
	assert.Contains(t, dump, "Authorization: SharedKeyLite devstoreaccount1:REDACTED\n")
	assert.Contains(t, dump, "Authorization: Bearer REDACTED\n")
	assert.Contains(t, dump, "&sig=REDACTED HTTP/1.1\n")
	assert.Contains(t, dump, "AccountKey=REDACTED;")
	assert.Contains(t, dump, `{"TableName":"Logged"}`, "request bodies are dumped")
	assert.Contains(t, dump, `"odata.error"`, "response bodies are dumped")
	assert.Contains(t, dump, "--- 404 Not Found in 1.5ms\n")
	for _, secret := range []string{"c2VjcmV0LWtleQ", "sig=c2VjcmV0", "eyJhbGciOiJub25lIn0", hmacBase64(DevelopmentAccountKey, "")[:8]} {
		assert.NotContains(t, dump, secret)
	}
	// Each signature the harness made is absent too.
	for _, line := range strings.Split(dump, "\n") {
		if strings.HasPrefix(line, "Authorization:") {
			assert.True(t, strings.HasSuffix(line, "REDACTED"), line)
		}
	}
	assert.Equal(t, 11, strings.Count(dump, "\n=== ")+1, "one dump per request")
}

// A body larger than MaxDebugBody is cut, and says how much was left out.
func TestDebugDumpCapsBodies(t *testing.T) {
	h := newHarness(t, nil)
	var debug bytes.Buffer
	handler := RequestLog(h.s, LogOptions{Debug: &debug, MaxDebugBody: 10})
	req := httptest.NewRequest("POST", "/devstoreaccount1/Tables", strings.NewReader(`{"TableName":"Capped"}`))
	signLite(req, DevelopmentAccountName, DevelopmentAccountKey, testNow)
	req.Header.Set("Content-Type", "application/json")
	handler.ServeHTTP(httptest.NewRecorder(), req)
	require.Contains(t, debug.String(), "\n{\"TableNam\n[12 more bytes]\n")
}

func TestRedactQuery(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"sig=abc":                "sig=REDACTED",
		"sv=1&SIG=abc%2B&tn=T":   "sv=1&SIG=REDACTED&tn=T",
		"$filter=sig%20eq%20'x'": "$filter=sig%20eq%20'x'",
		"signature=1":            "signature=1",
	} {
		assert.Equal(t, want, redactQuery(in), in)
	}
}
