package server

import (
	"context"
	"encoding/base64"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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

func TestConsoleInBrowser(t *testing.T) {
	browser := chromiumPath(t)
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short: the browser test takes a few seconds")
	}
	db, _, refused := hotLoad(t)
	s, err := New(db, nil)
	require.NoError(t, err)
	srv := httptest.NewServer(s) // 127.0.0.1, a random port
	defer srv.Close()

	profile, err := os.MkdirTemp("", "tabula-chromium-")
	require.NoError(t, err)
	// Chromium's helpers may still be writing as the browser exits; leftovers are harmless.
	defer func() { _ = os.RemoveAll(profile) }()
	var chromiumLog strings.Builder
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
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	defer func() {
		if t.Failed() {
			t.Logf("chromium output:\n%s", chromiumLog.String())
		}
	}()
	// The first Run starts the browser, which lives as long as browserCtx: no timeout on it.
	require.NoError(t, chromedp.Do(browserCtx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		auth := base64.StdEncoding.EncodeToString([]byte(DevelopmentAccountName + ":" + DevelopmentAccountKey))
		_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
			Headers: network.Headers{"Authorization": "Basic " + auth},
		})
		return err
	})))
	ctx, cancel := context.WithTimeout(browserCtx, 90*time.Second)
	defer cancel()

	eval := func(expr string) any {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr, chromedp.EvalAwaitPromise))
		require.NoError(t, err, expr)
		return v
	}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+ReservedPrefix+"console/"),
		chromedp.WaitVisible(chromedp.CSS(`section[data-table="orders"] rect.range`)),
	))

	// The hot range is marked hot, and only it.
	hot := eval(`[...document.querySelectorAll('section[data-table="orders"] rect.range.hot')].map((r) => r.getAttribute('data-low'))`)
	assert.Equal(t, []any{"h"}, hot, `the range ["h", "p") holding PartitionKey "hot" is hot`)
	assert.Equal(t, `"hot"`, eval(`document.querySelector('section[data-table="orders"] tr.hot-key.hot td.key').textContent`))
	assert.Equal(t, float64(0), eval(`document.querySelectorAll('section[data-table="users"] .hot').length`))

	// Throttling appears under enforce mode: in the account's figures and chart, and on
	// the hot range.
	assert.Equal(t, "enforce", eval(`document.getElementById('mode').textContent`))
	assert.Equal(t, intText(refused), eval(`document.getElementById('throttled-partition').textContent`))
	assert.Equal(t, strconv.Itoa(refused), eval(`document.getElementById('account-throttling').getAttribute('data-total')`))
	assert.Positive(t, eval(`document.querySelectorAll('#account-throttling rect.bar.partition').length`))
	assert.Equal(t, []any{"h"}, eval(`[...document.querySelectorAll('section[data-table="orders"] rect.range.throttled')].map((r) => r.getAttribute('data-low'))`))

	// A key that is markup shows as text.
	assert.Equal(t, float64(0), eval(`document.querySelectorAll('main i').length`), "no element made from a key")
	assert.Equal(t, true, eval(`[...document.querySelectorAll('td.key')].some((td) => td.textContent === '"<i>&amp;\'\\""')`))

	// A split shows as it happens, at the next poll.
	ok, err := db.Table("orders").SplitRangePartition(context.Background(), "c")
	require.NoError(t, err)
	require.True(t, ok)
	splitLog := `[...document.querySelectorAll('#event-log li')].map((li) => li.textContent).find((s) => s.includes('split at'))`
	assert.Contains(t, eval(strings.Replace(waitFor, "%s", splitLog, 1)),
		`orders: split at "c"`)

	// A full-scan query shows as FullScan, with its cost.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("explain-table"), "orders"),
		chromedp.SetValue(chromedp.ID("explain-filter"), "N gt 290"),
		chromedp.Click(chromedp.CSS(`#explain-form button`)),
		chromedp.WaitVisible(chromedp.ID("plan-kind")),
	))
	assert.Equal(t, "FullScan", eval(`document.getElementById('plan-kind').textContent`))
	assert.Equal(t, "FullScan", eval(`document.getElementById('plan-service').textContent`))
	assert.Equal(t, "401 ÷ 9", eval(`document.getElementById('plan-ratio').textContent`))

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
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
