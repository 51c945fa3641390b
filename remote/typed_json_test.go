package remote_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
)

// cannedService answers every request with body: a point read's entity, or a query's page.
type cannedService struct{ body string }

func (s *cannedService) Do(req *http.Request) (*http.Response, error) {
	h := http.Header{"Content-Type": {"application/json;odata=fullmetadata"}}
	if !strings.HasSuffix(req.URL.Path, "()") { // a point read, Table(PartitionKey='p',RowKey='r')
		h.Set("ETag", `W/"datetime'2024-05-06T07%3A08%3A09.1234567Z'"`)
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(s.body)), Request: req}, nil
}

func cannedTable(t testing.TB) (*remote.Table, *cannedService) {
	svc := &cannedService{}
	c, err := remote.Dial("UseDevelopmentStorage=true", &remote.Options{ClientOptions: azcore.ClientOptions{
		Transport: svc, Retry: policy.RetryOptions{MaxRetries: -1}}})
	require.NoError(t, err)
	return c.Table("T").(*remote.Table), svc
}

// describe is v, or the error, as text that compares NaNs and pointers by value.
func describe(v everyType, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	maybe := "nil"
	if v.Maybe != nil {
		maybe = fmt.Sprint(*v.Maybe)
	}
	v.Maybe = nil
	return fmt.Sprintf("%+v Maybe=%s", v, maybe)
}

// untypedGet is GetAs as it was before remote decoded into structs: Get, then EntityAs.
func untypedGet(tbl *remote.Table) (everyType, error) {
	e, err := tbl.Get(context.Background(), "p", "r")
	if err != nil {
		return everyType{}, err
	}
	return tabula.EntityAs[everyType](e)
}

// untypedQuery is QueryAs as it was: QueryAll, then EntityAs, to the first error.
func untypedQuery(tbl *remote.Table) []string {
	var out []string
	for e, err := range tbl.QueryAll(context.Background(), tabula.Query{}) {
		var v everyType
		if err == nil {
			v, err = tabula.EntityAs[everyType](e)
		}
		if out = append(out, describe(v, err)); err != nil {
			break
		}
	}
	return out
}

func typedQuery(tbl *remote.Table) []string {
	var out []string
	for v, err := range tabula.QueryAs[everyType](context.Background(), tbl, tabula.Query{}) {
		if out = append(out, describe(v, err)); err != nil {
			break
		}
	}
	return out
}

// compareJSON requires GetAs and QueryAs on a service answering entity (and a page of it
// between two others) to read what the untyped reads converted with EntityAs do.
func compareJSON(t *testing.T, tbl *remote.Table, svc *cannedService, entity string) {
	t.Helper()
	svc.body = entity
	want := describe(untypedGet(tbl))
	got := describe(tabula.GetAs[everyType](context.Background(), tbl, "p", "r"))
	require.Equal(t, want, got, "GetAs of %s", entity)
	svc.body = `{"value":[{"PartitionKey":"p","RowKey":"a","Small":1},` + entity + `,{"PartitionKey":"p","RowKey":"z"}]}`
	require.Equal(t, untypedQuery(tbl), typedQuery(tbl), "QueryAs of %s", entity)
}

// jsonMembers are members a service's entity may hold, for everyType's fields and beyond:
// every EDM type, annotated and not (Int64 as a string, as the service writes it), values
// that do not fit their field, odata bookkeeping, and nulls.
var jsonMembers = []string{
	`"Text":"hello"`, `"Text":""`, `"Text":"\u00e9\ud83d\ude00"`, `"Text":5`, `"Text@odata.type":"Edm.String"`,
	`"Blob":"AAEC/w=="`, `"Blob@odata.type":"Edm.Binary"`, `"Blob":""`,
	`"Flag":true`, `"Flag":false`, `"Flag":"true"`,
	`"When":"2024-02-29T01:02:03.1234567Z"`, `"When":"1601-01-01T00:00:00Z"`, `"When":"9999-12-31T23:59:59.9999999Z"`,
	`"When@odata.type":"Edm.DateTime"`,
	`"Ratio":1.5`, `"Ratio":5`, `"Ratio":"NaN"`, `"Ratio":"-Infinity"`, `"Ratio@odata.type":"Edm.Double"`, `"Ratio":1e308`,
	`"ID":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"`, `"ID@odata.type":"Edm.Guid"`, `"ID":"0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"`,
	`"IDText":"00000000-0000-0000-0000-0000000000ab"`, `"IDText@odata.type":"Edm.Guid"`,
	`"Small":-2147483648`, `"Small":2147483647`, `"Small":2147483648`, `"Small":"7"`, `"Small@odata.type":"Edm.Int64"`,
	`"Big":"9223372036854775807"`, `"Big":"-9223372036854775808"`, `"Big@odata.type":"Edm.Int64"`, `"Big":12`,
	`"Narrow":-1`, `"Narrow":"3"`, `"Narrow@odata.type":"Edm.Int32"`,
	`"Maybe":"42"`, `"Maybe@odata.type":"Edm.Int64"`, `"Maybe":null`,
	`"Extra":"x"`, `"Extra@odata.type":"Edm.Guid"`, `"Extra":"AQ=="`, `"Zed":1.25`, `"Abc":null`,
	`"Timestamp":"2024-05-06T07:08:09.1234567Z"`, `"odata.etag":"W/\"datetime'2024-05-06T07%3A08%3A09.1234567Z'\""`,
	`"odata.metadata":"https://x/$metadata#T/@Element"`, `"Timestamp@odata.type":"Edm.DateTime"`,
}

// TestTypedRemoteDecodesJSONAsUntyped: the typed reads of package remote decode the
// service's JSON straight into structs (internal/entitysink), and must read every entity
// as Get and EntityAs do: the same struct or the same error, member for member, whatever
// the annotations, for GetAs and for QueryAs (a misfit ending the iteration after the
// entities before it).
func TestTypedRemoteDecodesJSONAsUntyped(t *testing.T) {
	tbl, svc := cannedTable(t)
	r := rand.New(rand.NewPCG(36, 4))
	for range 600 {
		members := []string{`"PartitionKey":"p"`, `"RowKey":"r"`}
		seen := map[string]bool{}
		for range r.IntN(10) {
			m := jsonMembers[r.IntN(len(jsonMembers))]
			if name, _, _ := strings.Cut(m, ":"); !seen[name] {
				seen[name] = true
				members = append(members, m)
			}
		}
		r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		compareJSON(t, tbl, svc, "{"+strings.Join(members, ",")+"}")
	}
	// Bodies that are not an entity the service writes.
	for _, body := range []string{`{}`, `{"PartitionKey":"p","RowKey":"r","Text":"a","Text":"b"}`, `[1]`, `{"a":{"b":1}}`,
		`{"PartitionKey":"p","RowKey":"r","Big":"x","Big@odata.type":"Edm.Int64"}`, ``} {
		compareJSON(t, tbl, svc, body)
	}
}

// TestTypedRemoteThroughAWrapper: a TableAPI wrapping the remote table keeps its own
// behaviour under the typed reads; the remote table decodes into structs only for a typed
// read called on it.
func TestTypedRemoteThroughAWrapper(t *testing.T) {
	tbl, svc := cannedTable(t)
	svc.body = `{"PartitionKey":"p","RowKey":"r","Small":1}`
	got, err := tabula.GetAs[everyType](context.Background(), renaming{tbl}, "p", "r")
	require.NoError(t, err)
	assert.Equal(t, int32(2), got.Small, "the wrapper's Get was used")
}

// renaming is a TableAPI that changes what the remote table returns.
type renaming struct{ *remote.Table }

func (w renaming) Get(ctx context.Context, pk, rk string, selected ...string) (tabula.Entity, error) {
	e, err := w.Table.Get(ctx, pk, rk, selected...)
	if err == nil {
		e.Properties["Small"] = tabula.Int32(2)
	}
	return e, err
}

// FuzzTypedJSON feeds arbitrary entity bodies to the typed reads of the remote backend,
// which must read them as the untyped reads and EntityAs do.
func FuzzTypedJSON(f *testing.F) {
	for _, m := range jsonMembers {
		f.Add(`{"PartitionKey":"p","RowKey":"r",` + m + `}`)
	}
	f.Add(`{"PartitionKey":"p","RowKey":"r","Big":"1","Big@odata.type":"Edm.Int64","Small":"x","Narrow":"y"}`)
	tbl, svc := cannedTable(f)
	f.Fuzz(func(t *testing.T, body string) {
		compareJSON(t, tbl, svc, body)
	})
}
