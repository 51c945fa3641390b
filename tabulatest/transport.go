package tabulatest

import (
	"net/http"
	"net/http/httptest"
)

// Transport delivers HTTP requests to a handler in the same process, as a client's
// transport: no socket, no serialization of the request, and the handler sees the request
// as a server would (its RequestURI is the path and query exactly as escaped on the wire,
// which is what Shared Key signs).
//
// Its Do method is the shape of azcore's policy.Transporter, so an Azure SDK client uses it
// as is through ClientOptions.Transport; its RoundTrip method makes it an
// http.RoundTripper for everything else. It is safe for concurrent use.
type Transport struct {
	handler http.Handler
}

// NewTransport returns a transport to h.
func NewTransport(h http.Handler) *Transport { return &Transport{handler: h} }

// Do serves req with the handler and returns its response.
func (t *Transport) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	in := req.Clone(ctx)
	in.RequestURI = req.URL.RequestURI()
	in.Proto, in.ProtoMajor, in.ProtoMinor = "HTTP/1.1", 1, 1
	in.RemoteAddr = "127.0.0.1:0" // a loopback client, as far as SAS IP ranges go
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	t.handler.ServeHTTP(rec, in)
	if req.Body != nil {
		_ = req.Body.Close() // a transport closes the request body, as net/http's does
	}
	resp := rec.Result()
	resp.Request = req
	// A client reading a response off the wire gets canonical header names (the server
	// writes ETag and x-ms-request-id as the service spells them), and code that looks
	// headers up with Header.Get relies on it.
	canonical := make(http.Header, len(resp.Header))
	for name, values := range resp.Header {
		key := http.CanonicalHeaderKey(name)
		canonical[key] = append(canonical[key], values...)
	}
	resp.Header = canonical
	return resp, nil
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) { return t.Do(req) }
