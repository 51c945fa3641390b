package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request signed with a key the account does not have says which key to check, in the
// detail (the request log, X-Tabula-Error-Detail); the message is the service's, whole.
func TestWrongKeySaysWhichKeyToCheck(t *testing.T) {
	h := newHarness(t, nil)
	h.createTable("Auth")
	req := httptest.NewRequest("POST", "/devstoreaccount1/Auth", strings.NewReader(`{"PartitionKey":"p","RowKey":"r"}`))
	req.Host = "127.0.0.1:10002"
	req.Header.Set("Content-Type", "application/json")
	signLite(req, DevelopmentAccountName, "AAAA"+DevelopmentAccountKey[4:], testNow)
	rec := httptest.NewRecorder()
	h.s.ServeHTTP(rec, req)
	require.Equal(t, http.StatusForbidden, rec.Code)
	assert.Contains(t, rec.Body.String(), `"code":"AuthenticationFailed"`)
	assert.Contains(t, rec.Header().Get("X-Tabula-Error-Detail"), "the signature does not match the request")
	assert.Contains(t, rec.Header().Get("X-Tabula-Error-Detail"), "check the AccountKey in the connection string: it must be a key of account devstoreaccount1")

	var body struct {
		Error struct {
			Message struct{ Value string } `json:"message"`
		} `json:"odata.error"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	msg := body.Error.Message.Value
	assert.True(t, strings.HasPrefix(msg, errAuthenticationFailed.Message+"\nRequestId:"), msg)
	assert.Contains(t, msg, "\nRequestId:")
}
