package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
)

// The service's answers that SDK users met as failures against earlier Tabula, each pinned
// byte for byte by a golden file. What each answer follows is named beside the code that
// gives it (service.go, cors.go, acl.go, version.go, auth.go, handlers.go).

const otherAccount, otherKey = "other", "b3RoZXJrZXlvdGhlcmtleW90aGVya2V5b3RoZXJrZXk="

// newAccountsHarness is a harness serving the development account and "other".
func newAccountsHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, nil)
	s, err := New(h.db, &Options{Clock: func() time.Time { return testNow },
		Accounts: []Account{DevelopmentAccount(), {Name: otherAccount, Keys: []string{otherKey}}}})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	s.newID = func() string { return fmt.Sprintf("00000000-0000-0000-0000-%012d", n.Add(1)) }
	h.s = s
	return h
}

// doAs serves a request signed with another account's key.
func (h *harness) doAs(account, key string, r request) *http.Response {
	h.t.Helper()
	req := httptest.NewRequest(r.method, r.target, strings.NewReader(r.body))
	req.Host = "127.0.0.1:10002"
	req.Header.Set("x-ms-version", "2019-02-02")
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	signLite(req, account, key, testNow)
	rec := httptest.NewRecorder()
	h.s.ServeHTTP(rec, req)
	return rec.Result()
}

func TestGoldenErrorCodeHeader(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Codes")
	// HEAD has no body: the header is where the code is.
	resp := h.do(request{method: "HEAD", target: "/devstoreaccount1/Codes(PartitionKey='p',RowKey='r')"})
	golden(t, "error_code_head", dump(t, resp))
	resp = h.do(request{method: "POST", target: "/devstoreaccount1/Tables", header: map[string]string{"Content-Type": "application/json"},
		body: `{"TableName":"Codes"}`})
	golden(t, "error_code_conflict", dump(t, resp))
}

// If-Match takes * or a weak entity tag. Azure answers 412 for any weak form that is not
// the entity's current ETag, whatever its case (W/ or w/) and content, and 400 for a strong
// or malformed one: Azure/Azurite#1229 reports Azure's answers, and Azurite's fix
// (Azure/Azurite#1231) tests each form below against them.
func TestGoldenIfMatch(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Match")
	h.insert("Match", `{"PartitionKey":"p","RowKey":"r","N":1}`)
	do := func(method, ifMatch string) *http.Response {
		return h.do(request{method: method, target: "/devstoreaccount1/Match(PartitionKey='p',RowKey='r')",
			header: map[string]string{"Content-Type": "application/json", "If-Match": ifMatch}, body: `{"N":2}`})
	}
	// A weak tag, well formed but not the current ETag: the condition fails.
	golden(t, "ifmatch_wrong_412", dump(t, do("PUT", `W/"wrong"`)))
	golden(t, "ifmatch_lowercase_weak_412", dump(t, do("PUT", `w/"wrong"`)))
	for _, etag := range []string{`W/"wrong"`, `W/"datetime'2015-01-01T23%3A14%3A33.4980000Z'"`,
		`w/"wrong"`, `w/"datetime'2015-01-01T23%3A14%3A33.4980000Z'"`} {
		for _, method := range []string{"PUT", "MERGE", "DELETE"} {
			t.Run(method+" "+etag, func(t *testing.T) { wantError(t, do(method, etag), 412, "UpdateConditionNotSatisfied") })
		}
	}
	// A strong tag, or no tag at all: the request is malformed.
	golden(t, "ifmatch_strong_400", dump(t, do("PUT", `"wrong"`)))
	golden(t, "ifmatch_not_etag_400", dump(t, do("PUT", `wrong`)))
	for _, etag := range []string{`"wrong"`, `"datetime'2015-01-01T23%3A14%3A33.4980000Z'"`, `wrong`,
		`datetime'2015-01-01T23%3A14%3A33.4980000Z'`, `"`, `W/`, `W/wrong`, `W/W/"wrong"`} {
		for _, method := range []string{"PUT", "MERGE", "DELETE"} {
			t.Run(method+" "+etag, func(t *testing.T) { wantError(t, do(method, etag), 400, "InvalidInput") })
		}
	}
	// The current ETag matches in either case of its W.
	current := tabula.ETag(headerValue(h.do(request{method: "GET", target: "/devstoreaccount1/Match(PartitionKey='p',RowKey='r')"}).Header, "ETag"))
	lower := "w" + string(current)[1:]
	resp := do("MERGE", lower)
	mustStatus(t, resp, 204)
	// On a missing entity any weak If-Match is 404.
	wantError(t, h.do(request{method: "PUT", target: "/devstoreaccount1/Match(PartitionKey='p',RowKey='nope')",
		header: map[string]string{"Content-Type": "application/json", "If-Match": `W/"wrong"`}, body: `{}`}), 404, "ResourceNotFound")
	if n := h.count("Match"); n != 1 {
		t.Fatalf("%d entities", n)
	}
}

// Listing tables over a range stops with the range: the second page of two carries no
// continuation, though a table sorts after the range. The service's answer to exactly these
// requests is recorded in the aztables module's TestQueryTable_storage (its v1.0.0
// testdata/recordings): zzza0…zzza3 and zzzb4, pages of two, the second without
// x-ms-continuation-NextTableName.
func TestGoldenQueryTablesRange(t *testing.T) {
	h := newHarness(t, nil)
	for _, name := range []string{"zzza0", "zzza1", "zzza2", "zzza3", "zzzb4"} {
		h.createTable(name)
	}
	const list = "/devstoreaccount1/Tables?%24filter=TableName+ge+%27zzza%27+and+TableName+lt+%27zzzb%27&%24format=application%2Fjson%3Bodata%3Dminimalmetadata&%24top=2"
	first := h.do(request{method: "GET", target: list})
	golden(t, "tables_range_first_page", dump(t, first))
	next := headerValue(first.Header, "x-ms-continuation-NextTableName")
	if next == "" {
		t.Fatal("the first page of two has no continuation")
	}
	golden(t, "tables_range_last_page", dump(t, h.do(request{method: "GET", target: list + "&NextTableName=" + url.QueryEscape(next)})))
}

func TestGoldenVersion(t *testing.T) {
	h := newHarness(t, nil)
	resp := h.do(request{method: "GET", target: "/devstoreaccount1/Tables", header: map[string]string{"x-ms-version": "2099-01-01"}})
	golden(t, "version_unknown_400", dump(t, resp))
	for _, v := range []string{"2019-02-02", "2017-07-29", "2025-11-05"} {
		mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Tables", header: map[string]string{"x-ms-version": v}}), 200)
	}
	// A SAS request runs at its sv; the header does not matter.
	q := accountSAS("t", "sco", "rl", testNow.Add(time.Hour))
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Tables?" + q, unsigned: true,
		header: map[string]string{"x-ms-version": "2099-01-01"}}), 200)
}

func TestGoldenRepeatedSASParameter(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Repeat")
	good := tableSAS("Repeat", "r", time.Time{}, testNow.Add(time.Hour), [4]string{}, nil)
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Repeat()?" + good, unsigned: true}), 200)
	q, _ := url.ParseQuery(good)
	resp := h.do(request{method: "GET", target: "/devstoreaccount1/Repeat()?" + good + "&sig=" + url.QueryEscape(q.Get("sig")), unsigned: true})
	golden(t, "sas_repeated_sig_403", dump(t, resp))
	for _, name := range []string{"sp", "se", "tn", "sv"} {
		wantError(t, h.do(request{method: "GET", target: "/devstoreaccount1/Repeat()?" + good + "&" + name + "=" + url.QueryEscape(q.Get(name)),
			unsigned: true}), 403, "AuthenticationFailed")
	}
}

func TestGoldenTopZero(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Top")
	h.insert("Top", `{"PartitionKey":"p","RowKey":"r"}`)
	golden(t, "top_zero_entities", dump(t, h.do(request{method: "GET", target: "/devstoreaccount1/Top()?$top=0"})))
	golden(t, "top_zero_tables", dump(t, h.do(request{method: "GET", target: "/devstoreaccount1/Tables?$top=0"})))
	// It is still a query: a missing table or a bad filter fails as without $top.
	wantError(t, h.do(request{method: "GET", target: "/devstoreaccount1/Nope()?$top=0"}), 404, "TableNotFound")
	wantError(t, h.do(request{method: "GET", target: "/devstoreaccount1/Top()?$top=0&$filter=N%20eq"}), 400, "InvalidInput")
}

func TestGoldenLooseDateTime(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Dates")
	resp := h.do(request{method: "POST", target: "/devstoreaccount1/Dates", header: map[string]string{"Content-Type": "application/json"},
		body: `{"PartitionKey":"p","RowKey":"r","D@odata.type":"Edm.DateTime","D":"0000-10-01T0:00:00,10"}`})
	golden(t, "datetime_loose_400", dump(t, resp))
	if n := h.count("Dates"); n != 0 {
		t.Fatalf("%d entities stored", n)
	}
}

// One account cannot see, read, write or delete another's tables, by key or by SAS, and
// both may hold a table of the same name.
func TestAccountsAreIsolated(t *testing.T) {
	h := newAccountsHarness(t)
	h.createTable("Mine")
	h.insert("Mine", `{"PartitionKey":"p","RowKey":"r"}`)
	other := func(method, target, body string, header map[string]string) *http.Response {
		if header == nil {
			header = map[string]string{}
		}
		if body != "" {
			header["Content-Type"] = "application/json"
		}
		return h.doAs(otherAccount, otherKey, request{method: method, target: "/" + otherAccount + target, body: body, header: header})
	}
	list := mustStatus(t, other("GET", "/Tables", "", nil), 200)
	if strings.Contains(list, "Mine") {
		t.Fatalf("other lists %s", list)
	}
	golden(t, "account_isolated_get", dump(t, other("GET", "/Mine(PartitionKey='p',RowKey='r')", "", nil)))
	wantError(t, other("GET", "/Mine()", "", nil), 404, "TableNotFound")
	wantError(t, other("GET", "/Tables('Mine')", "", nil), 404, "ResourceNotFound")
	wantError(t, other("POST", "/Mine", `{"PartitionKey":"p","RowKey":"x"}`, nil), 404, "TableNotFound")
	wantError(t, other("PUT", "/Mine(PartitionKey='p',RowKey='r')", `{}`, nil), 404, "TableNotFound")
	wantError(t, other("DELETE", "/Mine(PartitionKey='p',RowKey='r')", "", map[string]string{"If-Match": "*"}), 404, "TableNotFound")
	wantError(t, other("DELETE", "/Tables('Mine')", "", nil), 404, "ResourceNotFound")
	// The development account's key does not sign for the other account.
	wantError(t, h.do(request{method: "GET", target: "/" + otherAccount + "/Tables"}), 403, "AuthenticationFailed")

	// A SAS of the development account used on the other account's URL fails its signature,
	// and one of the other account cannot reach the development account's table.
	sas := tableSAS("Mine", "raud", time.Time{}, testNow.Add(time.Hour), [4]string{}, nil)
	wantError(t, h.do(request{method: "GET", target: "/" + otherAccount + "/Mine()?" + sas, unsigned: true}), 403, "AuthenticationFailed")
	otherSAS := accountSASFor(otherAccount, otherKey, "t", "sco", "rwdlacu", testNow.Add(time.Hour))
	wantError(t, h.do(request{method: "GET", target: "/" + otherAccount + "/Mine()?" + otherSAS, unsigned: true}), 404, "TableNotFound")

	// Both may create a table of the same name; each sees its own.
	mustStatus(t, other("POST", "/Tables", `{"TableName":"MINE"}`, nil), 201)
	mustStatus(t, other("POST", "/MINE", `{"PartitionKey":"p","RowKey":"theirs"}`, map[string]string{"Prefer": "return-no-content"}), 204)
	mine := mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Mine()"}), 200)
	theirs := mustStatus(t, other("GET", "/mine()", "", nil), 200)
	if strings.Contains(mine, "theirs") || !strings.Contains(theirs, "theirs") || strings.Contains(theirs, `"RowKey":"r"`) {
		t.Fatalf("mine %s; theirs %s", mine, theirs)
	}
	mustStatus(t, other("DELETE", "/Tables('MINE')", "", nil), 204)
	if n := h.count("Mine"); n != 1 {
		t.Fatalf("the development account's table holds %d entities", n)
	}
	// The first account's tables are the DB's own; the other's live in its namespace.
	if _, err := h.db.Namespace(otherAccount).Table("MINE").Get(t.Context(), "p", "theirs"); err == nil {
		t.Fatal("the deleted table of the other account still answers")
	}
}

func accountSASFor(account, key, services, resourceTypes, perms string, expiry time.Time) string {
	se := expiry.UTC().Format("2006-01-02T15:04:05Z")
	sts := strings.Join([]string{account, perms, services, resourceTypes, "", se, "", "", "2019-02-02", ""}, "\n")
	q := url.Values{"sv": {"2019-02-02"}, "ss": {services}, "srt": {resourceTypes}, "sp": {perms}, "se": {se},
		"sig": {hmacBase64(key, sts)}}
	return q.Encode()
}

const corsProperties1 = `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties>` +
	`<Logging><Version>1.0</Version><Delete>true</Delete><Read>false</Read><Write>true</Write><RetentionPolicy><Enabled>true</Enabled><Days>30</Days></RetentionPolicy></Logging>` +
	`<Cors><CorsRule><AllowedOrigins>https://app.example, https://other.example</AllowedOrigins><AllowedMethods>GET,put,MERGE</AllowedMethods>` +
	`<MaxAgeInSeconds>600</MaxAgeInSeconds><ExposedHeaders>x-ms-*</ExposedHeaders><AllowedHeaders>x-ms-*,content-type</AllowedHeaders></CorsRule>` +
	`<CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>5</MaxAgeInSeconds><ExposedHeaders></ExposedHeaders><AllowedHeaders></AllowedHeaders></CorsRule>` +
	`</Cors></StorageServiceProperties>`

func TestGoldenServiceProperties(t *testing.T) {
	h := newAccountsHarness(t)
	get := func() *http.Response {
		return h.do(request{method: "GET", target: "/devstoreaccount1/?restype=service&comp=properties"})
	}
	put := func(body string) *http.Response {
		return h.do(request{method: "PUT", target: "/devstoreaccount1/?restype=service&comp=properties",
			header: map[string]string{"Content-Type": "application/xml"}, body: body})
	}
	golden(t, "service_properties_default", dump(t, get()))
	golden(t, "service_properties_set", dump(t, put(corsProperties1)))
	golden(t, "service_properties_after_set", dump(t, get()))
	// An element left out keeps its value: metrics change, the CORS rules stay.
	mustStatus(t, put(`<StorageServiceProperties><MinuteMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>false</IncludeAPIs>`+
		`<RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics></StorageServiceProperties>`), 202)
	after := mustStatus(t, get(), 200)
	if !strings.Contains(after, "<AllowedOrigins>*</AllowedOrigins>") || !strings.Contains(after, "<MinuteMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>false</IncludeAPIs>") {
		t.Fatalf("after a partial Set: %s", after)
	}
	// Each account has its own.
	other := mustStatus(t, h.doAs(otherAccount, otherKey, request{method: "GET", target: "/" + otherAccount + "/?restype=service&comp=properties"}), 200)
	if strings.Contains(other, "CorsRule") {
		t.Fatalf("the other account has the development account's rules: %s", other)
	}

	rule := `<CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>1</MaxAgeInSeconds></CorsRule>`
	golden(t, "service_properties_six_rules_400", dump(t, put(`<StorageServiceProperties><Cors>`+strings.Repeat(rule, 6)+`</Cors></StorageServiceProperties>`)))
	// Every validation failure of the document is InvalidXmlDocument, as the service answers a
	// retention of 366 days: the aztables module's recorded TestRetentionTooLong (its v1.0.0
	// testdata/recordings), whose body this is. The answer is the XML error document recorded
	// there, with its Content-Type and Content-Length.
	golden(t, "service_properties_retention_366_400", dump(t, put(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<StorageServiceProperties><MinuteMetrics><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>366</Days></RetentionPolicy><Version>1.0</Version></MinuteMetrics></StorageServiceProperties>`)))
	golden(t, "service_properties_retention_0_400", dump(t, put(`<StorageServiceProperties><HourMetrics><Version>1.0</Version><Enabled>false</Enabled>`+
		`<RetentionPolicy><Enabled>true</Enabled><Days>0</Days></RetentionPolicy></HourMetrics></StorageServiceProperties>`)))
	for _, bad := range []string{
		`<StorageServiceProperties><Logging><Version>1.0</Version><RetentionPolicy><Enabled>true</Enabled><Days>366</Days></RetentionPolicy></Logging></StorageServiceProperties>`,
		`<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>TRACE</AllowedMethods><MaxAgeInSeconds>1</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>`,
		`<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>` + strings.Repeat("o", 257) + `</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>1</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>`,
		`<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>1</MaxAgeInSeconds><AllowedHeaders>a*,b*,c*</AllowedHeaders></CorsRule></Cors></StorageServiceProperties>`,
		`<StorageServiceProperties><HourMetrics><Version>1.0</Version><Enabled>true</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics></StorageServiceProperties>`,
		`<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>` + strings.Repeat("o,", 65) + `</AllowedOrigins><AllowedMethods>GET</AllowedMethods><MaxAgeInSeconds>1</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>`,
	} {
		wantError(t, put(bad), 400, "InvalidXmlDocument")
	}
	wantError(t, put(`<StorageServiceProperties><Cors>`), 400, "InvalidXmlDocument")
	wantError(t, put(`not xml`), 400, "InvalidXmlDocument")
	// Refused Sets changed nothing.
	if got := mustStatus(t, get(), 200); got != after {
		t.Fatalf("a refused Set changed the properties:\n%s\n%s", after, got)
	}
	// A table SAS cannot reach the service; an account SAS with srt=s can read it.
	sas := tableSAS("Any", "raud", time.Time{}, testNow.Add(time.Hour), [4]string{}, nil)
	wantError(t, h.do(request{method: "GET", target: "/devstoreaccount1/?restype=service&comp=properties&" + sas, unsigned: true}), 403, "AuthorizationFailure")
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/?restype=service&comp=properties&" + accountSAS("t", "s", "r", testNow.Add(time.Hour)), unsigned: true}), 200)
	wantError(t, h.do(request{method: "PUT", target: "/devstoreaccount1/?restype=service&comp=properties&" + accountSAS("t", "s", "r", testNow.Add(time.Hour)),
		unsigned: true, body: corsProperties1}), 403, "AuthorizationPermissionMismatch")
}

func TestGoldenSecondary(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Geo")
	h.insert("Geo", `{"PartitionKey":"p","RowKey":"r"}`)
	golden(t, "stats_secondary", dump(t, h.do(request{method: "GET", target: "/devstoreaccount1-secondary/?restype=service&comp=stats"})))
	golden(t, "stats_primary_400", dump(t, h.do(request{method: "GET", target: "/devstoreaccount1/?restype=service&comp=stats"})))
	golden(t, "secondary_read", dump(t, h.do(request{method: "GET", target: "/devstoreaccount1-secondary/Geo(PartitionKey='p',RowKey='r')"})))
	golden(t, "secondary_write_403", dump(t, h.do(request{method: "POST", target: "/devstoreaccount1-secondary/Geo",
		header: map[string]string{"Content-Type": "application/json"}, body: `{"PartitionKey":"p","RowKey":"s"}`})))
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1-secondary/Tables"}), 200)
	wantError(t, h.do(request{method: "DELETE", target: "/devstoreaccount1-secondary/Tables('Geo')"}), 403, "AuthorizationFailure")
	wantError(t, h.do(request{method: "PUT", target: "/devstoreaccount1-secondary/?restype=service&comp=properties", body: corsProperties1}), 403, "AuthorizationFailure")
	// A SAS signs the primary account's resource and works on the secondary.
	sas := tableSAS("Geo", "r", time.Time{}, testNow.Add(time.Hour), [4]string{}, nil)
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1-secondary/Geo()?" + sas, unsigned: true}), 200)
	if n := h.count("Geo"); n != 1 {
		t.Fatalf("%d entities", n)
	}
	// An unknown account has no secondary.
	wantError(t, h.do(request{method: "GET", target: "/nobody-secondary/Tables"}), 403, "AuthenticationFailed")
}

// The SDKs' own Get Table Service Stats from the connection string tabula serve prints: the
// Python SDK (azure-data-tables 12.4.2, and az storage table stats through it) puts the
// secondary's host and path, 127.0.0.1:port/devstoreaccount1-secondary, in front of the primary
// URL it has already signed. This is its request as captured, headers and all. The service's
// canonical resource names the account, never its -secondary (REST docs: "Authorize with
// Shared Key"), and Azurite accepts a secondary request signed for the primary (its
// TableSharedKeyAuthenticator); a signature still covers only its own resource.
func TestGoldenSecondarySignedForPrimary(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Geo")
	h.insert("Geo", `{"PartitionKey":"p","RowKey":"r"}`)
	date := testNow.UTC().Format(http.TimeFormat)
	signedFor := func(method, target, canonical string, header map[string]string) *http.Response {
		hdr := map[string]string{"x-ms-date": date, "Date": date,
			"Authorization": "SharedKey devstoreaccount1:" + hmacBase64(DevelopmentAccountKey, method+"\n\n"+header["Content-Type"]+"\n"+date+"\n"+canonical)}
		for k, v := range header {
			hdr[k] = v
		}
		return h.do(request{method: method, target: target, header: hdr, unsigned: true})
	}
	golden(t, "stats_python_sdk", dump(t, signedFor("GET", "/devstoreaccount1-secondary/devstoreaccount1/?restype=service&comp=stats",
		"/devstoreaccount1/devstoreaccount1/?comp=stats", map[string]string{"Accept": "application/xml"})))
	// The same for any read at the secondary, in either form.
	mustStatus(t, signedFor("GET", "/devstoreaccount1-secondary/Geo(PartitionKey='p',RowKey='r')",
		"/devstoreaccount1/devstoreaccount1/Geo(PartitionKey='p',RowKey='r')", nil), 200)
	mustStatus(t, signedFor("GET", "/devstoreaccount1-secondary/devstoreaccount1/Geo(PartitionKey='p',RowKey='r')",
		"/devstoreaccount1/devstoreaccount1/Geo(PartitionKey='p',RowKey='r')", nil), 200)
	// A signature for another resource, or for the secondary's stats sent to the primary, fails.
	wantError(t, signedFor("GET", "/devstoreaccount1-secondary/Geo(PartitionKey='p',RowKey='r')",
		"/devstoreaccount1/devstoreaccount1/Other(PartitionKey='p',RowKey='r')", nil), 403, "AuthenticationFailed")
	wantError(t, signedFor("GET", "/devstoreaccount1-secondary/devstoreaccount1/?restype=service&comp=stats",
		"/devstoreaccount1/devstoreaccount1/?comp=properties", nil), 403, "AuthenticationFailed")
	wantError(t, signedFor("GET", "/devstoreaccount1/?restype=service&comp=stats",
		"/devstoreaccount1/devstoreaccount1-secondary/devstoreaccount1/?comp=stats", nil), 403, "AuthenticationFailed")
	// The secondary stays read-only.
	wantError(t, signedFor("POST", "/devstoreaccount1-secondary/devstoreaccount1/Geo", "/devstoreaccount1/devstoreaccount1/Geo",
		map[string]string{"Content-Type": "application/json"}), 403, "AuthorizationFailure")
	// A table named as the account is still a table at the secondary.
	h.createTable("devstoreaccount1")
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1-secondary/devstoreaccount1()"}), 200)
	if n := h.count("Geo"); n != 1 {
		t.Fatalf("%d entities", n)
	}
}

// Errors a setting causes name, over the wire, what set it: the tabula serve flag and the
// management API field, not the Go option (tabula.Options) an HTTP client never sees; the Go
// API's own errors keep naming the option.
func TestGoldenSettingsOverWire(t *testing.T) {
	const insert = `{"PartitionKey":"p","RowKey":"%s"}`
	post := func(h *harness, rk string) *http.Response {
		return h.do(request{method: "POST", target: "/devstoreaccount1/Set", header: map[string]string{"Content-Type": "application/json"},
			body: fmt.Sprintf(insert, rk)})
	}
	noOption := func(t *testing.T, resp *http.Response) string {
		t.Helper()
		got := dump(t, resp)
		if strings.Contains(got, "Options.") {
			t.Errorf("a wire error names a Go option:\n%s", got)
		}
		return got
	}

	h := newHarness(t, &tabula.Options{ForbidFullScans: true})
	h.createTable("Set")
	golden(t, "full_scan_forbidden_400", noOption(t, h.do(request{method: "GET", target: "/devstoreaccount1/Set()?$filter=N%20eq%201"})))
	_, err := h.db.Table("Set").Query(t.Context(), tabula.Query{Filter: "N eq 1"})
	var te *tabula.Error
	require.ErrorAs(t, err, &te)
	assert.Contains(t, te.Message, "Options.ForbidFullScans")

	h = newHarness(t, &tabula.Options{Limits: partition.Limits{Mode: partition.LimitEnforce, PartitionRate: 1, PartitionBurst: 1}})
	h.createTable("Set")
	mustStatus(t, post(h, "a"), 201)
	golden(t, "server_busy_limits_503", noOption(t, post(h, "b")))
	noOption(t, h.do(request{method: "POST", target: "/devstoreaccount1/$batch",
		header: map[string]string{"Content-Type": "multipart/mixed; boundary=batch_B"},
		body:   changeSetBody(insertOp("Set", `{"PartitionKey":"p","RowKey":"c"}`, true))}))
	_, err = h.db.Table("Set").Insert(t.Context(), tabula.Entity{PartitionKey: "p", RowKey: "c"})
	require.ErrorIs(t, err, tabula.ErrServerBusy)
	assert.Contains(t, err.Error(), "Options.Limits")

	h = newHarness(t, nil)
	h.createTable("Set")
	h.db.SetFaults(partition.Faults{Seed: 1, Timeout: 1})
	golden(t, "injected_timeout_500", noOption(t, post(h, "a")))
	h.db.SetFaults(partition.Faults{Seed: 1, ServerBusy: 1})
	noOption(t, post(h, "a"))

	h = newHarness(t, &tabula.Options{TableDeleteDelay: tabula.ServiceTableDeleteDelay})
	h.createTable("Set")
	mustStatus(t, h.do(request{method: "DELETE", target: "/devstoreaccount1/Tables('Set')"}), 204)
	golden(t, "table_being_deleted_409", noOption(t, h.do(request{method: "POST", target: "/devstoreaccount1/Tables",
		header: map[string]string{"Content-Type": "application/json"}, body: `{"TableName":"Set"}`})))
	golden(t, "batch_table_being_deleted", noOption(t, h.do(request{method: "POST", target: "/devstoreaccount1/$batch",
		header: map[string]string{"Content-Type": "multipart/mixed; boundary=batch_B"},
		body:   changeSetBody(insertOp("Set", `{"PartitionKey":"p","RowKey":"c"}`, true))})))
	_, err = h.db.CreateTable(t.Context(), "Set")
	require.ErrorIs(t, err, tabula.ErrTableBeingDeleted)
	assert.Contains(t, err.Error(), "Options.TableDeleteDelay")
}

func TestGoldenCORS(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Cors")
	preflight := func(origin, method, headers string) *http.Response {
		hdr := map[string]string{}
		for k, v := range map[string]string{"Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers} {
			if v != "" {
				hdr[k] = v
			}
		}
		return h.do(request{method: "OPTIONS", target: "/devstoreaccount1/Cors()", header: hdr, unsigned: true})
	}
	// No rules yet: every preflight fails.
	golden(t, "cors_preflight_no_rules_403", dump(t, preflight("https://app.example", "GET", "")))
	mustStatus(t, h.do(request{method: "PUT", target: "/devstoreaccount1/?restype=service&comp=properties", body: corsProperties1}), 202)
	golden(t, "cors_preflight_200", dump(t, preflight("https://APP.example", "PUT", "x-ms-version,Content-Type")))
	golden(t, "cors_preflight_header_not_allowed_403", dump(t, preflight("https://app.example", "PUT", "x-custom")))
	golden(t, "cors_preflight_no_origin_400", dump(t, preflight("", "PUT", "")))
	wantError(t, preflight("https://app.example", "", ""), 400, "InvalidHeaderValue")
	wantError(t, preflight("https://evil.example", "PUT", ""), 403, "CorsPreflightFailure")
	mustStatus(t, preflight("https://evil.example", "GET", ""), 200) // the second rule allows * for GET

	// Actual requests: a matching origin gets the headers, with credentials and Vary;
	// the wildcard rule answers *; an origin no rule allows gets only Vary.
	golden(t, "cors_actual_request", dump(t, h.do(request{method: "GET", target: "/devstoreaccount1/Cors()",
		header: map[string]string{"Origin": "https://app.example"}})))
	// A failure carries them too, so that the browser lets the page read it.
	denied := h.do(request{method: "GET", target: "/devstoreaccount1/Cors()", unsigned: true, header: map[string]string{"Origin": "https://app.example"}})
	wantError(t, denied, 403, "AuthenticationFailed")
	if denied.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || !strings.Contains(denied.Header.Get("Access-Control-Expose-Headers"), "x-ms-error-code") {
		t.Fatalf("a failed request from an allowed origin got %v", denied.Header)
	}
	wildcard := h.do(request{method: "GET", target: "/devstoreaccount1/Cors()", header: map[string]string{"Origin": "https://evil.example"}})
	mustStatus(t, wildcard, 200)
	if got := wildcard.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Fatalf("wildcard rule: Access-Control-Allow-Origin %q", got)
	}
	refused := h.do(request{method: "DELETE", target: "/devstoreaccount1/Cors(PartitionKey='p',RowKey='r')",
		header: map[string]string{"Origin": "https://evil.example", "If-Match": "*"}})
	wantError(t, refused, 404, "ResourceNotFound")
	if refused.Header.Get("Access-Control-Allow-Origin") != "" || refused.Header.Get("Vary") != "Origin" {
		t.Fatalf("unmatched origin got %v", refused.Header)
	}
}

func TestGoldenTableACL(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Acl")
	h.insert("Acl", `{"PartitionKey":"p","RowKey":"r"}`)
	setACL := func(body string) *http.Response {
		return h.do(request{method: "PUT", target: "/devstoreaccount1/Acl?comp=acl", header: map[string]string{"Content-Type": "application/xml"}, body: body})
	}
	golden(t, "acl_empty", dump(t, h.do(request{method: "GET", target: "/devstoreaccount1/Acl?comp=acl"})))
	acl := `<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers>` +
		`<SignedIdentifier><Id>readers</Id><AccessPolicy><Start>2024-05-06T00:00:00Z</Start><Expiry>2024-05-07T00:00:00.5Z</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier>` +
		`<SignedIdentifier><Id>open</Id><AccessPolicy><Permission>dura</Permission></AccessPolicy></SignedIdentifier>` +
		`</SignedIdentifiers>`
	golden(t, "acl_set", dump(t, setACL(acl)))
	golden(t, "acl_get", dump(t, h.do(request{method: "GET", target: "/devstoreaccount1/Acl?comp=acl"})))

	ident := `<SignedIdentifier><Id>x%d</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier>`
	six := ""
	for i := range 6 {
		six += fmt.Sprintf(ident, i)
	}
	// A policy without an Id, and every other invalid identifier, is InvalidXmlDocument, as the
	// service answers the aztables module's recorded TestSetInvalidAccessPolicy (its v1.0.0
	// testdata/recordings), whose body this is; so is a sixth identifier
	// (TestSetTooManyAccessPolicies there).
	golden(t, "acl_invalid_policy_400", dump(t, setACL(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<SignedIdentifiers><SignedIdentifier><AccessPolicy><Expiry>2042-01-01T01:01:01.000000001Z</Expiry></AccessPolicy></SignedIdentifier></SignedIdentifiers>`)))
	golden(t, "acl_six_identifiers_400", dump(t, setACL(`<SignedIdentifiers>`+six+`</SignedIdentifiers>`)))
	for _, bad := range []string{
		`<SignedIdentifiers><SignedIdentifier><Id>` + strings.Repeat("i", 65) + `</Id><AccessPolicy></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
		`<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Permission>w</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
		`<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Start>soon</Start></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
		`<SignedIdentifiers><SignedIdentifier><Id>a</Id></SignedIdentifier><SignedIdentifier><Id>a</Id></SignedIdentifier></SignedIdentifiers>`,
	} {
		wantError(t, setACL(bad), 400, "InvalidXmlDocument")
	}
	wantError(t, h.do(request{method: "GET", target: "/devstoreaccount1/Missing?comp=acl"}), 404, "TableNotFound")
	// Only the key may read or set an ACL.
	sas := tableSAS("Acl", "raud", time.Time{}, testNow.Add(time.Hour), [4]string{}, nil)
	wantError(t, h.do(request{method: "GET", target: "/devstoreaccount1/Acl?comp=acl&" + sas, unsigned: true}), 403, "AuthorizationFailure")

	// A SAS naming a policy: the policy gives what the SAS leaves out.
	get := func(q string) *http.Response {
		return h.do(request{method: "GET", target: "/devstoreaccount1/Acl(PartitionKey='p',RowKey='r')?" + q, unsigned: true})
	}
	insert := func(q string) *http.Response {
		return h.do(request{method: "POST", target: "/devstoreaccount1/Acl?" + q, unsigned: true,
			header: map[string]string{"Content-Type": "application/json"}, body: `{"PartitionKey":"p","RowKey":"new"}`})
	}
	readers := policySAS("Acl", "readers", "", "", "")
	mustStatus(t, get(readers), 200)
	golden(t, "sas_si_permission_403", dump(t, insert(readers)))
	open := policySAS("Acl", "open", "", "", testNow.Add(time.Hour).Format("2006-01-02T15:04:05Z"))
	mustStatus(t, insert(open), 201)
	// Both the SAS and the policy set the permissions, or the expiry: refused.
	golden(t, "sas_si_both_set_403", dump(t, get(policySAS("Acl", "readers", "r", "", ""))))
	wantError(t, get(policySAS("Acl", "readers", "", "", testNow.Add(time.Hour).Format("2006-01-02T15:04:05Z"))), 403, "AuthenticationFailed")
	// Neither sets an expiry: refused.
	wantError(t, get(policySAS("Acl", "open", "", "", "")), 403, "AuthenticationFailed")
	wantError(t, get(policySAS("Acl", "nobody", "r", "", testNow.Add(time.Hour).Format("2006-01-02T15:04:05Z"))), 403, "AuthenticationFailed")
	// Changing the policy changes what its signatures may do; removing it ends them.
	mustStatus(t, setACL(`<SignedIdentifiers><SignedIdentifier><Id>readers</Id><AccessPolicy><Expiry>2024-05-07T00:00:00Z</Expiry><Permission>a</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`), 204)
	wantError(t, get(readers), 403, "AuthorizationPermissionMismatch")
	mustStatus(t, setACL(``), 204)
	wantError(t, get(readers), 403, "AuthenticationFailed")
	wantError(t, insert(open), 403, "AuthenticationFailed")
}

// A stored-policy SAS signed by hand: only si (the policy gives permissions, start and
// expiry), spr=https,http, sv=2020-10-02, the twelve-field Table string to sign, and no tn,
// since the URL names the table. The service accepts it, and so does Azurite, which reads a
// table SAS's table from the URL (its TableSASAuthenticator); Tabula read it from tn alone and
// refused it. The signature covers the table's name all the same.
func TestGoldenSASWithoutTableName(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Acl")
	h.createTable("Other")
	h.insert("Acl", `{"PartitionKey":"p","RowKey":"r"}`)
	h.insert("Other", `{"PartitionKey":"p","RowKey":"r"}`)
	for _, table := range []string{"Acl", "Other"} {
		mustStatus(t, h.do(request{method: "PUT", target: "/devstoreaccount1/" + table + "?comp=acl", header: map[string]string{"Content-Type": "application/xml"},
			body: `<SignedIdentifiers><SignedIdentifier><Id>readers</Id><AccessPolicy><Start>2024-05-06T00:00:00Z</Start>` +
				`<Expiry>2024-05-07T00:00:00Z</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`}), 204)
	}
	sts := strings.Join([]string{"", "", "", "/table/devstoreaccount1/acl", "readers", "", "https,http", "2020-10-02", "", "", "", ""}, "\n")
	sas := "si=readers&spr=https%2Chttp&sv=2020-10-02&sig=" + url.QueryEscape(hmacBase64(DevelopmentAccountKey, sts))
	get := func(path string) *http.Response {
		return h.do(request{method: "GET", target: "/devstoreaccount1/" + path + "?" + sas, unsigned: true})
	}
	golden(t, "sas_policy_without_tn", dump(t, get("Acl(PartitionKey='p',RowKey='r')")))
	mustStatus(t, get("Acl()"), 200)
	// It is for its own table only, and grants what the policy grants.
	wantError(t, get("Other(PartitionKey='p',RowKey='r')"), 403, "AuthenticationFailed")
	wantError(t, get("Tables"), 403, "AuthenticationFailed")
	wantError(t, h.do(request{method: "POST", target: "/devstoreaccount1/Acl?" + sas, unsigned: true,
		header: map[string]string{"Content-Type": "application/json"}, body: `{"PartitionKey":"p","RowKey":"new"}`}), 403, "AuthorizationPermissionMismatch")
	// With tn it works as before.
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Acl(PartitionKey='p',RowKey='r')?tn=acl&" + sas, unsigned: true}), 200)
}

// policySAS builds a table SAS for the development account that names a stored access
// policy, with the SAS's own permissions, start and expiry (each may be empty).
func policySAS(table, id, perms, st, se string) string {
	sts := strings.Join([]string{perms, st, se, "/table/" + DevelopmentAccountName + "/" + strings.ToLower(table), id, "", "", "2019-02-02",
		"", "", "", ""}, "\n")
	q := url.Values{"sv": {"2019-02-02"}, "tn": {strings.ToLower(table)}, "si": {id}, "sig": {hmacBase64(DevelopmentAccountKey, sts)}}
	for k, v := range map[string]string{"sp": perms, "st": st, "se": se} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q.Encode()
}

// The engine answers the batch's single retrieve; a retrieve among writes is refused.
func TestBatchRetrieve(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Batch")
	h.insert("Batch", `{"PartitionKey":"p","RowKey":"r","N":1}`)
	query := func(rk string) *http.Response {
		return h.do(request{method: "POST", target: "/devstoreaccount1/$batch",
			header: map[string]string{"Content-Type": "multipart/mixed; boundary=batch_B"},
			body: "--batch_B\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
				subRequestText("GET", "Batch(PartitionKey='p',RowKey='"+rk+"')", map[string]string{}, "") + "\r\n--batch_B--\r\n"})
	}
	got := mustStatus(t, query("r"), 202)
	if !strings.Contains(got, "HTTP/1.1 200 OK") || !strings.Contains(got, `"N":1`) {
		t.Fatalf("retrieve: %s", got)
	}
	golden(t, "batch_retrieve_missing", dump(t, query("nope")))
	_, err := h.db.Table("Batch").SubmitTransaction(t.Context(), []tabula.Action{tabula.RetrieveAction("p", "r")})
	if err != nil {
		t.Fatal(err)
	}
}

// Queries answer Vary: Origin with or without an Origin, as the service's recorded answers
// to the SDKs do; writes and failures do not.
func TestQueriesVaryByOrigin(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Vary")
	h.insert("Vary", `{"PartitionKey":"p","RowKey":"r"}`)
	for _, tc := range []struct {
		req  request
		vary string
	}{
		{request{method: "GET", target: "/devstoreaccount1/Vary(PartitionKey='p',RowKey='r')"}, "Origin"},
		{request{method: "GET", target: "/devstoreaccount1/Vary()"}, "Origin"},
		{request{method: "GET", target: "/devstoreaccount1/Tables"}, "Origin"},
		{request{method: "GET", target: "/devstoreaccount1/Vary(PartitionKey='p',RowKey='missing')"}, ""},
		{request{method: "POST", target: "/devstoreaccount1/Vary", body: `{"PartitionKey":"p","RowKey":"s"}`}, ""},
		{request{method: "GET", target: "/devstoreaccount1/?restype=service&comp=properties"}, ""},
	} {
		resp := h.do(tc.req)
		if got := resp.Header.Get("Vary"); got != tc.vary {
			t.Errorf("%s %s (%d): Vary %q, want %q", tc.req.method, tc.req.target, resp.StatusCode, got, tc.vary)
		}
	}
}

// A change set longer than a transaction takes is refused at operation 99 whatever its later
// operations hold; an unreadable operation before that is reported instead. Only the first
// 101 operations are kept in memory (changeSet), which must not change either answer.
func TestLongChangeSet(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Long")
	ops := func(n, bad int) string {
		var parts []string
		for i := range n {
			body := `{"PartitionKey":"p","RowKey":"r` + strconv.Itoa(i) + `"}`
			if i == bad {
				body = `{"PartitionKey":"p",`
			}
			parts = append(parts, insertOp("Long", body, true))
		}
		return changeSetBody(parts...)
	}
	for _, tc := range []struct {
		n, bad int
		want   string
	}{
		{150, -1, "99:The batch request operation exceeds the maximum 100 changes per change set."},
		{150, 120, "99:The batch request operation exceeds the maximum 100 changes per change set."},
		{150, 101, "99:The batch request operation exceeds the maximum 100 changes per change set."},
		{150, 40, "40:"},
	} {
		got := h.batch(ops(tc.n, tc.bad))
		if !strings.Contains(got, "HTTP/1.1 400") || !strings.Contains(got, `"value":"`+tc.want) {
			t.Errorf("%d operations, operation %d unreadable: want 400 %q, got\n%s", tc.n, tc.bad, tc.want, got)
		}
	}
	if got := h.do(request{method: "GET", target: "/devstoreaccount1/Long()"}); !strings.Contains(dump(t, got), `"value":[]`) {
		t.Fatalf("a refused change set wrote entities")
	}
}

// An identifier with no start, expiry or permission is listed with no AccessPolicy element
// at all, whether it was set with an empty one or none, as the service lists it.
func TestGoldenTableACLWithoutPolicy(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Acl")
	mustStatus(t, h.do(request{method: "PUT", target: "/devstoreaccount1/Acl?comp=acl", header: map[string]string{"Content-Type": "application/xml"},
		body: `<SignedIdentifiers><SignedIdentifier><Id>none</Id></SignedIdentifier>` +
			`<SignedIdentifier><Id>empty</Id><AccessPolicy></AccessPolicy></SignedIdentifier></SignedIdentifiers>`}), 204)
	golden(t, "acl_get_without_policy", dump(t, h.do(request{method: "GET", target: "/devstoreaccount1/Acl?comp=acl"})))
}
