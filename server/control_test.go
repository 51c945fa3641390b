package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
)

// manage sends a request to the management API as an operator with the development key.
func (h *harness) manage(method, resource, body string) *httptest.ResponseRecorder {
	h.t.Helper()
	r := httptest.NewRequest(method, ReservedPrefix+"api/"+resource, strings.NewReader(body))
	r.SetBasicAuth(DevelopmentAccountName, DevelopmentAccountKey)
	w := httptest.NewRecorder()
	h.s.ServeHTTP(w, r)
	return w
}

// controlErrorBody is what a refused control request answers.
type controlErrorBody struct {
	Error string `json:"error"`
	Field string `json:"field"`
}

func TestControlValidation(t *testing.T) {
	for _, tc := range []struct {
		name, method, resource, body string
		status                       int
		field                        string // the field the error names, "" for the request as a whole
		message                      string // a part of the message
	}{
		{"bad JSON", "PUT", "limits", `{"mode":`, 400, "", "not valid JSON"},
		{"not JSON at all", "PUT", "limits", `mode=enforce`, 400, "", "not valid JSON"},
		{"empty body", "PUT", "limits", ``, 400, "", "body is empty"},
		{"an array", "PUT", "limits", `[1]`, 400, "", "must be a JSON object"},
		{"two objects", "PUT", "limits", `{}{}`, 400, "", "more than one JSON value"},
		{"unknown mode", "PUT", "limits", `{"mode":"fast"}`, 400, "mode", `"fast" is not a limit mode; use off, observe or enforce`},
		{"mode not a string", "PUT", "limits", `{"mode":1}`, 400, "mode", "must be a string, not a JSON number"},
		{"negative partition rate", "PUT", "limits", `{"partitionRate":-5}`, 400, "partitionRate", "must be a positive number of entities per second, not -5"},
		{"zero account rate", "PUT", "limits", `{"accountRate":0}`, 400, "accountRate", "not 0"},
		{"burst below one", "PUT", "limits", `{"partitionBurst":0.5}`, 400, "partitionBurst", "at least 1"},
		{"negative account burst", "PUT", "limits", `{"accountBurst":-1}`, 400, "accountBurst", "at least 1"},
		{"rate as a string", "PUT", "limits", `{"partitionRate":"fast"}`, 400, "partitionRate", "must be a number, not a JSON string"},
		{"misspelt field", "PUT", "limits", `{"partitonRate":1}`, 400, "partitonRate", "is not a field of this resource; it has mode, partitionRate"},
		{"valid mode, invalid rate", "PUT", "limits", `{"mode":"enforce","accountRate":-1}`, 400, "accountRate", "positive"},
		{"busy above one", "PUT", "faults", `{"serverBusy":1.5}`, 400, "serverBusy", "probability from 0 to 1, not 1.5"},
		{"negative timeout", "PUT", "faults", `{"timeout":-0.1}`, 400, "timeout", "probability"},
		{"probabilities over one together", "PUT", "faults", `{"serverBusy":0.6,"timeout":0.6}`, 400, "timeout", "must not exceed 1"},
		{"unknown kind", "PUT", "faults", `{"kinds":["insert","read"]}`, 400, "kinds", `"read" is not an operation kind; the kinds are get, query, insert`},
		{"kinds not an array", "PUT", "faults", `{"kinds":"insert"}`, 400, "kinds", "must be an array"},
		{"negative continuation", "PUT", "faults", `{"continuationEvery":-1}`, 400, "continuationEvery", "not -1"},
		{"offline for no duration", "PUT", "faults", `{"offlineFor":"soon"}`, 400, "offlineFor", `not "soon"`},
		{"negative table delete delay", "PUT", "faults", `{"tableDeleteDelay":"-1s"}`, 400, "tableDeleteDelay", `not "-1s"`},
		{"table delete delay by an account", "PUT", "faults", `{"tableDeleteDelay":"40s"}`, 403, "tableDeleteDelay", "sign in as _tabula"},
		{"negative seed", "PUT", "faults", `{"seed":-1}`, 400, "seed", "must be a non-negative integer"},
		{"switch not a bool", "PUT", "queries", `{"forbidFullScans":"yes"}`, 400, "forbidFullScans", "must be true or false"},
		{"too large", "PUT", "queries", `{"forbidFullScans":true` + strings.Repeat(" ", maxControlBody) + `}`, 413, "", "exceeds"},
		{"DELETE limits", "DELETE", "limits", ``, 405, "", "DELETE is not allowed here; use GET, HEAD, PUT"},
		{"GET reset", "GET", "reset", ``, 405, "", "use POST"},
		{"unknown resource", "GET", "throttle", ``, 404, "", `"throttle" is not a resource of the management API`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			before := map[string]string{}
			for _, res := range []string{"limits", "faults", "queries"} {
				before[res] = h.manage("GET", res, "").Body.String()
			}
			w := h.manage(tc.method, tc.resource, tc.body)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			var e controlErrorBody
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e), w.Body.String())
			assert.Equal(t, tc.field, e.Field)
			assert.Contains(t, e.Error, tc.message)
			if tc.field != "" {
				assert.True(t, strings.HasPrefix(e.Error, tc.field+": "), "the message starts with the field: %s", e.Error)
			}
			for res, was := range before {
				assert.Equal(t, was, h.manage("GET", res, "").Body.String(), "a refused request changes nothing in %s", res)
			}
		})
	}
}

func TestControlLimits(t *testing.T) {
	h := newHarness(t, nil)
	w := h.manage("GET", "limits", "")
	require.Equal(t, 200, w.Code)
	assert.JSONEq(t, `{"mode":"observe","partitionRate":2000,"partitionBurst":2000,"accountRate":20000,"accountBurst":20000}`, w.Body.String())

	w = h.manage("PUT", "limits", `{"mode":"Enforce","partitionRate":10}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	want := `{"mode":"enforce","partitionRate":10,"partitionBurst":10,"accountRate":20000,"accountBurst":20000}`
	assert.JSONEq(t, want, w.Body.String(), "a new rate without a burst gets a second's worth")
	assert.JSONEq(t, want, h.manage("GET", "limits", "").Body.String())
	assert.Equal(t, partition.LimitEnforce, h.db.Namespace("").Limits().Mode)

	w = h.manage("PUT", "limits", `{"accountBurst":50}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	assert.JSONEq(t, `{"mode":"enforce","partitionRate":10,"partitionBurst":10,"accountRate":20000,"accountBurst":50}`, w.Body.String(),
		"fields left out keep their value")
	assert.Equal(t, 50.0, h.db.Namespace("").Limits().AccountBurst)
	assert.Equal(t, 10.0, h.db.Namespace("").HeatReport().PartitionRate)
}

func TestControlFaults(t *testing.T) {
	h := newHarness(t, nil)
	w := h.manage("GET", "faults", "")
	require.Equal(t, 200, w.Code)
	assert.JSONEq(t, `{"seed":0,"serverBusy":0,"timeout":0,"kinds":["get","query","insert","replace","merge","insert-or-replace",
		"insert-or-merge","delete","batch","create-table","delete-table","query-tables"],"continuationEvery":0,
		"offlineOnSplit":false,"offlineFor":"3s","tableDeleteDelay":"0s"}`, w.Body.String())

	w = h.manage("PUT", "faults", `{"seed":18446744073709551615,"serverBusy":0.25,"timeout":0.5,"kinds":["Insert","batch"],
		"continuationEvery":7,"offlineOnSplit":true,"offlineFor":"1.5s"}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	assert.JSONEq(t, `{"seed":18446744073709551615,"serverBusy":0.25,"timeout":0.5,"kinds":["insert","batch"],"continuationEvery":7,
		"offlineOnSplit":true,"offlineFor":"1.5s","tableDeleteDelay":"0s"}`, w.Body.String())
	assert.Equal(t, partition.Faults{Seed: 1<<64 - 1, ServerBusy: 0.25, Timeout: 0.5, Kinds: partition.Kinds(partition.KindInsert, partition.KindBatch),
		ContinuationEvery: 7, OfflineOnSplit: true, OfflineFor: 1500 * time.Millisecond}, h.db.Namespace("").Faults())

	w = h.manage("PUT", "faults", `{"timeout":0,"kinds":[]}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	f := h.db.Namespace("").Faults()
	assert.Equal(t, 0.25, f.ServerBusy, "fields left out keep their value")
	assert.Zero(t, f.Timeout)
	assert.Zero(t, f.Kinds, "no kinds: every kind")

	w = h.manage("DELETE", "faults", "")
	require.Equal(t, 200, w.Code, w.Body.String())
	assert.Equal(t, partition.Faults{}, h.db.Namespace("").Faults(), "DELETE turns fault injection off")
}

// tableDeleteDelay, the whole server's, is the administrator's to set; every account reads
// it, and a deleted table then answers 409 TableBeingDeleted until it has passed.
func TestControlTableDeleteDelay(t *testing.T) {
	h := newHarness(t, nil)
	admin := func(method, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, ReservedPrefix+"api/faults", strings.NewReader(body))
		r.SetBasicAuth(AdminUser, h.s.AdminKey())
		w := httptest.NewRecorder()
		h.s.ServeHTTP(w, r)
		return w
	}
	w := admin("PUT", `{"tableDeleteDelay":"40s","seed":3}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	assert.Contains(t, w.Body.String(), `"tableDeleteDelay":"40s"`)
	assert.Equal(t, tabula.ServiceTableDeleteDelay, h.db.TableDeleteDelay())
	assert.Contains(t, h.manage("GET", "faults", "").Body.String(), `"tableDeleteDelay":"40s"`, "an account reads it")
	// Refused whole: a faults change that names it, by an account, changes nothing.
	require.Equal(t, 403, h.manage("PUT", "faults", `{"tableDeleteDelay":"0s","seed":9}`).Code)
	assert.Equal(t, uint64(0), h.db.Namespace("").Faults().Seed)

	h.createTable("Gone")
	mustStatus(t, h.do(request{method: "DELETE", target: "/devstoreaccount1/Tables('Gone')"}), 204)
	createGone := request{method: "POST", target: "/devstoreaccount1/Tables", header: map[string]string{"Content-Type": "application/json"}, body: `{"TableName":"Gone"}`}
	wantError(t, h.do(createGone), 409, "TableBeingDeleted")

	w = admin("PUT", `{"tableDeleteDelay":"0s"}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	assert.Zero(t, h.db.TableDeleteDelay())
	mustStatus(t, h.do(createGone), 201)
}

// The faults set through the API reach the protocol: every insert fails with ServerBusy.
func TestControlFaultsReachRequests(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Busy")
	require.Equal(t, 200, h.manage("PUT", "faults", `{"serverBusy":1,"kinds":["insert"]}`).Code)
	resp := h.do(request{method: "POST", target: "/devstoreaccount1/Busy",
		header: map[string]string{"Content-Type": "application/json"}, body: `{"PartitionKey":"p","RowKey":"r"}`})
	assert.Contains(t, mustStatus(t, resp, 503), `"code":"ServerBusy"`)
	require.Equal(t, 200, h.manage("DELETE", "faults", "").Code)
	h.insert("Busy", `{"PartitionKey":"p","RowKey":"r"}`)
}

func TestControlQueries(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Scans")
	h.insert("Scans", `{"PartitionKey":"p","RowKey":"r","N":1}`)
	fullScan := request{method: "GET", target: "/devstoreaccount1/Scans()?$filter=N%20eq%201", header: map[string]string{"Accept": "application/json"}}
	mustStatus(t, h.do(fullScan), 200)

	w := h.manage("PUT", "queries", `{"forbidFullScans":true}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	assert.JSONEq(t, `{"forbidFullScans":true,"boundaryContinuations":false}`, w.Body.String())
	resp := h.do(fullScan)
	assert.Equal(t, 400, resp.StatusCode, "a full scan is refused once forbidden")
	assert.True(t, h.db.Namespace("").ForbidFullScans())

	w = h.manage("PUT", "queries", `{"forbidFullScans":false,"boundaryContinuations":true}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	assert.JSONEq(t, `{"forbidFullScans":false,"boundaryContinuations":true}`, h.manage("GET", "queries", "").Body.String())
	mustStatus(t, h.do(fullScan), 200)
	assert.True(t, h.db.Namespace("").BoundaryContinuations())
}

func TestControlReset(t *testing.T) {
	h := newHarness(t, &tabula.Options{})
	h.createTable("Counted")
	h.insert("Counted", `{"PartitionKey":"p","RowKey":"r"}`)
	require.NotZero(t, h.db.Namespace("").HeatReport().Offered)
	w := h.manage("POST", "reset", "")
	assert.Equal(t, http.StatusNoContent, w.Code)
	assert.Zero(t, h.db.Namespace("").HeatReport().Offered)
}
