package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

func newOptionsServer(t *testing.T, opts *Options) *Server {
	t.Helper()
	db, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(db, opts)
	require.NoError(t, err)
	return s
}

// PathStyleOnly (Azurite's --disableProductStyleUrl) reads the account from the path even
// when the host name's first label is an account.
func TestPathStyleOnly(t *testing.T) {
	for _, pathStyle := range []bool{false, true} {
		s := newOptionsServer(t, &Options{PathStyleOnly: pathStyle})
		account, rest, inHost, err := s.accountOf("devstoreaccount1.table.localhost:10002", "/devstoreaccount1/Tables")
		require.Nil(t, err)
		if pathStyle {
			assert.Equal(t, "devstoreaccount1", account)
			assert.Equal(t, "Tables", rest)
			assert.False(t, inHost)
		} else {
			assert.Equal(t, "devstoreaccount1", account)
			assert.Equal(t, "devstoreaccount1/Tables", rest, "host-style: the path is all resource")
			assert.True(t, inHost)
		}
	}
}

// AnyVersion (Azurite's --skipApiVersionCheck) serves an x-ms-version the service does not
// know; by default it is refused with 400 InvalidHeaderValue.
func TestAnyVersion(t *testing.T) {
	for _, anyVersion := range []bool{false, true} {
		s := newOptionsServer(t, &Options{AnyVersion: anyVersion, Clock: func() time.Time { return testNow }})
		req := httptest.NewRequest(http.MethodGet, "/devstoreaccount1/Tables", nil)
		req.Header.Set("X-Ms-Version", "2099-01-01")
		req.Header.Set("Accept", "application/json;odata=nometadata")
		signLite(req, DevelopmentAccountName, DevelopmentAccountKey, testNow)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if anyVersion {
			assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		} else {
			assert.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
			assert.Contains(t, rec.Body.String(), `"InvalidHeaderValue"`)
		}
	}
}
