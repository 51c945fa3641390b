package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An open console polls its report every 2 s: those polls stay out of the request log while
// they succeed, and a report fetched otherwise (curl, a test) is logged. A browser's request
// for /favicon.ico is no warning.
func TestConsoleQuietInTheRequestLog(t *testing.T) {
	h := newLoggedHarness(t, false)
	get := func(path string, poll bool, auth bool) int {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if auth {
			r.SetBasicAuth(DevelopmentAccountName, DevelopmentAccountKey)
		}
		if poll {
			r.Header.Set(consolePollHeader, "1")
		}
		w := httptest.NewRecorder()
		h.handler.ServeHTTP(w, r)
		return w.Code
	}
	require.Equal(t, http.StatusOK, get(ReservedPrefix+"api/report", true, true))
	assert.Empty(t, h.lines.String(), "a console's poll")

	require.Equal(t, http.StatusOK, get(ReservedPrefix+"api/report", false, true))
	assert.Contains(t, h.lines.String(), "path=/_tabula/api/report status=200", "any other fetch of the report")

	h.lines.Reset()
	assert.Equal(t, http.StatusUnauthorized, get(ReservedPrefix+"api/report", true, false))
	assert.Contains(t, h.lines.String(), "level=WARN", "a poll that fails is logged")

	h.lines.Reset()
	get("/favicon.ico", false, false)
	assert.NotContains(t, h.lines.String(), "level=WARN")
	assert.NotContains(t, h.lines.String(), "favicon", "Debug, below the log's level")
}
