package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

type dataProperty struct{ Name, Type, Value string }

type dataEntity struct {
	PartitionKey, RowKey, Timestamp, ETag string
	Properties                            []dataProperty
}

type dataPage struct {
	Table, Filter string
	Entities      []dataEntity
	Next          *struct{ NextPartitionKey, NextRowKey string }
	Error         string
}

// dataServer is a running server (the development account on the root namespace) with a
// table "types" holding one entity of every EDM type's edge values and a table "orders" of
// 120 entities numbered N = 0…119.
func dataServer(t *testing.T) (*tabula.DB, string) {
	t.Helper()
	db, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	types, err := db.CreateTable(ctx, "types")
	require.NoError(t, err)
	g, err := tabula.ParseGuid("0f8fad5b-d9cb-469f-a165-70867728950e")
	require.NoError(t, err)
	_, err = types.Insert(ctx, tabula.Entity{PartitionKey: "<b>pk&amp;", RowKey: "1", Properties: tabula.Properties{
		"Big": tabula.Int64(math.MaxInt64), "Small": tabula.Int32(math.MinInt32), "NaN": tabula.Double(math.NaN()),
		"Inf": tabula.Double(math.Inf(-1)), "Half": tabula.Double(0.5), "When": tabula.DateTime(time.Date(2024, 5, 6, 7, 8, 9, 1234500, time.UTC)),
		"Id": g, "Raw": tabula.Binary{0, 1, 0xfe, 0xff}, "Yes": tabula.Boolean(true), "Text": tabula.String("a \"quoted\" <i>text</i>"),
	}})
	require.NoError(t, err)
	orders, err := db.CreateTable(ctx, "orders")
	require.NoError(t, err)
	for i := range 120 {
		_, err := orders.Insert(ctx, tabula.Entity{PartitionKey: fmt.Sprintf("p%02d", i%7), RowKey: fmt.Sprintf("%03d", i),
			Properties: tabula.Properties{"N": tabula.Int32(i)}})
		require.NoError(t, err)
	}
	s, err := server.New(db, nil)
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return db, hs.URL
}

// getData calls a data resource as the development account.
func getData(t *testing.T, base, resource string, params url.Values) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+server.ReservedPrefix+"api/"+resource+"?"+params.Encode(), nil)
	require.NoError(t, err)
	req.SetBasicAuth(server.DevelopmentAccountName, server.DevelopmentAccountKey)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, body
}

func TestDataPageShowsEveryType(t *testing.T) {
	_, base := dataServer(t)
	res, body := getData(t, base, "data", url.Values{"table": {"types"}})
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	var page dataPage
	require.NoError(t, json.Unmarshal(body, &page))
	require.Len(t, page.Entities, 1)
	e := page.Entities[0]
	assert.Equal(t, "<b>pk&amp;", e.PartitionKey)
	assert.NotEmpty(t, e.Timestamp)
	assert.NotEmpty(t, e.ETag)
	assert.Nil(t, page.Next)
	// In name order, each with its EDM type and its value in the service's text form.
	assert.Equal(t, []dataProperty{
		{"Big", "Edm.Int64", "9223372036854775807"},
		{"Half", "Edm.Double", "0.5"},
		{"Id", "Edm.Guid", "0f8fad5b-d9cb-469f-a165-70867728950e"},
		{"Inf", "Edm.Double", "-Infinity"},
		{"NaN", "Edm.Double", "NaN"},
		{"Raw", "Edm.Binary", "AAH+/w=="},
		{"Small", "Edm.Int32", "-2147483648"},
		{"Text", "Edm.String", "a \"quoted\" <i>text</i>"},
		{"When", "Edm.DateTime", "2024-05-06T07:08:09.0012345Z"},
		{"Yes", "Edm.Boolean", "true"},
	}, e.Properties)
}

func TestDataPagesThroughATable(t *testing.T) {
	_, base := dataServer(t)
	var keys []string
	params := url.Values{"table": {"orders"}, "top": {"50"}}
	var sizes []int
	for {
		res, body := getData(t, base, "data", params)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
		var page dataPage
		require.NoError(t, json.Unmarshal(body, &page))
		sizes = append(sizes, len(page.Entities))
		for _, e := range page.Entities {
			keys = append(keys, e.PartitionKey+"/"+e.RowKey)
		}
		if page.Next == nil {
			break
		}
		params.Set("nextPartitionKey", page.Next.NextPartitionKey)
		params.Set("nextRowKey", page.Next.NextRowKey)
		require.Less(t, len(sizes), 10, "the pages must end")
	}
	assert.Equal(t, []int{50, 50, 20}, sizes)
	assert.Len(t, keys, 120)
	assert.IsIncreasing(t, keys, "in key order, each entity once")

	res, body := getData(t, base, "data", url.Values{"table": {"orders"}, "filter": {"N ge 100 and PartitionKey eq 'p01'"}})
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	var page dataPage
	require.NoError(t, json.Unmarshal(body, &page))
	var rows []string
	for _, e := range page.Entities {
		rows = append(rows, e.RowKey)
	}
	assert.Equal(t, []string{"106", "113"}, rows)
}

func TestDataRefusesBadRequests(t *testing.T) {
	_, base := dataServer(t)
	for _, tc := range []struct {
		name     string
		resource string
		params   url.Values
		status   int
		mention  string
	}{
		{"no table", "data", url.Values{}, 400, "table"},
		{"top 0", "data", url.Values{"table": {"orders"}, "top": {"0"}}, 400, "top"},
		{"top over 1000", "data", url.Values{"table": {"orders"}, "top": {"1001"}}, 400, "1 to 1000"},
		{"top not a number", "data", url.Values{"table": {"orders"}, "top": {"ten"}}, 400, "top"},
		{"bad filter", "data", url.Values{"table": {"orders"}, "filter": {"N gt"}}, 400, ""},
		{"bad filter, export", "data/export", url.Values{"table": {"orders"}, "filter": {"N gt"}}, 400, ""},
		{"no such table", "data", url.Values{"table": {"nosuch"}}, 404, "TableNotFound"},
		{"no such table, export", "data/export", url.Values{"table": {"nosuch"}}, 404, "TableNotFound"},
		{"another account", "data", url.Values{"table": {"orders"}, "account": {"someoneelse"}}, 403, "only itself"},
		{"no such resource", "data/import", url.Values{"table": {"orders"}}, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := getData(t, base, tc.resource, tc.params)
			assert.Equal(t, tc.status, res.StatusCode, "%s", body)
			assert.Contains(t, string(body), tc.mention)
		})
	}
	req, err := http.NewRequest(http.MethodPost, base+server.ReservedPrefix+"api/data?table=orders", nil)
	require.NoError(t, err)
	req.SetBasicAuth(server.DevelopmentAccountName, server.DevelopmentAccountKey)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
}

func TestDataExportIsAnInterchangeFile(t *testing.T) {
	_, base := dataServer(t)
	res, body := getData(t, base, "data/export", url.Values{"table": {"orders"}, "filter": {"N ge 100"}})
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	assert.Equal(t, `attachment; filename="orders.jsonl"`, res.Header.Get("Content-Disposition"))
	assert.Equal(t, "application/x-ndjson", res.Header.Get("Content-Type"))

	// The file imports: the 20 entities the filter matches, with their types.
	copyDB, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = copyDB.Close() })
	p, err := copyDB.Import(context.Background(), bytes.NewReader(body), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(20), p.Entities)
	var ns []int32
	for e, err := range copyDB.Table("orders").QueryAll(context.Background(), tabula.Query{}) {
		require.NoError(t, err)
		ns = append(ns, int32(e.Properties["N"].(tabula.Int32)))
	}
	assert.Len(t, ns, 20)
	assert.ElementsMatch(t, []int32{100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119}, ns)

	// Every EDM type round-trips through the download.
	res, body = getData(t, base, "data/export", url.Values{"table": {"types"}})
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	_, err = copyDB.Import(context.Background(), bytes.NewReader(body), nil)
	require.NoError(t, err)
	e, err := copyDB.Table("types").Get(context.Background(), "<b>pk&amp;", "1")
	require.NoError(t, err)
	assert.Equal(t, tabula.Int64(math.MaxInt64), e.Properties["Big"])
	assert.True(t, math.IsNaN(float64(e.Properties["NaN"].(tabula.Double))))
	assert.Equal(t, tabula.Binary{0, 1, 0xfe, 0xff}, e.Properties["Raw"])
}

// A client that goes away stops the export: the request's context ends it, and what was
// written has no trailer, so no reader takes it for a whole file.
func TestDataExportStopsWhenTheClientGoesAway(t *testing.T) {
	db, _ := dataServer(t)
	s, err := server.New(db, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, server.ReservedPrefix+"api/data/export?table=orders", nil)
	req.SetBasicAuth(server.DevelopmentAccountName, server.DevelopmentAccountKey)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	assert.NotContains(t, rec.Body.String(), `"@tabula":"eof"`)
	assert.Less(t, strings.Count(rec.Body.String(), "\n"), 120, "not every entity written")
}

// Each account reads its own tables alone; the administrator names account/table.
func TestDataIsScopedToTheAccount(t *testing.T) {
	a := newAdminServer(t)
	other := sdkClient(t, otherAccount.ConnectionString(a.url))
	_, err := other.CreateTable(context.Background(), "OtherSecrets", nil)
	require.NoError(t, err)
	_, err = other.NewClient("OtherSecrets").AddEntity(context.Background(), []byte(`{"PartitionKey":"k","RowKey":"r","Secret":"s"}`), nil)
	require.NoError(t, err)

	status, body := a.call(server.DevelopmentAccountName, server.DevelopmentAccountKey, "GET", "data?table=OtherSecrets", "")
	assert.Equal(t, http.StatusNotFound, status, "the development account has no such table: %s", body)
	status, body = a.call(server.DevelopmentAccountName, server.DevelopmentAccountKey, "GET", "data/export?table=OtherSecrets", "")
	assert.Equal(t, http.StatusNotFound, status, body)
	assert.NotContains(t, body, `"Secret"`)
	status, body = a.call(server.DevelopmentAccountName, server.DevelopmentAccountKey, "GET", "data?table=OtherSecrets&account="+otherAccount.Name, "")
	assert.Equal(t, http.StatusForbidden, status, body)

	status, body = a.call(otherAccount.Name, otherAccount.Keys[0], "GET", "data?table=OtherSecrets", "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"Secret"`)
	status, body = a.admin("GET", "data?table="+otherAccount.Name+"/OtherSecrets", "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"Secret"`)
	status, body = a.admin("GET", "data/export?table=OtherSecrets&account="+otherAccount.Name, "")
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"Secret"`)
	status, body = a.admin("GET", "data?table=OtherSecrets", "")
	assert.Equal(t, http.StatusBadRequest, status, body)
}
