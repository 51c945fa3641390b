package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// The service's answers to malformed and unusual requests (REST docs: "Understanding the Table
// service data model", "Querying tables and entities"), each checked for status, code and, where
// the service's message is specific, the message.

func wantMessage(t *testing.T, resp *http.Response, status int, code, message string) {
	t.Helper()
	b := body(t, resp)
	if resp.StatusCode != status || !strings.Contains(b, `"code":"`+code+`"`) || !strings.Contains(b, `"value":"`+message+`\n`) {
		t.Fatalf("got %d %s, want %d %s %q (detail: %s)", resp.StatusCode, b, status, code, message, resp.Header.Get("X-Tabula-Error-Detail"))
	}
}

func TestEntityBodies(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Bodies")
	post := func(body string) *http.Response {
		return h.do(request{method: "POST", target: "/devstoreaccount1/Bodies",
			header: map[string]string{"Content-Type": "application/json"}, body: body})
	}
	for _, tc := range []struct {
		name, body, code, message string
	}{
		{"not JSON", `{"PartitionKey":"p",`, "InvalidInput", ""},
		{"an array", `[]`, "InvalidInput", ""},
		{"nested object", `{"PartitionKey":"p","RowKey":"r","A":{"b":1}}`, "InvalidInput", ""},
		{"trailing garbage", `{"PartitionKey":"p","RowKey":"r"} x`, "InvalidInput", ""},
		{"invalid UTF-8", "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"A\":\"\xff\"}", "InvalidInput", ""},
		{"lone surrogate", `{"PartitionKey":"p","RowKey":"r","A":"\ud800"}`, "InvalidInput", ""},
		{"duplicate property", `{"PartitionKey":"p","RowKey":"r","A":1,"A":2}`, "DuplicatePropertiesSpecified", "A property is specified more than once."},
		{"duplicate annotation", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int64","A@odata.type":"Edm.Int64","A":"1"}`, "DuplicatePropertiesSpecified", ""},
		{"no RowKey", `{"PartitionKey":"p"}`, "PropertiesNeedValue", "The values are not specified for all properties in the entity."},
		{"null RowKey", `{"PartitionKey":"p","RowKey":null}`, "PropertiesNeedValue", ""},
		{"numeric key", `{"PartitionKey":"p","RowKey":1}`, "InvalidInput", "One of the request inputs is not valid."},
		{"typed key", `{"PartitionKey":"p","RowKey@odata.type":"Edm.Guid","RowKey":"c9da6455-213d-42c9-9a79-3e9149a57833"}`, "InvalidInput", ""},
		{"Int64 out of range", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int64","A":"9223372036854775808"}`, "InvalidInput", "An error occurred while processing this request."},
		{"Int32 out of range", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int32","A":2147483648}`, "InvalidInput", ""},
		{"bad Guid", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Guid","A":"nope"}`, "InvalidInput", ""},
		{"bad DateTime", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"yesterday"}`, "InvalidInput", ""},
		// Found by FuzzEntityJSON: the service's reader wants every field at full width.
		{"DateTime year 0, one-digit hour, comma fraction", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"0000-10-01T0:00:00,10"}`, "InvalidInput", ""},
		{"DateTime comma fraction", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"2020-10-01T00:00:00,10Z"}`, "InvalidInput", ""},
		{"DateTime one-digit hour", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"2020-10-01T1:00:00Z"}`, "InvalidInput", ""},
		{"DateTime February 30", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"2020-02-30T00:00:00Z"}`, "InvalidInput", ""},
		{"DateTime empty fraction", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"2020-10-01T00:00:00.Z"}`, "InvalidInput", ""},
		{"DateTime short offset", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"2020-10-01T00:00:00+01"}`, "InvalidInput", ""},
		{"DateTime before 1601", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"1600-12-31T23:59:59Z"}`, "OutOfRangeInput", "The 'A' parameter of value '12/31/1600 23:59:59' is out of range."},
		{"bad base64", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Binary","A":"!!"}`, "InvalidInput", ""},
		{"unknown type", `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Decimal","A":"1"}`, "InvalidInput", ""},
		{"annotation not a string", `{"PartitionKey":"p","RowKey":"r","A@odata.type":5,"A":"1"}`, "InvalidInput", ""},
		{"number too big for a Double", `{"PartitionKey":"p","RowKey":"r","A":1e400}`, "InvalidInput", ""},
		{"property name", `{"PartitionKey":"p","RowKey":"r","a-b":1}`, "PropertyNameInvalid", "The property name is invalid."},
		{"key with a slash", `{"PartitionKey":"p/q","RowKey":"r"}`, "OutOfRangeInput", "The 'PartitionKey' parameter of value 'p/q' is out of range."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(tc.body)
			if tc.message != "" {
				wantMessage(t, resp, 400, tc.code, tc.message)
			} else {
				wantError(t, resp, 400, tc.code)
			}
		})
	}
	if n := h.count("Bodies"); n != 0 {
		t.Fatalf("refused bodies stored %d entities", n)
	}

	// Accepted shapes: nulls dropped, a bare big integer is a Double, annotated strings,
	// Timestamp and odata.* ignored.
	mustStatus(t, post(`{"PartitionKey":"p","RowKey":"ok","Gone":null,"Typed@odata.type":"Edm.String","Gone2@odata.type":"Edm.Int64","Gone2":null,`+
		`"Big":9223372036854775808000,"I32@odata.type":"Edm.Int32","I32":"12345","B@odata.type":"Edm.Boolean","B":"False",`+
		`"D@odata.type":"Edm.Double","D":"2.5","Inf@odata.type":"Edm.Double","Inf":"Infinity","Timestamp":"junk",`+
		`"odata.metadata":"x","Local@odata.type":"Edm.DateTime","Local":"2020-01-02T03:04:05"}`), 201)
	got := mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Bodies(PartitionKey='p',RowKey='ok')",
		header: map[string]string{"Accept": "application/json;odata=fullmetadata"}}), 200)
	// Full metadata annotates only what JSON cannot carry, as minimal does (see
	// TestGoldenFullMetadata).
	for _, want := range []string{`"Big":9.223372036854776E+21`, `"I32":12345`,
		`"B":false`, `"D":2.5`, `"Inf@odata.type":"Edm.Double","Inf":"Infinity"`, `"Local@odata.type":"Edm.DateTime","Local":"2020-01-02T03:04:05Z"`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
	for _, absent := range []string{"Gone", "Typed", "junk", `"odata.metadata":"x"`, `"Big@`, `"I32@`, `"B@`, `"D@`} {
		if strings.Contains(got, absent) {
			t.Errorf("%s has %s", got, absent)
		}
	}

	// Upsert and update take the keys from the URL; typed keys in the body are ignored.
	mustStatus(t, h.do(request{method: "PUT", target: "/devstoreaccount1/Bodies(PartitionKey='p',RowKey='up')",
		header: map[string]string{"Content-Type": "application/json"},
		body:   `{"PartitionKey@odata.type":"Edm.DateTime","PartitionKey":"2020-01-01T00:00:00Z","RowKey@odata.type":"Edm.Guid","RowKey":"c9da6455-213d-42c9-9a79-3e9149a57833","V":1}`}), 204)
	mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Bodies(PartitionKey='p',RowKey='up')"}), 200)
}

func TestConditionsAndVerbs(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Verbs")
	h.insert("Verbs", `{"PartitionKey":"p","RowKey":"r","A":1}`)
	const entity = "/devstoreaccount1/Verbs(PartitionKey='p',RowKey='r')"
	do := func(method string, header map[string]string, body string) *http.Response {
		if header == nil {
			header = map[string]string{}
		}
		header["Content-Type"] = "application/json"
		return h.do(request{method: method, target: entity, header: header, body: body})
	}
	wantMessage(t, do("DELETE", nil, ""), 400, "InvalidInput", "If-Match header is mandatory when deleting an entity.")
	wantMessage(t, do("DELETE", map[string]string{"If-Match": "*", "If-None-Match": "*"}, ""), 400, "InvalidInput",
		"Both If-Match and If-None-Match HTTP headers cannot be specified at the same time. Please specify either one of the headers or none of them.")
	wantMessage(t, do("DELETE", map[string]string{"If-None-Match": "*"}, ""), 400, "InvalidInput", "If-None-Match HTTP header cannot be specified for DELETE operations.")
	wantMessage(t, do("PUT", map[string]string{"If-None-Match": "*"}, `{}`), 400, "InvalidInput", "If-None-Match HTTP header cannot be specified for PUT operations.")
	wantMessage(t, do("PUT", map[string]string{"If-Match": "abc"}, `{}`), 400, "InvalidInput",
		"The etag value 'abc' specified in one of the request headers is not valid. Please make sure only one etag value is specified and is valid.")
	wantError(t, do("PUT", map[string]string{"If-Match": `W/"datetime'2020-01-01T00%3A00%3A00Z'"`}, `{}`), 412, "UpdateConditionNotSatisfied")

	// X-HTTP-Method tunnelling: only on POST, once, and only to MERGE, PUT or DELETE.
	wantError(t, do("PUT", map[string]string{"X-HTTP-Method": "MERGE"}, `{}`), 400, "XMethodNotUsingPost")
	wantError(t, do("POST", map[string]string{"X-HTTP-Method": "GET"}, `{}`), 400, "XMethodIncorrectValue")
	req := request{method: "POST", target: entity, header: map[string]string{"Content-Type": "application/json"}, body: `{}`}
	resp := h.doWith(req, func(r *http.Request) { r.Header["X-Http-Method"] = []string{"MERGE", "MERGE"} })
	wantError(t, resp, 400, "XMethodIncorrectCount")
	mustStatus(t, do("POST", map[string]string{"X-HTTP-Method": "MERGE", "If-Match": "*"}, `{"B":2}`), 204)
	got := mustStatus(t, h.do(request{method: "GET", target: entity}), 200)
	if !strings.Contains(got, `"A":1,"B":2`) {
		t.Fatalf("MERGE through POST gave %s", got)
	}
	// PATCH is MERGE; without If-Match it is InsertOrMerge.
	mustStatus(t, h.do(request{method: "PATCH", target: "/devstoreaccount1/Verbs(PartitionKey='p',RowKey='new')", body: `{"C":3}`}), 204)
	wantError(t, do("POST", nil, "{}"), 405, "MethodNotAllowed")
	wantError(t, h.do(request{method: "PUT", target: "/devstoreaccount1/Tables"}), 405, "MethodNotAllowed")
	mustStatus(t, do("POST", map[string]string{"X-HTTP-Method": "DELETE", "If-Match": "*"}, ""), 204)
}

// doWith is do with a last change to the request before it is served.
func (h *harness) doWith(r request, mod func(*http.Request)) *http.Response {
	h.t.Helper()
	req := httptest.NewRequest(r.method, r.target, strings.NewReader(r.body))
	req.Host = "127.0.0.1:10002"
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	mod(req)
	signLite(req, DevelopmentAccountName, DevelopmentAccountKey, testNow)
	rec := httptest.NewRecorder()
	h.s.ServeHTTP(rec, req)
	return rec.Result()
}

func TestURLsAndQueries(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Urls")
	h.insert("Urls", `{"PartitionKey":"a'b","RowKey":"x,y)","N":1}`)
	get := func(target string, header map[string]string) *http.Response {
		return h.do(request{method: "GET", target: target, header: header})
	}
	// Keys in the URL: quotes doubled, anything percent-encoded or not, in either order.
	mustStatus(t, get("/devstoreaccount1/Urls(PartitionKey='a''b',RowKey='x,y)')", nil), 200)
	mustStatus(t, get("/devstoreaccount1/Urls(RowKey='x%2Cy%29',PartitionKey='a%27%27b')", nil), 200)
	mustStatus(t, get("/devstoreaccount1/Urls%28PartitionKey%3D%27a%27%27b%27%2CRowKey%3D%27x%2Cy%29%27%29", nil), 200)
	for _, bad := range []string{
		"/devstoreaccount1/Urls(PartitionKey='a%2Fb',RowKey='x')",
		"/devstoreaccount1/Urls(PartitionKey='a%5Cb',RowKey='x')",
		"/devstoreaccount1/Urls(PartitionKey='a',RowKey='x'",
		"/devstoreaccount1/Urls(PartitionKey='a')",
		"/devstoreaccount1/Urls(PartitionKey='a',PartitionKey='b')",
		"/devstoreaccount1/Urls(Foo='a',RowKey='b')",
		"/devstoreaccount1/Urls(PartitionKey='a,RowKey='b')",
		"/devstoreaccount1/Tables(Urls)",
	} {
		wantMessage(t, get(bad, nil), 400, "InvalidInput", "Bad Request - Error in query syntax.")
	}
	wantMessage(t, get("/devstoreaccount1/Urls(PartitionKey='a%23b',RowKey='x')", nil), 400, "OutOfRangeInput",
		"The 'PartitionKey' parameter of value 'a#b' is out of range.")
	wantError(t, get("/devstoreaccount1/Urls/extra", nil), 400, "InvalidUri")
	wantError(t, get("/devstoreaccount1/Urls()?comp=list", nil), 400, "InvalidQueryParameterValue")
	wantError(t, get("/devstoreaccount1/?restype=service&comp=nothing", nil), 400, "InvalidQueryParameterValue")
	wantError(t, get("/devstoreaccount1/", nil), 400, "InvalidQueryParameterValue")

	// Query options.
	for _, target := range []string{"/devstoreaccount1/Urls()?$top=-1", "/devstoreaccount1/Urls()?$top=1001", "/devstoreaccount1/Urls()?$top=x",
		"/devstoreaccount1/Urls()?NextPartitionKey=garbage", "/devstoreaccount1/Tables?NextTableName=garbage",
		"/devstoreaccount1/Urls()?$select=a-b", "/devstoreaccount1/Urls()?$filter=N%20eq%20"} {
		wantError(t, get(target, nil), 400, "InvalidInput")
	}
	wantMessage(t, get("/devstoreaccount1/Urls()?$filter=aaa%20bbb%20ccc", nil), 400, "InvalidInput", "Syntax error at position 7 in 'aaa bbb ccc'.")
	wantError(t, get("/devstoreaccount1/Urls()?$orderby=N", nil), 501, "NotImplemented")
	wantError(t, get("/devstoreaccount1/Missing()", nil), 404, "TableNotFound")
	mustStatus(t, get("/devstoreaccount1/Urls()?$filter=", nil), 200)
	for _, target := range []string{"/devstoreaccount1/Urls()?$select=*", "/devstoreaccount1/Urls(PartitionKey='a''b',RowKey='x,y)')?$select=*"} {
		if got := mustStatus(t, get(target, nil), 200); !strings.Contains(got, `"N":1`) || !strings.Contains(got, `"PartitionKey":"a'b"`) {
			t.Fatalf("$select=* gave %s", got)
		}
	}

	// Formats: Atom and verbose JSON are refused; no Accept at all means minimal metadata.
	wantMessage(t, get("/devstoreaccount1/Urls()", map[string]string{"Accept": "application/atom+xml"}), 415, "AtomFormatNotSupported", "Atom format is not supported.")
	wantMessage(t, get("/devstoreaccount1/Urls()?$format=application/json;odata=verbose", nil), 415, "JsonVerboseFormatNotSupported", "Verbose JSON format is not supported.")
	wantError(t, get("/devstoreaccount1/Urls()", map[string]string{"Accept": "application/xml"}), 415, "MediaTypeNotSupported")
	wantError(t, h.do(request{method: "POST", target: "/devstoreaccount1/Urls", header: map[string]string{"Content-Type": "application/atom+xml"}, body: "<entry/>"}),
		415, "AtomFormatNotSupported")
	resp := get("/devstoreaccount1/Urls()", nil)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; odata=minimalmetadata; streaming=true; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	mustStatus(t, get("/devstoreaccount1/Urls()", map[string]string{"Accept": "*/*"}), 200)

	// Tables: a single table by name (in any case), and Prefer on create.
	got := mustStatus(t, get("/devstoreaccount1/Tables('URLS')", nil), 200)
	if !strings.Contains(got, `"TableName":"Urls"`) {
		t.Fatalf("Tables('URLS') gave %s", got)
	}
	wantError(t, get("/devstoreaccount1/Tables('Nope')", nil), 404, "ResourceNotFound")
	resp = h.do(request{method: "POST", target: "/devstoreaccount1/Tables", header: map[string]string{"Prefer": "return-no-content"}, body: `{"TableName":"Quiet"}`})
	mustStatus(t, resp, 204)
	if resp.Header.Get("Preference-Applied") != "return-no-content" || !strings.HasSuffix(resp.Header.Get("Location"), "/devstoreaccount1/Tables('Quiet')") {
		t.Fatalf("headers %v", resp.Header)
	}
	wantError(t, h.do(request{method: "POST", target: "/devstoreaccount1/Tables", body: `{"Name":"x"}`}), 400, "InvalidInput")
	wantMessage(t, h.do(request{method: "POST", target: "/devstoreaccount1/Tables", body: `{"TableName":"tables"}`}), 400, "InvalidResourceName",
		"The specifed resource name contains invalid characters.")
	wantError(t, h.do(request{method: "DELETE", target: "/devstoreaccount1/Tables('Nope')"}), 404, "ResourceNotFound")
	mustStatus(t, h.do(request{method: "DELETE", target: "/devstoreaccount1/Tables('quiet')"}), 204)
}

// A table name in the URL that no table can have, for its length or its encoding, gets the
// service's 400 on every route, as Create Table answers such a name in its body, without
// being looked up or quoted back; the longest allowed name is still looked up. A $filter that
// is not UTF-8 once unescaped is a 400 InvalidInput, as a filter that does not parse.
func TestMalformedNamesAndFiltersInURLs(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Names")
	h.insert("Names", `{"PartitionKey":"p","RowKey":"r","S":"é"}`)
	const lengthMessage = "The specified resource name length is not within the permissible limits."
	const charsMessage = "The specifed resource name contains invalid characters."
	huge := strings.Repeat("a", 1<<20)
	for _, c := range []struct {
		name          string
		code, message string
	}{
		{huge, "OutOfRangeInput", lengthMessage},
		{strings.Repeat("a", 64), "OutOfRangeInput", lengthMessage},
		{strings.Repeat("%C3%A9", 64), "OutOfRangeInput", lengthMessage}, // 64 characters, 128 bytes
		{"%FFab", "InvalidResourceName", charsMessage},
		{"Names%C3", "InvalidResourceName", charsMessage},
	} {
		for _, r := range []request{
			{method: "GET", target: "/devstoreaccount1/" + c.name + "()"},
			{method: "GET", target: "/devstoreaccount1/" + c.name + "()?$filter=PartitionKey%20eq%20'p'"},
			{method: "GET", target: "/devstoreaccount1/" + c.name + "(PartitionKey='p',RowKey='r')"},
			{method: "POST", target: "/devstoreaccount1/" + c.name, body: `{"PartitionKey":"p","RowKey":"n"}`},
			{method: "PUT", target: "/devstoreaccount1/" + c.name + "(PartitionKey='p',RowKey='r')", body: `{}`},
			{method: "DELETE", target: "/devstoreaccount1/" + c.name + "(PartitionKey='p',RowKey='r')", header: map[string]string{"If-Match": "*"}},
			{method: "GET", target: "/devstoreaccount1/Tables('" + c.name + "')"},
			{method: "DELETE", target: "/devstoreaccount1/Tables('" + c.name + "')"},
		} {
			resp := h.do(r)
			if len(resp.Header.Get("X-Tabula-Error-Detail")) > 200 {
				t.Fatalf("%s %.80s: the detail quotes the name: %.200s", r.method, r.target, resp.Header.Get("X-Tabula-Error-Detail"))
			}
			if b := body(t, resp); len(b) > 400 || resp.StatusCode != 400 || !strings.Contains(b, `"code":"`+c.code+`"`) ||
				!strings.Contains(b, `"value":"`+c.message+`\n`) {
				t.Fatalf("%s %.80s: got %d %.400s, want 400 %s", r.method, r.target, resp.StatusCode, b, c.code)
			}
		}
	}
	// The longest names the service allows are looked up as before.
	wantError(t, h.do(request{method: "GET", target: "/devstoreaccount1/" + strings.Repeat("a", 63) + "()"}), 404, "TableNotFound")
	wantError(t, h.do(request{method: "GET", target: "/devstoreaccount1/Tables('" + strings.Repeat("a", 63) + "')"}), 404, "ResourceNotFound")

	for _, target := range []string{
		"/devstoreaccount1/Names()?$filter=S%20eq%20'%FF'",
		"/devstoreaccount1/Names()?$filter=%FF",
		"/devstoreaccount1/Names()?$filter=S%20eq%20'%C3'",
		"/devstoreaccount1/Names()?$filter=S%20eq%20'%ED%A0%80'", // a UTF-16 surrogate, encoded
		"/devstoreaccount1/Names()?$filter=PartitionKey%20eq%20'p'&$filter=S%20eq%20'%FF'",
		"/devstoreaccount1/Tables?$filter=TableName%20eq%20'%FF'",
	} {
		resp := h.do(request{method: "GET", target: target})
		if b := body(t, resp); resp.StatusCode != 400 || !strings.Contains(b, `"code":"InvalidInput"`) || !utf8.ValidString(b) {
			t.Fatalf("%s: got %d %s, want 400 InvalidInput", target, resp.StatusCode, b)
		}
	}
	if got := mustStatus(t, h.do(request{method: "GET", target: "/devstoreaccount1/Names()?$filter=S%20eq%20'%C3%A9'"}), 200); !strings.Contains(got, `"RowKey":"r"`) {
		t.Fatalf("a valid UTF-8 literal: %s", got)
	}
}

func TestRequestHeaders(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Heads")
	resp := h.do(request{method: "GET", target: "/devstoreaccount1/Heads()",
		header: map[string]string{"x-ms-version": "2021-12-02", "x-ms-client-request-id": "abc-123"}})
	mustStatus(t, resp, 200)
	for name, want := range map[string]string{"x-ms-version": "2021-12-02", "x-ms-client-request-id": "abc-123",
		"Date": "Mon, 06 May 2024 07:08:09 GMT", "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"} {
		if got := headerValue(resp.Header, name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if headerValue(resp.Header, "x-ms-request-id") == "" {
		t.Error("no x-ms-request-id")
	}
}

func TestBodyLimit(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Big")
	big := `{"PartitionKey":"p","RowKey":"r","A":"` + strings.Repeat("x", MaxRequestBody) + `"}`
	wantMessage(t, h.do(request{method: "POST", target: "/devstoreaccount1/Big", body: big}), 413, "RequestBodyTooLarge",
		"The request body is too large and exceeds the maximum permissible limit.")
	// Without a Content-Length (chunked), the limit holds while reading.
	resp := h.doWith(request{method: "POST", target: "/devstoreaccount1/Big", body: big}, func(r *http.Request) {
		r.ContentLength = -1
		r.Body = io.NopCloser(strings.NewReader(big))
	})
	wantError(t, resp, 413, "RequestBodyTooLarge")
	batch := changeSetBody(insertOp("Big", big, true))
	wantError(t, h.do(request{method: "POST", target: "/devstoreaccount1/$batch",
		header: map[string]string{"Content-Type": "multipart/mixed; boundary=batch_B"}, body: batch}), 413, "RequestBodyTooLarge")
	if n := h.count("Big"); n != 0 {
		t.Fatalf("%d entities stored", n)
	}
}

func TestBatchRequests(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Batch")
	h.createTable("Other")
	h.insert("Batch", `{"PartitionKey":"p","RowKey":"exists"}`)
	send := func(contentType, body string) *http.Response {
		return h.do(request{method: "POST", target: "/devstoreaccount1/$batch", header: map[string]string{"Content-Type": contentType}, body: body})
	}
	const ct = "multipart/mixed; boundary=batch_B"
	// Malformed batches are refused as a whole.
	wantError(t, send("application/json", "{}"), 400, "InvalidInput")
	wantError(t, send(ct, "not multipart"), 400, "InvalidInput")
	wantError(t, send("multipart/mixed", "--batch_B--"), 400, "InvalidInput")
	two := strings.Replace(changeSetBody(insertOp("Batch", `{"PartitionKey":"p","RowKey":"1"}`, true)), "--batch_B--",
		"--batch_B\r\nContent-Type: multipart/mixed; boundary=changeset_D\r\n\r\n--changeset_D--\r\n--batch_B--", 1)
	wantError(t, send(ct, two), 400, "InvalidInput")
	wantError(t, send(ct, changeSetBody()), 400, "InvalidInput")

	// A bad operation is reported at its index, after earlier operations' broken rules.
	failure := func(body string) string {
		resp := send(ct, body)
		b := mustStatus(t, resp, 202)
		i := strings.Index(b, "HTTP/1.1 ")
		j := strings.Index(b, `","message":`)
		if i < 0 || j < 0 {
			t.Fatalf("no failure part in %s", b)
		}
		return b[i:strings.Index(b[i:], "\r\n")+i] + " " + b[strings.Index(b, `"code":"`)+8:j] + " " +
			b[strings.Index(b, `"value":"`)+9:strings.Index(b, `\nRequestId`)]
	}
	for _, tc := range []struct {
		name string
		ops  []string
		want string
	}{
		{"bad JSON at 1", []string{insertOp("Batch", `{"PartitionKey":"p","RowKey":"1"}`, true), insertOp("Batch", `{"PartitionKey":`, true)},
			"HTTP/1.1 400 Bad Request InvalidInput 1:One of the request inputs is not valid."},
		{"other partition before bad JSON", []string{insertOp("Batch", `{"PartitionKey":"p","RowKey":"1"}`, true),
			insertOp("Batch", `{"PartitionKey":"q","RowKey":"1"}`, true), insertOp("Batch", `{`, true)},
			"HTTP/1.1 400 Bad Request CommandsInBatchActOnDifferentPartitions 1:All commands in a batch must operate on same entity group."},
		{"other table", []string{insertOp("Batch", `{"PartitionKey":"p","RowKey":"1"}`, true), insertOp("Other", `{"PartitionKey":"p","RowKey":"2"}`, true)},
			"HTTP/1.1 400 Bad Request CommandsInBatchActOnDifferentPartitions 1:All commands in a batch must operate on same entity group."},
		{"same row twice", []string{insertOp("Batch", `{"PartitionKey":"p","RowKey":"1"}`, true), insertOp("Batch", `{"PartitionKey":"p","RowKey":"1"}`, true)},
			"HTTP/1.1 400 Bad Request InvalidDuplicateRow 1:A command with RowKey '1' is already present in the batch. An entity can appear only once in a batch."},
		{"delete without If-Match", []string{subRequestText("DELETE", "Batch(PartitionKey='p',RowKey='exists')", map[string]string{}, "")},
			"HTTP/1.1 400 Bad Request InvalidInput 0:If-Match header is mandatory when deleting an entity."},
		{"query in a change set", []string{subRequestText("GET", "Batch(PartitionKey='p',RowKey='exists')", map[string]string{}, "")},
			"HTTP/1.1 400 Bad Request InvalidInput 0:A query operation is not permitted within a change set."},
		{"missing entity", []string{subRequestText("MERGE", "Batch(PartitionKey='p',RowKey='nope')", map[string]string{"If-Match": "*"}, "{}")},
			// The change set's only operation, failing on its entity: no index (failedMessage).
			"HTTP/1.1 404 Not Found ResourceNotFound The specified resource does not exist."},
		{"another account", []string{strings.Replace(insertOp("Batch", `{"PartitionKey":"p","RowKey":"1"}`, true), "devstoreaccount1", "other", 1)},
			"HTTP/1.1 400 Bad Request InvalidInput 0:The batch sub-request does not address this account."},
		{"garbage operation", []string{"hello"}, "HTTP/1.1 400 Bad Request InvalidInput 0:One of the request inputs is not valid."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := failure(changeSetBody(tc.ops...)); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if n := h.count("Batch"); n != 1 {
		t.Fatalf("failed batches left %d entities, want 1", n)
	}

	// Clients that write the JSON after an extra blank line and without Content-Length
	// (as the JS SDK does), lower-case part headers, Content-ID, and X-HTTP-Method.
	js := "--batch_B\r\ncontent-type: multipart/mixed; boundary=changeset_C\r\n\r\n\r\n" +
		"--changeset_C\r\ncontent-type: application/http\r\ncontent-transfer-encoding: binary\r\nContent-ID: 1\r\n\r\n" +
		"POST http://127.0.0.1:10002/devstoreaccount1/Batch HTTP/1.1\r\nContent-Type: application/json;odata=nometadata\r\n" +
		"Accept: application/json;odata=minimalmetadata\r\nPrefer: return-no-content\r\n\r\n\r\n" +
		`{"PartitionKey":"p","RowKey":"js"}` + "\r\n" +
		"--changeset_C\r\ncontent-type: application/http\r\ncontent-transfer-encoding: binary\r\n\r\n" +
		"POST http://127.0.0.1:10002/devstoreaccount1/Batch(PartitionKey='p',RowKey='exists') HTTP/1.1\r\nX-HTTP-Method: MERGE\r\nIf-Match: *\r\n\r\n" +
		`{"M":1}` + "\r\n--changeset_C--\r\n--batch_B--\r\n"
	got := mustStatus(t, send(ct, js), 202)
	if strings.Count(got, "HTTP/1.1 204 No Content") != 2 || !strings.Contains(got, "Content-ID: 1\r\n") {
		t.Fatalf("JS-style batch gave %s", got)
	}
	if n := h.count("Batch"); n != 2 {
		t.Fatalf("%d entities, want 2", n)
	}
}

// headerValue looks a header up by name in any case: the server writes some names as the
// service spells them, which Header.Get (canonical names only) does not find in a
// recorder's map.
func headerValue(h http.Header, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}
