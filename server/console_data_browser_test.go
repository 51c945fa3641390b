package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// The console's data view, in Debian's chromium: list a table's entities, page forward,
// filter with the plan shown, and download the result as an interchange file that imports.
func TestConsoleDataViewInBrowser(t *testing.T) {
	path := chromiumPath(t)
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short: the browser test takes a few seconds")
	}
	db, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	orders, err := db.CreateTable(ctx, "orders")
	require.NoError(t, err)
	customers := []string{"Ada", "Grace", "Edsger", "Barbara", "Ken", "Radia", markupKey}
	for i := range 120 {
		props := tabula.Properties{
			"N": tabula.Int32(i), "Amount": tabula.Double(float64(i) * 1.25), "Customer": tabula.String(customers[i%7]),
			"Placed": tabula.DateTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 97 * time.Minute)),
			"Ref":    tabula.Int64(int64(i) << 40), "Express": tabula.Boolean(i%3 == 0),
		}
		if i%10 == 0 {
			props["Id"] = tabula.Guid{byte(i), 0x8f, 0xad, 0x5b, 0xd9, 0xcb, 0x46, 0x9f, 0xa1, 0x65, 0x70, 0x86, 0x77, 0x28, 0x95, 0x0e}
			props["Note"] = tabula.Binary("ten")
		}
		_, err := orders.Insert(ctx, tabula.Entity{PartitionKey: fmt.Sprintf("store-%02d", i%5), RowKey: fmt.Sprintf("order-%04d", i), Properties: props})
		require.NoError(t, err)
	}
	users, err := db.CreateTable(ctx, "users")
	require.NoError(t, err)
	for i, age := range []tabula.Property{tabula.Int32(30), tabula.Int64(1 << 40)} {
		_, err := users.Insert(ctx, tabula.Entity{PartitionKey: "u", RowKey: fmt.Sprint(i), Properties: tabula.Properties{"Age": age}})
		require.NoError(t, err)
	}
	s, err := New(db, nil)
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)

	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(DevelopmentAccountName, DevelopmentAccountKey)
	signedIn := u.String()

	browserCtx := startChromium(t, path)
	// A tab without the credential header newTab adds: the browser signs in from the URL's
	// credentials and answers each challenge from its cache, as after a sign-in prompt, so
	// that the download (which the browser, not the page, fetches) is signed in too.
	tab, cancelTab := chromedp.NewContext(browserCtx)
	t.Cleanup(cancelTab)
	tab, cancel := context.WithTimeout(tab, 90*time.Second)
	t.Cleanup(cancel)
	eval := func(expr string) any {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[any](expr, chromedp.EvalAwaitPromise))
		require.NoError(t, err, expr)
		return v
	}
	downloads := t.TempDir()
	progress := chromedp.Events(tab, browser.DownloadProgress)
	require.NoError(t, chromedp.Do(tab,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			events := true
			_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: downloads, EventsEnabled: &events})
			return err
		}),
		chromedp.Navigate(signedIn+ReservedPrefix+"console/#data"),
		chromedp.WaitVisible(chromedp.ID("data-form")),
	))
	assert.Equal(t, true, eval(`document.getElementById('load-view').hidden`), "the data view replaces the load view")

	// It opens on rows, of the busiest table (the most entities, with no load), which the
	// load view lists first too.
	opened := eval(until(`document.getElementById('data-result').getAttribute('data-page') === '1' && !document.getElementById('data-result').hasAttribute('aria-busy')`, `({
  table: document.getElementById('data-table').value,
  rows: document.querySelectorAll('#data-grid tr.entity').length,
  order: [...document.querySelectorAll('#tables section[data-table]')].map((s) => s.getAttribute('data-table')),
})`)).(map[string]any)
	assert.Equal(t, "orders", opened["table"])
	assert.Equal(t, float64(50), opened["rows"], "rows on open, without pressing Query")
	assert.Equal(t, []any{"orders", "users"}, opened["order"])

	// List: the first page of 50, each property with its type.
	require.NoError(t, chromedp.Do(tab,
		chromedp.SetValue(chromedp.ID("data-table"), "orders"),
		chromedp.SetValue(chromedp.ID("data-top"), "50"),
		chromedp.Click(chromedp.ID("data-run")),
	))
	page := func(n string) map[string]any {
		return eval(until(`document.getElementById('data-result').getAttribute('data-page') === '`+n+`' && !document.getElementById('data-result').hasAttribute('aria-busy')`, `({
  rows: document.querySelectorAll('#data-grid tr.entity').length,
  first: [...document.querySelectorAll('#data-grid tr.entity:first-child td.key')].slice(0, 2).map((td) => td.textContent),
  label: document.getElementById('data-page').textContent,
  columns: [...document.querySelectorAll('#data-grid th.prop')].map((th) => th.textContent),
  mixed: [...document.querySelectorAll('#data-grid td.val .type')].map((s) => s.textContent),
  types: [...document.querySelectorAll('#data-grid tr.entity:first-child td.val')].map((td) => td.getAttribute('data-name') + ' ' + td.getAttribute('data-type')),
  ref: document.querySelector('#data-grid tr.entity:nth-child(2) td[data-name="Ref"] .v')?.textContent,
  prev: document.getElementById('data-prev').disabled,
  next: document.getElementById('data-next').disabled,
  elements: document.querySelectorAll('#data-grid i').length,
})`)).(map[string]any)
	}
	p1 := page("1")
	assert.Equal(t, float64(50), p1["rows"])
	assert.Equal(t, []any{`"store-00"`, `"order-0000"`}, p1["first"])
	assert.Equal(t, "page 1 · entities 1–50", p1["label"])
	// A column of one type names it in its header.
	assert.Equal(t, []any{"Amount Double", "Customer String", "Express Boolean", "Id Guid", "N Int32", "Note Binary", "Placed DateTime", "Ref Int64"}, p1["columns"])
	assert.Empty(t, p1["mixed"], "no column of mixed types")
	assert.Equal(t, []any{"Amount Edm.Double", "Customer Edm.String", "Express Edm.Boolean", "Id Edm.Guid", "N Edm.Int32",
		"Note Edm.Binary", "Placed Edm.DateTime", "Ref Edm.Int64"}, p1["types"])
	assert.Equal(t, "5497558138880", p1["ref"], "store-00's second order, N 5: an Int64 shown in full")
	assert.Equal(t, true, p1["prev"])
	assert.Equal(t, false, p1["next"])
	assert.Equal(t, float64(0), p1["elements"], "a key or value that is markup shows as text")

	// Page forward, and back.
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.ID("data-next"))))
	p2 := page("2")
	assert.Equal(t, float64(50), p2["rows"])
	assert.Equal(t, "page 2 · entities 51–100", p2["label"])
	assert.Equal(t, false, p2["prev"])
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.ID("data-next"))))
	p3 := page("3")
	assert.Equal(t, float64(20), p3["rows"])
	assert.Equal(t, "page 3 · entities 101–120 (last page)", p3["label"])
	assert.Equal(t, true, p3["next"])
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.ID("data-prev"))))
	assert.Equal(t, p2["first"], page("2")["first"])

	// Filter, with its plan: a range of one partition, 24 examined for the 12 returned.
	require.NoError(t, chromedp.Do(tab,
		chromedp.SetValue(chromedp.ID("data-filter"), "PartitionKey eq 'store-00' and N ge 60"),
		chromedp.Click(chromedp.ID("data-run")),
	))
	pf := page("1")
	assert.Equal(t, float64(12), pf["rows"])
	assert.Equal(t, []any{`"store-00"`, `"order-0060"`}, pf["first"])
	assert.Equal(t, "page 1 · entities 1–12 (last page)", pf["label"])
	plan := eval(until(`document.getElementById('data-plan-kind')`, `({
  kind: document.getElementById('data-plan-kind').textContent,
  service: document.getElementById('data-plan-service').textContent,
  ratio: document.getElementById('data-plan-ratio').textContent,
})`)).(map[string]any)
	assert.Equal(t, map[string]any{"kind": "RowRange", "service": "RowRange", "ratio": "24 ÷ 12"}, plan)

	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	dir := os.Getenv("TABULA_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	shot := filepath.Join(dir, "console-data.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot of the data view: %s", shot)

	// Download: the filtered entities as an interchange file, which imports.
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.ID("data-download"))))
	var file string
	for ev, err := range progress {
		require.NoError(t, err)
		if ev.State == browser.DownloadProgressStateInProgress {
			continue
		}
		require.Equal(t, browser.DownloadProgressStateCompleted, ev.State)
		file = filepath.Join(downloads, ev.GUID)
		break
	}
	body, err := os.ReadFile(file)
	require.NoError(t, err)
	copyDB, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = copyDB.Close() })
	imported, err := copyDB.Import(ctx, bytes.NewReader(body), nil)
	require.NoError(t, err, "%s", body)
	assert.Equal(t, int64(12), imported.Entities)
	e, err := copyDB.Table("orders").Get(ctx, "store-00", "order-0060")
	require.NoError(t, err)
	assert.Equal(t, tabula.Int64(60<<40), e.Properties["Ref"])
	assert.Equal(t, tabula.Double(60*1.25), e.Properties["Amount"])

	// A column of mixed types tags each value with its own.
	eval(`document.getElementById('data-filter').value = ''`)
	require.NoError(t, chromedp.Do(tab,
		chromedp.SetValue(chromedp.ID("data-table"), "users"),
		chromedp.Click(chromedp.ID("data-run")),
	))
	pu := page("1")
	assert.Equal(t, float64(2), pu["rows"])
	assert.Equal(t, []any{"Age mixed"}, pu["columns"])
	assert.Equal(t, []any{"Int32", "Int64"}, pu["mixed"])

	// A table that does not exist: the error, and nothing to download.
	require.NoError(t, chromedp.Do(tab,
		chromedp.SetValue(chromedp.ID("data-table"), "nosuch"),
		chromedp.Click(chromedp.ID("data-run")),
	))
	assert.Contains(t, eval(until(`document.getElementById('data-result').getAttribute('data-page') === 'error'`,
		`document.getElementById('data-error').textContent`)), "TableNotFound")
	assert.Equal(t, true, eval(`document.getElementById('data-download').hidden`))
	assert.Equal(t, float64(1), eval(until(`!document.querySelector('#data-explain .note')`,
		`document.querySelectorAll('#data-view .error').length`)), "the error is said once, not again in the plan's box")
}
