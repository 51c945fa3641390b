package tabulatest

import (
	"errors"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

// inProcessEndpoint is the endpoint of a server without a listener. The .invalid top-level
// domain never resolves (RFC 2606), so a client that forgets the in-process transport fails
// at once instead of reaching whatever listens on the emulator's port.
const inProcessEndpoint = "http://tabula.invalid"

// Server is an in-memory Tabula behind the Table service's REST protocol, for tests.
type Server struct {
	// DB is the database behind the server: reach the engine's controls through the
	// Options it was opened with, or read and write it directly.
	DB *tabula.DB
	// Handler serves the REST protocol for the development account.
	Handler *server.Server
	// Endpoint is the server's base URL: http://127.0.0.1:<port> with a listener, or
	// http://tabula.invalid for an in-process server, reachable only through Transport.
	Endpoint string
	// URL is the table service endpoint of the development account, Endpoint +
	// "/devstoreaccount1/", the serviceURL the SDKs' constructors take.
	URL string

	http      *httptest.Server
	closeOnce sync.Once
	closeErr  error
}

// Start opens an in-memory DB with opts (nil for the defaults) and serves it on a loopback
// port. Close it when done; NewServer does that for a test.
func Start(opts *tabula.Options) (*Server, error) {
	db, err := tabula.OpenInMemory(opts)
	if err != nil {
		return nil, err
	}
	return startOn(db)
}

// startOn serves db on a loopback port, closing it on failure.
func startOn(db *tabula.DB) (*Server, error) {
	s, err := start(db)
	if err != nil {
		return nil, err
	}
	s.http = httptest.NewServer(s.Handler)
	s.Endpoint = s.http.URL
	s.URL = server.DevelopmentAccount().TableEndpoint(s.Endpoint)
	return s, nil
}

// StartInProcess is Start without a listener: the server is reachable only through
// Transport, so no socket is ever opened.
func StartInProcess(opts *tabula.Options) (*Server, error) {
	db, err := tabula.OpenInMemory(opts)
	if err != nil {
		return nil, err
	}
	return inProcessOn(db)
}

// inProcessOn serves db without a listener, closing it on failure.
func inProcessOn(db *tabula.DB) (*Server, error) {
	s, err := start(db)
	if err != nil {
		return nil, err
	}
	s.Endpoint = inProcessEndpoint
	s.URL = server.DevelopmentAccount().TableEndpoint(s.Endpoint)
	return s, nil
}

func start(db *tabula.DB) (*Server, error) {
	h, err := server.New(db, nil)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return &Server{DB: db, Handler: h}, nil
}

// NewServer starts a server for t (see Start) and closes it when the test ends.
func NewServer(t testing.TB, opts *tabula.Options) *Server {
	t.Helper()
	s, err := Start(opts)
	return forTest(t, s, err)
}

// NewInProcess starts an in-process server for t (see StartInProcess) and closes it when
// the test ends.
func NewInProcess(t testing.TB, opts *tabula.Options) *Server {
	t.Helper()
	s, err := StartInProcess(opts)
	return forTest(t, s, err)
}

// forTest fails t if the server did not start, and closes it when the test ends.
func forTest(t testing.TB, s *Server, err error) *Server {
	t.Helper()
	if err != nil {
		t.Fatalf("tabulatest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("tabulatest: closing the server: %v", err)
		}
	})
	return s
}

// ConnectionString is the development account's connection string for this server, for
// aztables.NewServiceClientFromConnectionString and its equivalents in other SDKs.
func (s *Server) ConnectionString() string {
	return server.DevelopmentAccount().ConnectionString(s.Endpoint)
}

// AccountName and AccountKey are the development account's credentials, for
// aztables.NewSharedKeyCredential.
const (
	AccountName = server.DevelopmentAccountName
	AccountKey  = server.DevelopmentAccountKey
)

// Transport returns a transport that hands requests straight to the server's handler,
// with no socket: set it as an SDK client's transport (azcore's ClientOptions.Transport)
// or an http.Client's.
func (s *Server) Transport() *Transport {
	return NewTransport(s.Handler)
}

// Close stops the listener, waiting for requests in flight, and closes the DB. Calling it
// again is harmless.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.http != nil {
			s.http.Close()
		}
		s.closeErr = s.DB.Close()
	})
	return s.closeErr
}
