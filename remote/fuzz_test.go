package remote

import (
	"net/http"
	"testing"
)

// FuzzBatchResults feeds arbitrary change set responses to the reader: it must return
// results or an error, never panic, and never more results than actions.
func FuzzBatchResults(f *testing.F) {
	ok := "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_2\r\n\r\n" +
		"--changesetresponse_2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
		"HTTP/1.1 204 No Content\r\nETag: W/\"datetime'2024-01-01T00%3A00%3A00.1234567Z'\"\r\n\r\n\r\n" +
		"--changesetresponse_2--\r\n--batchresponse_1--\r\n"
	failed := "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_2\r\n\r\n" +
		"--changesetresponse_2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
		"HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n\r\n" +
		`{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"1:The specified entity already exists.\nRequestId:x\nTime:y"}}}` +
		"\r\n--changesetresponse_2--\r\n--batchresponse_1--\r\n"
	f.Add(ok, 1)
	f.Add(failed, 2)
	f.Add("", 1)
	f.Fuzz(func(t *testing.T, body string, n int) {
		if n < 0 || n > 100 {
			return
		}
		h := http.Header{"Content-Type": {"multipart/mixed; boundary=batchresponse_1"}}
		results, err := batchResults(h, []byte(body), n)
		if err == nil && len(results) != n {
			t.Fatalf("%d results for %d actions", len(results), n)
		}
	})
}

// FuzzServiceError feeds arbitrary error bodies to the reader, which must always give an
// error with a code and a message.
func FuzzServiceError(f *testing.F) {
	f.Add(`{"odata.error":{"code":"TableNotFound","message":{"lang":"en-US","value":"The table specified does not exist.\nRequestId:x\nTime:y"}}}`)
	f.Add(`{"odata.error":{"code":5}}`)
	f.Add(`<?xml version="1.0" encoding="utf-8"?><m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><m:code>InvalidXmlDocument</m:code><m:message xml:lang="en-US">XML specified is not syntactically valid.` + "\nRequestId:x\nTime:y</m:message></m:error>")
	f.Add(`<Error><Code>AuthorizationFailure</Code><Message>no</Message></Error>`)
	f.Add("")
	f.Fuzz(func(t *testing.T, body string) {
		e := serviceError(404, http.Header{}, []byte(body))
		if e.Code == "" || e.Message == "" {
			t.Fatalf("error without a code or a message: %#v", e)
		}
	})
}
