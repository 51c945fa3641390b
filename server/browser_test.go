package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromiumPath finds Debian's chromium (or the browser $TABULA_CHROMIUM names). Locally the
// browser test skips without one; in CI ($CI set, as .ci/run sets it, which installs
// chromium) a missing browser fails the test instead.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("TABULA_CHROMIUM"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set but no chromium is installed: .ci/run installs Debian's chromium")
	}
	t.Skip("no chromium on PATH (apt-get install chromium, or set TABULA_CHROMIUM); CI runs this test")
	return ""
}

// waitFor is JavaScript that resolves once the predicate holds, checked at each change of
// the DOM: the console redraws on every poll, so there is no fixed delay to guess.
const waitFor = `new Promise((resolve) => {
  const check = () => { const v = (%s); if (v) { obs.disconnect(); resolve(v); } };
  const obs = new MutationObserver(check);
  obs.observe(document.body, { childList: true, subtree: true, characterData: true, attributes: true });
  check();
})`

// The console is tested against a real `tabula serve` process, driven as a user in any
// language would drive it: the Azure SDK writes the workload, the management API switches the
// limits to enforce, and the page is read in Debian's chromium. A second, in-process variant
// covers what a process cannot be made to do on demand: see consoleSplitInProcess.
func TestConsoleInBrowser(t *testing.T) {
	browser := chromiumPath(t)
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short: the browser test takes a few seconds")
	}
	browserCtx := startChromium(t, browser)
	t.Run("tabula serve", func(t *testing.T) { consoleOfServe(t, browserCtx) })
	t.Run("split in process", func(t *testing.T) { consoleSplitInProcess(t, browserCtx) })
}

// startChromium starts a headless chromium for the test's lifetime and returns the context
// whose children open tabs in it.
func startChromium(t *testing.T, browser string) context.Context {
	t.Helper()
	profile, err := os.MkdirTemp("", "tabula-chromium-")
	require.NoError(t, err)
	// Chromium's helpers may still be writing as the browser exits; leftovers are harmless.
	t.Cleanup(func() { _ = os.RemoveAll(profile) })
	var chromiumLog lockedBuilder
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(&chromiumLog),
	)
	t.Cleanup(cancelAlloc)
	browserCtx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chromium output:\n%s", chromiumLog.String())
		}
	})
	// The first Run starts the browser, which lives as long as browserCtx: no timeout on it.
	require.NoError(t, chromedp.Do(browserCtx))
	return browserCtx
}

// lockedBuilder collects chromium's output, written from chromedp's goroutine.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newTab opens a tab that sends the development account's key with every request, as the
// console's sign-in does, and an eval that runs JavaScript in it (awaiting promises).
func newTab(t *testing.T, browserCtx context.Context) (context.Context, func(expr string) any) {
	t.Helper()
	tab, cancelTab := chromedp.NewContext(browserCtx)
	t.Cleanup(cancelTab)
	require.NoError(t, chromedp.Do(tab, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		auth := base64.StdEncoding.EncodeToString([]byte(DevelopmentAccountName + ":" + DevelopmentAccountKey))
		_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
			Headers: network.Headers{"Authorization": "Basic " + auth},
		})
		return err
	})))
	ctx, cancel := context.WithTimeout(tab, 90*time.Second)
	t.Cleanup(cancel)
	eval := func(expr string) any {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr, chromedp.EvalAwaitPromise))
		require.NoError(t, err, expr)
		return v
	}
	return ctx, eval
}

// until is JavaScript that resolves, at the first change of the DOM after which the predicate
// holds, to the value of snapshot read in the same turn: the console redraws everything on
// each poll, so the values asserted on all come from one report.
func until(predicate, snapshot string) string {
	return strings.Replace(waitFor, "%s", "("+predicate+") && ("+snapshot+")", 1)
}

// markupKey is a PartitionKey that is HTML: the console must show it as text.
const markupKey = "<i>&amp;'\""

func consoleOfServe(t *testing.T, browserCtx context.Context) {
	// Ten entities/s per PartitionKey: a transaction of 100 entities puts a key ten seconds in
	// debt, so the workload is throttled however slowly the machine runs, and a key that offers
	// 100 entities within the ten-second window is hot.
	const rate = 10
	srv := startServe(t, "--silent", "--partition-rate", strconv.Itoa(rate))
	// The workload's bound, should the server never refuse what the test waits to see refused.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc, err := aztables.NewServiceClientFromConnectionString(srv.connStr, &aztables.ClientOptions{
		// No retries: every ServerBusy reaches the test, which counts the entities refused.
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	require.NoError(t, err)
	entity := func(pk, rk string, props map[string]any) []byte {
		m := map[string]any{"PartitionKey": pk, "RowKey": rk}
		maps.Copy(m, props)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	busy := func(err error) bool {
		var re *azcore.ResponseError
		require.ErrorAs(t, err, &re)
		require.Equal(t, http.StatusServiceUnavailable, re.StatusCode, "%v", err)
		require.Equal(t, "ServerBusy", re.ErrorCode)
		return true
	}
	transaction := func(kind aztables.TransactionType, pk string, n int) []aztables.TransactionAction {
		actions := make([]aztables.TransactionAction, n)
		for i := range actions {
			actions[i] = aztables.TransactionAction{ActionType: kind, Entity: entity(pk, fmt.Sprintf("%03d", i), nil)}
		}
		return actions
	}

	// The data, with the limits observed (serve's default): one entity per key, nothing hot.
	orders, users := svc.NewClient("orders"), svc.NewClient("users")
	for _, c := range []*aztables.Client{orders, users} {
		_, err := c.CreateTable(ctx, nil)
		require.NoError(t, err)
	}
	for i := range 300 {
		_, err := orders.AddEntity(ctx, entity(fmt.Sprintf("%c-%03d", 'a'+i%26, i), "1", map[string]any{"N": i}), nil)
		require.NoError(t, err)
	}
	for i := range 40 {
		_, err := users.AddEntity(ctx, entity(fmt.Sprintf("user-%02d", i), "profile", nil), nil)
		require.NoError(t, err)
	}

	tab, eval := newTab(t, browserCtx)
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(srv.console),
		chromedp.WaitVisible(chromedp.CSS(`section[data-table="orders"] rect.range`)),
	))
	assert.Equal(t, "observe", eval(`document.getElementById('mode').textContent`))

	// Enforce, through the management API as any language would switch it.
	req, err := http.NewRequest(http.MethodPut, srv.reserved("api/limits"), strings.NewReader(`{"mode":"enforce"}`))
	require.NoError(t, err)
	req.SetBasicAuth(DevelopmentAccountName, DevelopmentAccountKey)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "PUT limits: %s", body)
	var limits limitsJSON
	require.NoError(t, json.Unmarshal(body, &limits))
	require.Equal(t, limitsJSON{Mode: "enforce", PartitionRate: rate, PartitionBurst: rate, AccountRate: 20000, AccountBurst: 20000}, limits)

	// A key that is markup, throttled so that it is listed among the hottest keys: 50 entities
	// (half the hot rate: listed, not hot) put it five seconds in debt, and writes to it are
	// refused until then.
	refused := 0
	// (Inserts: a transaction's upsert names its key in a URL, where the Go SDK does not double
	// a single quote as it does for a single upsert, so the service could not parse it either.)
	_, err = orders.SubmitTransaction(ctx, transaction(aztables.TransactionTypeAdd, markupKey, 50), nil)
	require.NoError(t, err, "a full bucket admits a transaction larger than itself")
	for refused == 0 {
		if _, err := orders.UpsertEntity(ctx, entity(markupKey, "000", nil), nil); err != nil && busy(err) {
			refused++
		}
	}
	// The hot partition: 20 transactions of 100 upserts of PartitionKey "hot". The first is
	// admitted and puts the key ten seconds in debt; the others are refused while it lasts.
	for range 20 {
		if _, err := orders.SubmitTransaction(ctx, transaction(aztables.TransactionTypeInsertReplace, "hot", 100), nil); err != nil && busy(err) {
			refused += 100
		}
	}
	require.GreaterOrEqual(t, refused, 1+100, "the workload must be throttled")
	t.Logf("entities refused: %d", refused)

	// The console shows it at its next poll: the hot range marked hot, and the throttling.
	snap := eval(until(
		`document.getElementById('mode').textContent === 'enforce' && `+
			`document.getElementById('throttled-partition').textContent === '`+intText(refused)+`'`,
		`({
  hot: [...document.querySelectorAll('section[data-table="orders"] rect.range.hot')].map((r) => r.getAttribute('data-low')),
  ranges: document.querySelectorAll('section[data-table="orders"] rect.range').length,
  hotKey: document.querySelector('section[data-table="orders"] tr.hot-key.hot td.key').textContent,
  hotKeys: [...document.querySelectorAll('section[data-table="orders"] tr.hot-key.hot td.key')].map((td) => td.textContent),
  usersHot: document.querySelectorAll('section[data-table="users"] .hot').length,
  total: document.getElementById('account-throttling').getAttribute('data-total'),
  bars: document.querySelectorAll('#account-throttling rect.bar.partition').length,
  throttled: [...document.querySelectorAll('section[data-table="orders"] rect.range.throttled')].map((r) => r.getAttribute('data-low')),
  usersThrottled: document.querySelectorAll('section[data-table="users"] rect.range.throttled').length,
  elements: document.querySelectorAll('main i').length,
  markup: [...document.querySelectorAll('td.key')].some((td) => td.textContent === `+"`"+`"<i>&amp;'\\""`+"`"+`),
})`)).(map[string]any)

	// The hot range is marked hot, and only it: a process's tables have one range each, as the
	// balancer splits a range only after it has stayed hot for minutes.
	assert.Equal(t, float64(1), snap["ranges"])
	assert.Equal(t, []any{""}, snap["hot"], `orders' one range, holding PartitionKey "hot", is hot`)
	assert.Equal(t, `"hot"`, snap["hotKey"])
	assert.Equal(t, []any{`"hot"`}, snap["hotKeys"], "the markup key is listed for its throttling, not hot")
	assert.Equal(t, float64(0), snap["usersHot"])

	// Throttling appears under enforce mode: in the account's figures and chart, and on the
	// range.
	assert.Equal(t, strconv.Itoa(refused), snap["total"])
	assert.Positive(t, snap["bars"])
	assert.Equal(t, []any{""}, snap["throttled"])
	assert.Equal(t, float64(0), snap["usersThrottled"])

	// A key that is markup shows as text.
	assert.Equal(t, float64(0), snap["elements"], "no element made from a key")
	assert.Equal(t, true, snap["markup"])

	// A full-scan query shows as FullScan, with its cost: 300 numbered entities, the markup
	// key's 50 and the hot key's 100 examined for the 9 with N above 290.
	require.NoError(t, chromedp.Do(tab,
		chromedp.SetValue(chromedp.ID("explain-table"), "orders"),
		chromedp.SetValue(chromedp.ID("explain-filter"), "N gt 290"),
		chromedp.Click(chromedp.CSS(`#explain-form button`)),
		chromedp.WaitVisible(chromedp.ID("plan-kind")),
	))
	assert.Equal(t, "FullScan", eval(`document.getElementById('plan-kind').textContent`))
	assert.Equal(t, "FullScan", eval(`document.getElementById('plan-service').textContent`))
	assert.Equal(t, "450 ÷ 9", eval(`document.getElementById('plan-ratio').textContent`))

	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	dir := os.Getenv("TABULA_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	shot := filepath.Join(dir, "console.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot of the console: %s", shot)
}

// consoleSplitInProcess checks what `tabula serve` cannot be made to show on demand: a layout
// of several range partitions of which only the hot one is marked, and a split appearing as it
// happens. A process's balancer splits a range only after it has stayed hot for minutes of
// real time, and nothing outside the process can split one; in process, hotLoad lays out the
// ranges and runs the workload on a fake clock, and the test splits a range itself.
func consoleSplitInProcess(t *testing.T, browserCtx context.Context) {
	db, _, _ := hotLoad(t)
	s, err := New(db, nil)
	require.NoError(t, err)
	srv := httptest.NewServer(s) // 127.0.0.1, a random port
	t.Cleanup(srv.Close)

	tab, eval := newTab(t, browserCtx)
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(srv.URL+ReservedPrefix+"console/"),
		chromedp.WaitVisible(chromedp.CSS(`section[data-table="orders"] rect.range`)),
	))
	assert.Equal(t, float64(4), eval(`document.querySelectorAll('section[data-table="orders"] rect.range').length`))
	assert.Equal(t, []any{"h"}, eval(`[...document.querySelectorAll('section[data-table="orders"] rect.range.hot')].map((r) => r.getAttribute('data-low'))`),
		`of four ranges, only ["h", "p"), holding PartitionKey "hot", is hot`)
	assert.Equal(t, []any{"h"}, eval(`[...document.querySelectorAll('section[data-table="orders"] rect.range.throttled')].map((r) => r.getAttribute('data-low'))`))

	// A split shows as it happens, at the next poll.
	ok, err := db.Table("orders").SplitRangePartition(context.Background(), "c")
	require.NoError(t, err)
	require.True(t, ok)
	splitLog := `[...document.querySelectorAll('#event-log li')].map((li) => li.textContent).find((s) => s.includes('split at'))`
	assert.Contains(t, eval(until(splitLog, splitLog)), `orders: split at "c"`)
	assert.Equal(t, float64(5), eval(`document.querySelectorAll('section[data-table="orders"] rect.range').length`))
}

// intText formats n as the console does (en-US grouping).
func intText(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
