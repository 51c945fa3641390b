package server

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/internal/wire"
)

// Answers the service gave to requests an Azure SDK's own tests sent it, each reproduced
// here: the request is described beside its golden file, the recorded answer quoted (its
// volatile values, request IDs and times, aside).

// One operation in a change set, a MERGE under an If-Match the entity no longer has. The Azure
// SDK for Python's test_batch_update_if_doesnt_match recorded 202 with one part, 412 Precondition
// Failed, {"odata.error":{"code":"UpdateConditionNotSatisfied","message":{"lang":"en-US","value":
// "The update condition specified in the request was not satisfied.\nRequestId:…\nTime:…"}}}: no
// "0:" before the message. Two operations, the second failing, keep the index ("1:").
func TestGoldenRecordedLoneOperationFailure(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Batch")
	h.insert("Batch", `{"PartitionKey":"p","RowKey":"r","N":1}`)
	stale := `W/"datetime'2012-06-15T22%3A51%3A44.9662825Z'"`
	merge := subRequestText("PATCH", "Batch(PartitionKey='p',RowKey='r')",
		map[string]string{"Accept": "application/json", "If-Match": stale}, `{"PartitionKey":"p","RowKey":"r","N":2}`)
	got := h.batch(changeSetBody(merge))
	golden(t, "recorded_lone_merge_412", got)
	assert.Contains(t, got, `"value":"The update condition specified in the request was not satisfied.\n`)

	two := h.batch(changeSetBody(insertOp("Batch", `{"PartitionKey":"p","RowKey":"new"}`, true), merge))
	assert.Contains(t, two, `"value":"1:The update condition specified in the request was not satisfied.\n`)
	// A lone insert into a missing table keeps "0:", as the same SDK's
	// test_new_non_existent_table recorded (golden batch_table_not_found).
	missing := h.batch(changeSetBody(insertOp("Nope", `{"PartitionKey":"p","RowKey":"a"}`, true)))
	assert.Contains(t, missing, `"value":"0:The table specified does not exist.\n`)
}

// Set Table Service Properties with logging on and one CORS rule whose header lists mix
// prefixes and exact names, then Get. The service's recorded Gets (the aztables module's
// TestSetLogging and TestSetCors, the Azure SDK for Python's test_set_cors) answer with a byte
// order mark, Logging as Version, Read, Write, Delete, RetentionPolicy, CorsRule as
// AllowedMethods, AllowedOrigins, AllowedHeaders, ExposedHeaders, MaxAgeInSeconds, empty
// lists as <AllowedHeaders />, and the header lists exact names first:
// x-ms-meta-data*,x-ms-meta-target*,x-ms-meta-xyz,x-ms-meta-foo came back as
// x-ms-meta-xyz,x-ms-meta-foo,x-ms-meta-data*,x-ms-meta-target*. Neither Cache-Control nor
// X-Content-Type-Options is sent; Vary: Origin is, once rules exist.
func TestGoldenRecordedServiceProperties(t *testing.T) {
	h := newHarness(t, nil)
	empty := h.do(request{method: "GET", target: "/devstoreaccount1/?restype=service&comp=properties"})
	got := dump(t, empty)
	assert.Contains(t, got, "\n\n\uFEFF<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties><Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete>")
	assert.Contains(t, got, "<Cors /></StorageServiceProperties>")
	assert.NotContains(t, got, "Vary")

	set := `<?xml version='1.0' encoding='utf-8'?>
<StorageServiceProperties><Logging><Delete>true</Delete><Read>true</Read><RetentionPolicy><Enabled>true</Enabled><Days>5</Days></RetentionPolicy><Version>1.0</Version><Write>true</Write></Logging>` +
		`<Cors><CorsRule><AllowedOrigins>www.xyz.com</AllowedOrigins><AllowedMethods>GET</AllowedMethods><AllowedHeaders /><ExposedHeaders /><MaxAgeInSeconds>0</MaxAgeInSeconds></CorsRule>` +
		`<CorsRule><AllowedOrigins>www.xyz.com,www.ab.com,www.bc.com</AllowedOrigins><AllowedMethods>GET,PUT</AllowedMethods>` +
		`<AllowedHeaders>x-ms-meta-data*,x-ms-meta-target*,x-ms-meta-xyz,x-ms-meta-foo</AllowedHeaders>` +
		`<ExposedHeaders>x-ms-meta-data*,x-ms-meta-source*,x-ms-meta-abc,x-ms-meta-bcd</ExposedHeaders><MaxAgeInSeconds>500</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>`
	resp := h.do(request{method: "PUT", target: "/devstoreaccount1/?restype=service&comp=properties",
		header: map[string]string{"Content-Type": "application/xml"}, body: set})
	mustStatus(t, resp, http.StatusAccepted)
	got = dump(t, h.do(request{method: "GET", target: "/devstoreaccount1/?restype=service&comp=properties"}))
	golden(t, "recorded_service_properties", got)
	recorded := `<Logging><Version>1.0</Version><Read>true</Read><Write>true</Write><Delete>true</Delete><RetentionPolicy><Enabled>true</Enabled><Days>5</Days></RetentionPolicy></Logging>` +
		`<HourMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics>` +
		`<MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics>` +
		`<Cors><CorsRule><AllowedMethods>GET</AllowedMethods><AllowedOrigins>www.xyz.com</AllowedOrigins><AllowedHeaders /><ExposedHeaders /><MaxAgeInSeconds>0</MaxAgeInSeconds></CorsRule>` +
		`<CorsRule><AllowedMethods>GET,PUT</AllowedMethods><AllowedOrigins>www.xyz.com,www.ab.com,www.bc.com</AllowedOrigins>` +
		`<AllowedHeaders>x-ms-meta-xyz,x-ms-meta-foo,x-ms-meta-data*,x-ms-meta-target*</AllowedHeaders>` +
		`<ExposedHeaders>x-ms-meta-abc,x-ms-meta-bcd,x-ms-meta-data*,x-ms-meta-source*</ExposedHeaders><MaxAgeInSeconds>500</MaxAgeInSeconds></CorsRule></Cors>`
	assert.True(t, strings.HasSuffix(got, "\uFEFF<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties>"+recorded+"</StorageServiceProperties>"), got)
	assert.Contains(t, got, "\nVary: Origin\n")
	assert.NotContains(t, got, "Cache-Control")
	assert.NotContains(t, got, "X-Content-Type-Options")
}

// Get and Set Table ACL on a table that does not exist. Signed with a bearer token, the Azure
// SDK for Python's test_aad_access_policy_error recorded 404 with x-ms-error-code
// ResourceNotFound and <m:code>ResourceNotFound</m:code><m:message xml:lang="en-US">The
// specified resource does not exist.… for both. Signed with the account's key, the legacy Go
// SDK's StorageTableSuite/TestSetPermissionsUnsuccessfully recorded a Set answered 404
// TableNotFound, "The table specified does not exist.": that stays.
func TestGoldenRecordedACLMissingTable(t *testing.T) {
	h := newHarness(t, nil)
	h.s.bearer = true
	withToken := func(method string) *http.Response {
		req := httptest.NewRequest(method, "/devstoreaccount1/pytablesynceff726d7?comp=acl", http.NoBody)
		req.Host = "127.0.0.1:10002"
		req.TLS = &tls.ConnectionState{}
		req.Header.Set("Authorization", "Bearer "+unsignedJWT(testNow, nil))
		req.Header.Set("x-ms-version", "2019-02-02")
		req.Header.Set("Content-Type", "application/xml")
		rec := httptest.NewRecorder()
		h.s.ServeHTTP(rec, req)
		return rec.Result()
	}
	golden(t, "recorded_acl_missing_table_token_get", dump(t, withToken("GET")))
	set := withToken("PUT")
	assert.Equal(t, http.StatusNotFound, set.StatusCode)
	assert.Equal(t, "ResourceNotFound", headerValue(set.Header, "x-ms-error-code"))
	assert.Contains(t, body(t, set), `<m:code>ResourceNotFound</m:code><m:message xml:lang="en-US">The specified resource does not exist.`)

	key := h.do(request{method: "PUT", target: "/devstoreaccount1/nonexistingtable?comp=acl", header: map[string]string{"Content-Type": "application/xml"},
		body: `<SignedIdentifiers><SignedIdentifier><Id>GolangRocksOnAzure</Id><AccessPolicy><Start>2050-12-20T21:55:06Z</Start><Expiry>2050-12-21T07:55:06Z</Expiry><Permission>raud</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`})
	golden(t, "recorded_acl_missing_table_key_set", dump(t, key))
}

// A $batch signed with a wrong key. The Azure SDK for Python's test_new_invalid_key recorded
// 403 with x-ms-error-code AuthenticationFailed, Content-Type: application/json (not the table
// layer's odata=minimalmetadata), no Cache-Control, X-Content-Type-Options or x-ms-version,
// the x-ms-client-request-id sent not repeated, and the body
// {"odata.error":{"code":"AuthenticationFailed","message":{"lang":"en-US","value":"Server failed
// to authenticate the request. Make sure the value of Authorization header is formed correctly
// including the signature.\nRequestId:…\nTime:…"}}}. Elsewhere the JSON answer is unchanged.
func TestGoldenRecordedBatchAuthenticationFailed(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Batch")
	bad := request{method: "POST", target: "/devstoreaccount1/$batch",
		header: map[string]string{"Content-Type": "multipart/mixed; boundary=batch_B",
			"Authorization": "SharedKeyLite devstoreaccount1:" + hmacBase64(strings.Repeat("A", 88), "wrong")},
		body: changeSetBody(insertOp("Batch", `{"PartitionKey":"p","RowKey":"r"}`, true)), unsigned: true}
	bad.header["x-ms-date"] = testNow.Format(http.TimeFormat)
	bad.header["x-ms-client-request-id"] = "88b5627a-1a76-11ec-97b9-5cf37093a909"
	resp := h.do(bad)
	got := dump(t, resp)
	golden(t, "recorded_batch_authentication_failed_403", got)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.NotContains(t, got, "x-ms-version")
	assert.NotContains(t, got, "88b5627a")

	bad.target, bad.body = "/devstoreaccount1/Batch", `{"PartitionKey":"p","RowKey":"r"}`
	bad.header["Content-Type"] = "application/json"
	other := h.do(bad)
	assert.Equal(t, http.StatusForbidden, other.StatusCode)
	assert.Equal(t, levelMinimal.contentType(), other.Header.Get("Content-Type"))
}

// Query Entities with $select. The Azure SDK for Python's recorded queries: $select=age%2Csex
// answered "odata.metadata":"…/$metadata#querytable9a882b8a&$select=age,sex"
// (test_query_entities_with_select), and $select=age,%20sex answered
// "…/$metadata#querytablea0953005&$select=age,%20sex": the text sent, decoded, its space kept.
// A point query's /@Element&$select= echoes the same way.
func TestGoldenRecordedSelectEcho(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("querytablea0953005")
	h.insert("querytablea0953005", `{"PartitionKey":"pk","RowKey":"rk","age":39,"sex":"male","married":true}`)
	resp := h.do(request{method: "GET", target: "/devstoreaccount1/querytablea0953005()?$select=age,%20sex"})
	got := dump(t, resp)
	golden(t, "recorded_select_echo", got)
	assert.Contains(t, got, `"odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/$metadata#querytablea0953005&$select=age,%20sex"`)

	got = body(t, h.do(request{method: "GET", target: "/devstoreaccount1/querytablea0953005()?$select=age%2Csex"}))
	assert.Contains(t, got, `$metadata#querytablea0953005&$select=age,sex"`)
	got = body(t, h.do(request{method: "GET", target: "/devstoreaccount1/querytablea0953005(PartitionKey='pk',RowKey='rk')?$select=age,%20sex"}))
	require.Contains(t, got, `$metadata#querytablea0953005/@Element&$select=age,%20sex"`)
}

// The rewriting behind the answers above, rule by rule.
func TestShortEmptyElements(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`<A></A>`, `<A />`},
		{`<A><B></B><C>x</C><D></D></A>`, `<A><B /><C>x</C><D /></A>`},
		{`<A>x</A>`, `<A>x</A>`},
		{`<A></B>`, `<A></B>`}, // not one element: left as it is
		{`<AB></B>`, `<AB></B>`},
		{`<A>&lt;/A&gt;</A>`, `<A>&lt;/A&gt;</A>`},
		{`<A></A`, `<A></A`},
		{``, ``},
	} {
		assert.Equal(t, c.want, string(shortEmptyElements([]byte(c.in))), c.in)
	}
}

func TestCorsHeaderListOrder(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"x-ms-meta-data*,x-ms-meta-target*,x-ms-meta-xyz,x-ms-meta-foo", "x-ms-meta-xyz,x-ms-meta-foo,x-ms-meta-data*,x-ms-meta-target*"},
		{" a , b* ,c", "a,c,b*"},
		{"*", "*"},
		{"", ""},
	} {
		assert.Equal(t, c.want, headerList(c.in), c.in)
	}
}

func TestFoldCaseDuplicates(t *testing.T) {
	names := func(ps []wire.Property) (out []string) {
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	props := func(ns ...string) (out []wire.Property) {
		for _, n := range ns {
			out = append(out, wire.Property{Name: n})
		}
		return out
	}
	assert.Equal(t, []string{"etag", "x"}, names(foldCaseDuplicates(props("etag", "Etag", "x", "ETAG"))))
	assert.Equal(t, []string{"Etag", "etag2"}, names(foldCaseDuplicates(props("Etag", "etag2", "eTaG"))), "the first kept, whatever its case")
	assert.Equal(t, []string{"a"}, names(foldCaseDuplicates(props("a"))))
}
