package server

import (
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// formatDate reuses the text of the last second it formatted; any other second, earlier or
// later, in any zone, must still read as that instant in GMT.
func TestFormatDateAcrossSeconds(t *testing.T) {
	base := time.Date(2026, 11, 23, 14, 40, 5, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{base, "Mon, 23 Nov 2026 14:40:05 GMT"},
		{base.Add(999 * time.Millisecond), "Mon, 23 Nov 2026 14:40:05 GMT"},
		{base.Add(time.Second), "Mon, 23 Nov 2026 14:40:06 GMT"},
		{base.Add(-time.Nanosecond), "Mon, 23 Nov 2026 14:40:04 GMT"},
		{base.In(time.FixedZone("UTC+2", 2*3600)), "Mon, 23 Nov 2026 14:40:05 GMT"},
		{time.Date(1969, 12, 31, 23, 59, 59, 500, time.UTC), "Wed, 31 Dec 1969 23:59:59 GMT"},
		{time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), "Thu, 01 Jan 1970 00:00:00 GMT"},
		{base, "Mon, 23 Nov 2026 14:40:05 GMT"},
	} {
		assert.Equal(t, tc.want, formatDate(tc.at), "%v", tc.at)
	}
}

// baseURL reuses the last base it built only for the same scheme, host and account.
func TestBaseURLAcrossHostsAndAccounts(t *testing.T) {
	req := func(host string, secure bool) *http.Request {
		r := &http.Request{Host: host}
		if secure {
			r.TLS = &tls.ConnectionState{}
		}
		return r
	}
	for _, tc := range []struct {
		r       *http.Request
		account string
		want    string
	}{
		{req("127.0.0.1:10002", false), "devstoreaccount1", "http://127.0.0.1:10002/devstoreaccount1"},
		{req("127.0.0.1:10002", false), "devstoreaccount1", "http://127.0.0.1:10002/devstoreaccount1"},
		{req("127.0.0.1:10002", true), "devstoreaccount1", "https://127.0.0.1:10002/devstoreaccount1"},
		{req("localhost:10002", true), "devstoreaccount1", "https://localhost:10002/devstoreaccount1"},
		{req("localhost:10002", true), "other", "https://localhost:10002/other"},
		{req("localhost:10002", true), "a b", "https://localhost:10002/a%20b"},
		{req("127.0.0.1:10002", false), "devstoreaccount1", "http://127.0.0.1:10002/devstoreaccount1"},
	} {
		assert.Equal(t, tc.want, baseURL(tc.r, tc.account))
	}
}

func TestParseHTTPDateRemembersOnlyTheSameText(t *testing.T) {
	for _, date := range []string{"Mon, 23 Nov 2026 14:00:00 GMT", "Mon, 23 Nov 2026 14:00:01 GMT", "Monday, 23-Nov-26 14:00:01 GMT", "not a date", "Mon, 23 Nov 2026 14:00:00 GMT"} {
		want, wantErr := http.ParseTime(date)
		for range 2 { // the second read comes from what the first remembered
			got, err := parseHTTPDate(date)
			assert.Equal(t, wantErr != nil, err != nil, date)
			assert.True(t, want.Equal(got), "%s: %v, not %v", date, got, want)
		}
	}
}
