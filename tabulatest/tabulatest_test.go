package tabulatest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The transport works for a plain http.Client too, and answers as a server would: status,
// canonical header names, and the body.
func TestTransportAsRoundTripper(t *testing.T) {
	srv := NewInProcess(t, nil)
	if !strings.HasPrefix(srv.URL, "http://tabula.invalid/") {
		t.Fatalf("in-process URL %q", srv.URL)
	}
	client := &http.Client{Transport: srv.Transport()}
	resp, err := client.Get(srv.URL + "Tables")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	// Unsigned: the service's 403, with its request ID under the canonical name.
	if resp.StatusCode != 403 || !strings.Contains(string(b), "AuthenticationFailed") || resp.Header.Get("X-Ms-Request-Id") == "" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"Tables", nil)
	if _, err := srv.Transport().Do(req); err == nil {
		t.Fatal("a canceled request was served")
	}
}

func TestServerClose(t *testing.T) {
	s, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || !strings.HasSuffix(s.URL, "/devstoreaccount1/") {
		t.Fatalf("URL %q", s.URL)
	}
	if !strings.Contains(s.ConnectionString(), "TableEndpoint="+s.URL+";") {
		t.Fatalf("connection string %q", s.ConnectionString())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
