package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReservedPathsNeedTheAccountKey(t *testing.T) {
	h := newHarness(t, nil)
	for _, tc := range []struct {
		name       string
		user, pass string
		basic      bool
		want       int
	}{
		{name: "no credentials", want: http.StatusUnauthorized},
		{name: "wrong key", user: DevelopmentAccountName, pass: "d3Jvbmc=", basic: true, want: http.StatusUnauthorized},
		{name: "key not base64", user: DevelopmentAccountName, pass: "%%%", basic: true, want: http.StatusUnauthorized},
		{name: "unknown account", user: "other", pass: DevelopmentAccountKey, basic: true, want: http.StatusUnauthorized},
		{name: "account key", user: DevelopmentAccountName, pass: DevelopmentAccountKey, basic: true, want: http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, ReservedPrefix+"nothing-here", nil)
			if tc.basic {
				r.SetBasicAuth(tc.user, tc.pass)
			}
			w := httptest.NewRecorder()
			h.s.ServeHTTP(w, r)
			assert.Equal(t, tc.want, w.Code)
			if tc.want == http.StatusUnauthorized {
				assert.Contains(t, w.Header().Get("WWW-Authenticate"), "Basic")
			}
		})
	}
}

func TestReservedAccountNameIsRefused(t *testing.T) {
	_, err := ParseAccounts(reservedAccountName + ":" + DevelopmentAccountKey)
	assert.ErrorContains(t, err, "reserved")
}
