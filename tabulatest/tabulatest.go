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

// NewServer is the way in: it starts an in-memory Tabula for t, serving the REST protocol on
// a loopback port, and closes it when the test ends. opts (nil for the defaults) reach the
// engine unchanged. with chooses the rest: InProcess for no listener, a *Fixture to start
// from a copy of it:
//
//	srv := tabulatest.NewServer(t, nil)                          // empty, on a loopback port
//	srv := tabulatest.NewServer(t, nil, movies)                  // a copy of the movies fixture
//	srv := tabulatest.NewServer(t, nil, tabulatest.InProcess())  // no socket: srv.Transport()
func NewServer(t testing.TB, opts *tabula.Options, with ...Option) *Server {
	t.Helper()
	s, err := Start(opts, with...)
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

// NewInProcess is NewServer(t, opts, InProcess()), the form most suites use.
func NewInProcess(t testing.TB, opts *tabula.Options) *Server {
	t.Helper()
	return NewServer(t, opts, InProcess())
}

// Start is NewServer for code that has no testing.TB (an Example, TestMain, a benchmark
// that times servers): the caller closes the server.
func Start(opts *tabula.Options, with ...Option) (*Server, error) {
	var set setup
	for _, o := range with {
		if o != nil {
			o.apply(&set)
		}
	}
	var db *tabula.DB
	var err error
	if set.fixture != nil {
		db, err = set.fixture.open(opts)
	} else {
		db, err = tabula.OpenInMemory(opts)
	}
	if err != nil {
		return nil, err
	}
	h, err := server.New(db, nil)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	s := &Server{DB: db, Handler: h, Endpoint: inProcessEndpoint}
	if !set.inProcess {
		s.http = httptest.NewServer(h)
		s.Endpoint = s.http.URL
	}
	s.URL = server.DevelopmentAccount().TableEndpoint(s.Endpoint)
	return s, nil
}

// Option chooses how NewServer and Start start a server: InProcess, or a *Fixture, whose
// copy the server starts on.
type Option interface {
	apply(*setup)
}

// setup is what the Options chose.
type setup struct {
	fixture   *Fixture // nil for an empty database
	inProcess bool
}

// InProcess starts the server without a listener: no socket is ever opened, and the server
// is reachable only through Server.Transport (its Endpoint never resolves).
func InProcess() Option { return inProcess{} }

type inProcess struct{}

func (inProcess) apply(s *setup) { s.inProcess = true }

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
