package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// TestAnswer checks the one place a handler's error becomes the response: the code and
// status of the *tabula.Error it is or maps to, the success-only headers removed, the code
// in x-ms-error-code and noted for the request log, no body for HEAD, and nothing at all
// for no error or once a response was sent.
func TestAnswer(t *testing.T) {
	var typedNil *tabula.Error
	cases := []struct {
		name   string
		method string
		err    error
		sent   bool   // a response was already sent
		code   string // "" when nothing is to be written
		status int
		detail string
	}{
		{name: "no error", method: http.MethodGet},
		{name: "a nil *tabula.Error", method: http.MethodGet, err: typedNil},
		{name: "already answered", method: http.MethodGet, err: tabula.ErrResourceNotFound, sent: true},
		{name: "sentinel", method: http.MethodGet, err: tabula.ErrResourceNotFound, code: "ResourceNotFound", status: http.StatusNotFound},
		{name: "with detail", method: http.MethodPut, err: invalidInput("", "the body has no TableName"),
			code: "InvalidInput", status: http.StatusBadRequest, detail: "the body has no TableName"},
		{name: "wrapped", method: http.MethodGet, err: fmt.Errorf("scan: %w", tabula.ErrTableNotFound), code: "TableNotFound", status: http.StatusNotFound},
		{name: "client gone", method: http.MethodGet, err: context.Canceled, code: "OperationTimedOut", status: http.StatusInternalServerError,
			detail: "context canceled"},
		{name: "anything else", method: http.MethodGet, err: errors.New("disk on fire"), code: "InternalError", status: http.StatusInternalServerError,
			detail: "disk on fire"},
		{name: "HEAD", method: http.MethodHead, err: tabula.ErrResourceNotFound, code: "ResourceNotFound", status: http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			lw := &logWriter{ResponseWriter: rec}
			c := &call{w: lw, r: httptest.NewRequest(tc.method, "/devstoreaccount1/T()", nil), id: "id-1", now: testNow}
			h := rec.Header()
			exact := func(name string) []string { return h[name] } // as the service spells it, not canonical
			for _, k := range []string{"ETag", "Location", "DataServiceId", "Preference-Applied",
				"x-ms-continuation-NextPartitionKey", "x-ms-continuation-NextRowKey", "x-ms-continuation-NextTableName"} {
				setHeader(h, k, "v")
			}
			c.written = tc.sent

			c.answer(tc.err)

			if tc.code == "" {
				assert.False(t, lw.wroteHeader, "nothing is written")
				assert.Empty(t, lw.code)
				assert.Equal(t, []string{"v"}, exact("ETag"), "headers are left alone")
				return
			}
			require.True(t, c.written)
			assert.Equal(t, tc.status, rec.Code)
			assert.Equal(t, tc.code, lw.code, "the code noted for the request log")
			assert.Equal(t, []string{tc.code}, exact("x-ms-error-code"))
			assert.Equal(t, tc.detail, h.Get("X-Tabula-Error-Detail"))
			for _, k := range []string{"ETag", "Location", "DataServiceId", "Preference-Applied",
				"x-ms-continuation-NextPartitionKey", "x-ms-continuation-NextRowKey", "x-ms-continuation-NextTableName"} {
				assert.Empty(t, h.Values(k), k)
				assert.NotContains(t, h, k, k)
			}
			assert.Equal(t, "application/json; odata=minimalmetadata; streaming=true; charset=utf-8", h.Get("Content-Type"))
			e := serviceError(tc.err)
			body := string(appendErrorJSON(nil, e.Code, e.Message, "id-1", testNow))
			assert.Equal(t, fmt.Sprint(len(body)), h.Get("Content-Length"))
			if tc.method == http.MethodHead {
				assert.Empty(t, rec.Body.String(), "HEAD: no body")
			} else {
				assert.Equal(t, body, rec.Body.String())
			}
		})
	}
}
