package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
)

// loadClock is the injected clock of the load tests: it moves only when the workload says.
type loadClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *loadClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *loadClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// hotLoad is a DB under a hot-partition workload on a fake clock: table "orders" holds
// cold data in four range partitions, one starting at a PartitionKey that is markup
// ("<i>&amp;'\""), and PartitionKey "hot" has been written at 2,600 then 3,400 entities/s,
// over its 2,000/s target, for 10 s each with the limits enforced; table "users" holds
// cold data.
func hotLoad(t testing.TB) (*tabula.DB, *loadClock, int) {
	t.Helper()
	clk := &loadClock{t: time.Date(2024, 5, 6, 7, 0, 0, 0, time.UTC)}
	db, err := tabula.OpenInMemory(&tabula.Options{Clock: clk.Now})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	orders, err := db.CreateTable(ctx, "orders")
	require.NoError(t, err)
	for _, b := range []string{"<i>&amp;'\"", "h", "p"} {
		ok, err := orders.SplitRangePartition(ctx, b)
		require.NoError(t, err)
		require.True(t, ok)
	}
	for i := range 300 {
		pk := fmt.Sprintf("%c-%03d", 'a'+i%26, i)
		_, err := orders.Insert(ctx, tabula.Entity{PartitionKey: pk, RowKey: "1", Properties: tabula.Properties{"N": tabula.Int32(int32(i))}})
		require.NoError(t, err)
	}
	_, err = orders.Insert(ctx, tabula.Entity{PartitionKey: "<i>&amp;'\"", RowKey: "x"})
	require.NoError(t, err)
	users, err := db.CreateTable(ctx, "users")
	require.NoError(t, err)
	for i := range 40 {
		_, err := users.Insert(ctx, tabula.Entity{PartitionKey: fmt.Sprintf("user-%02d", i), RowKey: "profile"})
		require.NoError(t, err)
	}

	db.SetLimitMode(partition.LimitEnforce)
	// Transactions of 100 upserts: the limits count entities, and this keeps the test cheap.
	batch := make([]tabula.Action, 100)
	for i := range batch {
		batch[i] = tabula.Action{Kind: tabula.ActionUpsert, Entity: tabula.Entity{PartitionKey: "hot", RowKey: fmt.Sprintf("%03d", i)}}
	}
	refused := 0
	for _, perSecond := range []int{26, 34} { // 2,600 then 3,400 entities/s, 10 s each
		for range perSecond * 10 {
			if _, err := orders.SubmitTransaction(ctx, batch); err != nil {
				require.ErrorIs(t, err, tabula.ErrServerBusy)
				refused += len(batch)
			}
			clk.Advance(time.Second / time.Duration(perSecond))
		}
	}
	require.Positive(t, refused, "the workload must be throttled")
	return db, clk, refused
}

// getReserved serves a GET under ReservedPrefix with the development account's key.
func getReserved(t testing.TB, h http.Handler, path string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.SetBasicAuth(DevelopmentAccountName, DevelopmentAccountKey)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func decodeJSON[T any](t testing.TB, res *http.Response) T {
	t.Helper()
	var v T
	require.Equal(t, "application/json; charset=utf-8", res.Header.Get("Content-Type"))
	require.NoError(t, json.NewDecoder(res.Body).Decode(&v))
	return v
}

func TestReportJSON(t *testing.T) {
	db, _, refused := hotLoad(t)
	s, err := New(db, nil)
	require.NoError(t, err)

	res := getReserved(t, s, ReservedPrefix+"api/report")
	require.Equal(t, http.StatusOK, res.StatusCode)
	rep := decodeJSON[reportJSON](t, res)
	assert.Equal(t, "enforce", rep.Mode)
	assert.Equal(t, 2000.0, rep.PartitionRate)
	assert.Equal(t, 10.0, rep.HistoryIntervalSeconds)
	assert.Equal(t, int64(refused), rep.ThrottledPartition)
	require.Len(t, rep.PartitionHistory, partition.HistoryLen)
	require.Len(t, rep.AccountHistory, partition.HistoryLen)
	var sum int64
	for _, n := range rep.PartitionHistory {
		sum += n
	}
	assert.Equal(t, int64(refused), sum, "the history holds every throttled entity of the last minutes")

	require.Len(t, rep.Tables, 2)
	orders := rep.Tables[0]
	assert.Equal(t, "orders", orders.Name)
	assert.Equal(t, int64(301+100), orders.Entities)
	require.Len(t, orders.Ranges, 4)
	var hot []string
	for _, r := range orders.Ranges {
		if r.Hot {
			hot = append(hot, r.Low)
			assert.Equal(t, "#e53935", r.Color)
			assert.Positive(t, r.Throttled)
		} else {
			assert.Zero(t, r.Throttled)
		}
		assert.Len(t, r.History, partition.HistoryLen)
	}
	assert.Equal(t, []string{"h"}, hot, `only the range ["h", "p") holding "hot" is hot`)
	require.NotEmpty(t, orders.HotKeys)
	assert.Equal(t, "hot", orders.HotKeys[0].PartitionKey)
	assert.True(t, orders.HotKeys[0].Hot)

	svg := getReserved(t, s, ReservedPrefix+"api/report?format=svg")
	assert.Equal(t, "image/svg+xml", svg.Header.Get("Content-Type"))
	body, _ := io.ReadAll(svg.Body)
	assert.Contains(t, string(body), `class="range hot throttled"`)

	assert.Equal(t, http.StatusBadRequest, getReserved(t, s, ReservedPrefix+"api/report?format=png").StatusCode)
}

func TestExplain(t *testing.T) {
	db, _, _ := hotLoad(t)
	db.SetLimitMode(partition.LimitObserve)
	s, err := New(db, nil)
	require.NoError(t, err)
	explain := func(table, filter string) (*http.Response, explainJSON) {
		res := getReserved(t, s, ReservedPrefix+"api/explain?table="+table+"&filter="+urlQueryEscape(filter))
		if res.StatusCode != http.StatusOK {
			return res, explainJSON{}
		}
		return res, decodeJSON[explainJSON](t, res)
	}

	_, full := explain("orders", "N gt 290")
	assert.Equal(t, "FullScan", full.Plan)
	assert.Equal(t, "FullScan", full.Service)
	assert.Equal(t, 401, full.Scanned, "a full scan examines every entity")
	assert.Equal(t, 9, full.Returned)
	assert.InDelta(t, 401.0/9, full.Ratio, 1e-9)

	_, point := explain("orders", "PartitionKey eq 'a-000' and RowKey eq '1'")
	assert.Equal(t, "Point", point.Plan)
	assert.Equal(t, 1, point.Scanned)
	assert.Equal(t, 1, point.Returned)
	assert.Equal(t, 1.0, point.Ratio)
	assert.Equal(t, `Point PartitionKey = 'a-000', RowKey = '1'`, point.Detail)

	_, multi := explain("orders", "PartitionKey eq 'a-000' or PartitionKey eq 'b-001'")
	assert.Equal(t, "MultiRange", multi.Plan)
	assert.Equal(t, "FullScan", multi.Service, "the service scans for an OR of keys")

	res, _ := explain("orders", "N gt")
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Contains(t, decodeJSON[map[string]string](t, res)["error"], "N gt")
	res, _ = explain("missing", "")
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = explain("", "")
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)

	// Under enforced limits a page on the throttled key is refused; the plan still shows.
	db.SetLimitMode(partition.LimitEnforce)
	hot := db.Table("orders")
	drained := false
	for range 2100 { // the clock stands still: the bucket (2,000) empties
		if _, err := hot.Upsert(context.Background(), tabula.Entity{PartitionKey: "hot", RowKey: "000"}, tabula.Replace); err != nil {
			require.ErrorIs(t, err, tabula.ErrServerBusy)
			drained = true
			break
		}
	}
	require.True(t, drained)
	_, busy := explain("orders", "PartitionKey eq 'hot'")
	assert.Equal(t, "RowRange", busy.Plan)
	assert.Contains(t, busy.RunError, "ServerBusy")
	assert.Contains(t, busy.RunError, "tabula serve --limits", "the management API names the flag, not the Go option")
	assert.NotContains(t, busy.RunError, "Options.")
}

func urlQueryEscape(s string) string {
	return strings.NewReplacer("%", "%25", " ", "%20", "'", "%27", "&", "%26", "#", "%23", "+", "%2B").Replace(s)
}

func TestReportIsReadOnly(t *testing.T) {
	s, err := New(newHarness(t, nil).db, nil)
	require.NoError(t, err)
	for _, path := range []string{"api/report", "api/explain?table=t", "console/"} {
		r := httptest.NewRequest(http.MethodPost, ReservedPrefix+path, strings.NewReader("{}"))
		r.SetBasicAuth(DevelopmentAccountName, DevelopmentAccountKey)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		assert.Equal(t, http.StatusMethodNotAllowed, w.Code, path)
	}
}

func TestExplainSeesOnlyTheSignedInAccountsTables(t *testing.T) {
	db := newHarness(t, nil).db
	other := Account{Name: "other", Keys: []string{DevelopmentAccountKey}}
	h, err := NewConsoleHandler(db, &Options{Accounts: []Account{DevelopmentAccount(), other}})
	require.NoError(t, err)
	_, err = db.Namespace("other").CreateTable(context.Background(), "Orders")
	require.NoError(t, err)

	explain := func(account string) int {
		r := httptest.NewRequest(http.MethodGet, "/api/explain?table=Orders&filter="+url.QueryEscape("PartitionKey eq 'a'"), nil)
		r.SetBasicAuth(account, DevelopmentAccountKey)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	assert.Equal(t, http.StatusOK, explain("other"), "the account that holds the table")
	assert.Equal(t, http.StatusNotFound, explain(DevelopmentAccountName), "another account's table is not there")
}
