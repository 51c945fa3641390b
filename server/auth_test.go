package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula"
)

// sasQuery builds a table SAS (tn) the way the service's documentation defines it, for the
// development account; mutate edits the values after signing, to tamper with them.
func tableSAS(table, perms string, start, expiry time.Time, keyRange [4]string, mutate func(url.Values)) string {
	st, se := "", expiry.UTC().Format("2006-01-02T15:04:05Z")
	if !start.IsZero() {
		st = start.UTC().Format("2006-01-02T15:04:05Z")
	}
	sts := strings.Join([]string{perms, st, se, "/table/" + DevelopmentAccountName + "/" + strings.ToLower(table), "", "", "", "2019-02-02",
		keyRange[0], keyRange[1], keyRange[2], keyRange[3]}, "\n")
	q := url.Values{"sv": {"2019-02-02"}, "tn": {strings.ToLower(table)}, "sp": {perms}, "se": {se}, "sig": {hmacBase64(DevelopmentAccountKey, sts)}}
	if st != "" {
		q.Set("st", st)
	}
	for i, name := range []string{"spk", "srk", "epk", "erk"} {
		if keyRange[i] != "" {
			q.Set(name, keyRange[i])
		}
	}
	if mutate != nil {
		mutate(q)
	}
	return q.Encode()
}

// accountSAS builds an account SAS for the development account.
func accountSAS(services, resourceTypes, perms string, expiry time.Time) string {
	se := expiry.UTC().Format("2006-01-02T15:04:05Z")
	sts := strings.Join([]string{DevelopmentAccountName, perms, services, resourceTypes, "", se, "", "https", "2019-02-02", ""}, "\n")
	q := url.Values{"sv": {"2019-02-02"}, "ss": {services}, "srt": {resourceTypes}, "sp": {perms}, "se": {se}, "spr": {"https"},
		"sig": {hmacBase64(DevelopmentAccountKey, sts)}}
	return q.Encode()
}

// count returns how many entities the table holds, read through the engine.
func (h *harness) count(table string) int {
	h.t.Helper()
	n := 0
	for _, err := range h.db.Table(table).QueryAll(context.Background(), tabula.Query{}) {
		if err != nil {
			h.t.Fatal(err)
		}
		n++
	}
	return n
}

func wantError(t *testing.T, resp *http.Response, status int, code string) {
	t.Helper()
	b := body(t, resp)
	inBody := `"code":"` + code + `"`
	if resp.Header.Get("Content-Type") == "application/xml" { // the XML operations' errors
		inBody = "<m:code>" + code + "</m:code>"
	}
	if resp.StatusCode != status || !strings.Contains(b, inBody) {
		t.Fatalf("got %d %s, want %d %s (detail: %s)", resp.StatusCode, b, status, code, resp.Header.Get("X-Tabula-Error-Detail"))
	}
}

func TestSharedKeyFailures(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Auth")
	insert := func(mod func(*http.Request)) *http.Response {
		req := httptest.NewRequest("POST", "/devstoreaccount1/Auth", strings.NewReader(`{"PartitionKey":"p","RowKey":"r"}`))
		req.Host = "127.0.0.1:10002"
		req.Header.Set("Content-Type", "application/json")
		mod(req)
		rec := httptest.NewRecorder()
		h.s.ServeHTTP(rec, req)
		return rec.Result()
	}
	wrongKey := "AAAA" + DevelopmentAccountKey[4:]
	cases := map[string]func(*http.Request){
		"wrong key": func(r *http.Request) { signLite(r, DevelopmentAccountName, wrongKey, testNow) },
		"tampered signature": func(r *http.Request) {
			signLite(r, DevelopmentAccountName, DevelopmentAccountKey, testNow)
			a := r.Header.Get("Authorization")
			r.Header.Set("Authorization", a[:len(a)-5]+"AAAA=")
		},
		"signed for another path": func(r *http.Request) {
			signLite(r, DevelopmentAccountName, DevelopmentAccountKey, testNow)
			r.RequestURI = "/devstoreaccount1/Other"
			r.URL.Path = "/devstoreaccount1/Other"
		},
		"date 16 minutes late": func(r *http.Request) {
			signLite(r, DevelopmentAccountName, DevelopmentAccountKey, testNow.Add(-16*time.Minute))
		},
		"date 16 minutes early": func(r *http.Request) {
			signLite(r, DevelopmentAccountName, DevelopmentAccountKey, testNow.Add(16*time.Minute))
		},
		"unknown account": func(r *http.Request) {
			signLite(r, "someoneelse", DevelopmentAccountKey, testNow)
		},
		"anonymous":      func(r *http.Request) {},
		"unknown scheme": func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc") },
		"malformed":      func(r *http.Request) { r.Header.Set("Authorization", "SharedKeyLite devstoreaccount1") },
		"SAS garbage":    func(r *http.Request) { r.URL.RawQuery = "sig=%%%"; r.RequestURI += "?sig=!!" },
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			wantError(t, insert(mod), 403, "AuthenticationFailed")
		})
	}
	if n := h.count("Auth"); n != 0 {
		t.Fatalf("refused requests stored %d entities", n)
	}
	// The limits of the skew, and the other ways to sign, are accepted.
	ok := map[string]func(*http.Request){
		"date 14 minutes late": func(r *http.Request) {
			signLite(r, DevelopmentAccountName, DevelopmentAccountKey, testNow.Add(-14*time.Minute))
		},
		"Date header instead of x-ms-date": func(r *http.Request) {
			signLite(r, DevelopmentAccountName, DevelopmentAccountKey, testNow)
			r.Header.Set("Date", r.Header.Get("x-ms-date"))
			r.Header.Del("x-ms-date")
		},
		"SharedKey": func(r *http.Request) {
			date := testNow.Format(http.TimeFormat)
			r.Header.Set("x-ms-date", date)
			sts := "POST\n\napplication/json\n" + date + "\n/devstoreaccount1/devstoreaccount1/Auth"
			r.Header.Set("Authorization", "SharedKey devstoreaccount1:"+hmacBase64(DevelopmentAccountKey, sts))
		},
		"account once in the resource": func(r *http.Request) {
			date := testNow.Format(http.TimeFormat)
			r.Header.Set("x-ms-date", date)
			r.Header.Set("Authorization", "SharedKeyLite devstoreaccount1:"+hmacBase64(DevelopmentAccountKey, date+"\n/devstoreaccount1/Auth"))
		},
	}
	for name, mod := range ok {
		t.Run(name, func(t *testing.T) {
			mustStatus(t, insert(func(r *http.Request) {
				body := `{"PartitionKey":"p","RowKey":"` + name + `"}`
				r.Body, r.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
				mod(r)
			}), 201)
		})
	}
	if n := h.count("Auth"); n != len(ok) {
		t.Fatalf("%d entities, want %d", n, len(ok))
	}
}

func TestSASFailures(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Auth")
	h.createTable("Other")
	h.insert("Auth", `{"PartitionKey":"b","RowKey":"1"}`)
	hour := testNow.Add(time.Hour)
	sasDo := func(method, target, sas, body string) *http.Response {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		return h.do(request{method: method, target: target + sep + sas, unsigned: true,
			header: map[string]string{"Content-Type": "application/json", "If-Match": "*"}, body: body})
	}
	entity := `{"PartitionKey":"b","RowKey":"2"}`
	for _, tc := range []struct {
		name, sas, code string
	}{
		{"expired", tableSAS("Auth", "raud", time.Time{}, testNow.Add(-time.Second), [4]string{}, nil), "AuthenticationFailed"},
		{"not yet valid", tableSAS("Auth", "raud", testNow.Add(time.Minute), hour, [4]string{}, nil), "AuthenticationFailed"},
		{"tampered permissions", tableSAS("Auth", "r", time.Time{}, hour, [4]string{}, func(q url.Values) { q.Set("sp", "raud") }), "AuthenticationFailed"},
		{"tampered expiry", tableSAS("Auth", "raud", time.Time{}, hour, [4]string{}, func(q url.Values) { q.Set("se", "2099-01-01T00:00:00Z") }), "AuthenticationFailed"},
		{"stored policy", tableSAS("Auth", "raud", time.Time{}, hour, [4]string{}, func(q url.Values) { q.Set("si", "policy") }), "AuthenticationFailed"},
		{"without add permission", tableSAS("Auth", "rud", time.Time{}, hour, [4]string{}, nil), "AuthorizationPermissionMismatch"},
		{"for another table", tableSAS("Other", "raud", time.Time{}, hour, [4]string{}, nil), "AuthorizationFailure"},
		{"outside its key range", tableSAS("Auth", "raud", time.Time{}, hour, [4]string{"c", "", "d", ""}, nil), "AuthorizationFailure"},
		{"account SAS for blobs", accountSAS("b", "o", "a", hour), "AuthorizationServiceMismatch"},
		{"account SAS for containers", accountSAS("t", "c", "a", hour), "AuthorizationResourceTypeMismatch"},
		{"account SAS without add", accountSAS("t", "o", "r", hour), "AuthorizationPermissionMismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, sasDo("POST", "/devstoreaccount1/Auth", tc.sas, entity), 403, tc.code)
		})
	}
	// A batch is refused whole when the SAS does not allow one of its operations.
	readAdd := tableSAS("Auth", "ra", time.Time{}, hour, [4]string{}, nil)
	batch := changeSetBody(
		insertOp("Auth", `{"PartitionKey":"b","RowKey":"3"}`, true),
		subRequestText("DELETE", "Auth(PartitionKey='b',RowKey='1')", map[string]string{"If-Match": "*"}, ""),
	)
	resp := h.do(request{method: "POST", target: "/devstoreaccount1/$batch?" + readAdd, unsigned: true,
		header: map[string]string{"Content-Type": "multipart/mixed; boundary=batch_B"}, body: batch})
	wantError(t, resp, 403, "AuthorizationPermissionMismatch")
	// Table operations are not a table SAS's.
	wantError(t, sasDo("GET", "/devstoreaccount1/Tables", readAdd, ""), 403, "AuthorizationFailure")
	if n := h.count("Auth"); n != 1 {
		t.Fatalf("refused requests left %d entities, want 1", n)
	}

	// What the SASes do allow.
	full := tableSAS("Auth", "raud", testNow.Add(-time.Minute), hour, [4]string{}, nil)
	mustStatus(t, sasDo("POST", "/devstoreaccount1/Auth", full, entity), 201)
	mustStatus(t, sasDo("GET", "/devstoreaccount1/Auth(PartitionKey='b',RowKey='2')", full, ""), 200)
	mustStatus(t, sasDo("DELETE", "/devstoreaccount1/Auth(PartitionKey='b',RowKey='2')", full, ""), 204)
	acct := accountSAS("bt", "sco", "rwdlacu", hour)
	mustStatus(t, sasDo("GET", "/devstoreaccount1/Tables", acct, ""), 200)
	mustStatus(t, sasDo("POST", "/devstoreaccount1/Auth", acct, `{"PartitionKey":"c","RowKey":"1"}`), 201)
	mustStatus(t, sasDo("POST", "/devstoreaccount1/Auth", acct, `{"PartitionKey":"a","RowKey":"1"}`), 201)
	// A key range limits what a query sees, and which entities may be written.
	ranged := tableSAS("Auth", "ra", time.Time{}, hour, [4]string{"b", "", "b", ""}, nil)
	got := mustStatus(t, sasDo("GET", "/devstoreaccount1/Auth()?$select=PartitionKey", ranged, ""), 200)
	if strings.Count(got, `"PartitionKey":"b"`) != 1 || strings.Contains(got, `"PartitionKey":"a"`) || strings.Contains(got, `"PartitionKey":"c"`) {
		t.Fatalf("ranged query returned %s", got)
	}
	wantError(t, sasDo("GET", "/devstoreaccount1/Auth()?$filter=PartitionKey%20eq", ranged, ""), 400, "InvalidInput")
	mustStatus(t, sasDo("POST", "/devstoreaccount1/Auth", ranged, `{"PartitionKey":"b","RowKey":"9"}`), 201)
}
