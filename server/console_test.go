package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConsoleFiles(t *testing.T) {
	s := newHarness(t, nil).s
	for _, tc := range []struct{ path, ctype, holds string }{
		{"console/", "text/html; charset=utf-8", `<script src="console.js">`},
		{"console/index.html", "text/html; charset=utf-8", "Explain a query"},
		{"console/console.js", "text/javascript; charset=utf-8", "textContent"},
		{"console/console.css", "text/css; charset=utf-8", ".range.hot"},
		{"console/favicon.svg", "image/svg+xml", "<svg"}, // so that a browser asks for no /favicon.ico
	} {
		res := getReserved(t, s, ReservedPrefix+tc.path)
		require.Equal(t, http.StatusOK, res.StatusCode, tc.path)
		assert.Equal(t, tc.ctype, res.Header.Get("Content-Type"), tc.path)
		assert.Contains(t, res.Header.Get("Content-Security-Policy"), "script-src 'self'", tc.path)
		body, _ := io.ReadAll(res.Body)
		if tc.path != "console/console.css" && tc.path != "console/favicon.svg" {
			assert.Contains(t, string(body), tc.holds, tc.path)
		}
	}
	res := getReserved(t, s, ReservedPrefix+"console")
	assert.Equal(t, http.StatusFound, res.StatusCode)
	assert.Equal(t, "console/", res.Header.Get("Location"), "relative, so it holds wherever the console is mounted")
	assert.Equal(t, http.StatusNotFound, getReserved(t, s, ReservedPrefix+"console/../api/report").StatusCode)
	assert.Equal(t, http.StatusNotFound, getReserved(t, s, ReservedPrefix+"console/missing.js").StatusCode)

	// Without the key, nothing: not even the page.
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, ReservedPrefix+"console/", nil))
	assert.Equal(t, http.StatusUnauthorized, w.Code)
}

func TestConsoleShowsKeysOnlyAsText(t *testing.T) {
	// The console builds its DOM from the report with textContent and setAttribute; markup
	// APIs would let a PartitionKey such as "<img onerror=…>" run script.
	js, err := consoleFiles.ReadFile("console/console.js")
	require.NoError(t, err)
	for _, banned := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
		assert.NotContains(t, string(js), banned)
	}
	html, err := consoleFiles.ReadFile("console/index.html")
	require.NoError(t, err)
	assert.NotContains(t, string(html), "http://", "no external assets")
	assert.NotContains(t, string(html), "https://", "no external assets")
	assert.NotContains(t, string(html), " style=", "the policy forbids inline style")
}

func TestNewConsoleHandlerOnOwnMux(t *testing.T) {
	db := newHarness(t, nil).db
	_, err := db.CreateTable(context.Background(), "orders")
	require.NoError(t, err)
	h, err := NewConsoleHandler(db, nil)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ops/tabula/", http.StripPrefix("/ops/tabula", h))

	res := getReserved(t, mux, "/ops/tabula/console")
	assert.Equal(t, http.StatusFound, res.StatusCode)
	res = getReserved(t, mux, "/ops/tabula/console/")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	res = getReserved(t, mux, "/ops/tabula/api/report")
	require.Equal(t, http.StatusOK, res.StatusCode)
	rep := decodeJSON[reportJSON](t, res)
	require.Len(t, rep.Tables, 1, "a table without traffic yet is listed too")
	assert.Equal(t, "orders", rep.Tables[0].Name)
	assert.Zero(t, rep.Tables[0].Entities)
	assert.Len(t, rep.Tables[0].Ranges, 1)

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/ops/tabula/api/report", nil))
	assert.Equal(t, http.StatusUnauthorized, w.Code, "still guarded by the account key")
	r := httptest.NewRequest(http.MethodGet, "/ops/tabula/api/report", nil)
	r.SetBasicAuth(DevelopmentAccountName, strings.Repeat("A", 88))
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	assert.Equal(t, http.StatusUnauthorized, w.Code)

	_, err = NewConsoleHandler(db, &Options{Accounts: []Account{{Name: "x"}}})
	assert.Error(t, err, "an account without a key is refused")
}
