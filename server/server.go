package server

import (
	"log/slog"
	"sync"
	"time"

	"github.com/tabuladb/tabula"
)

// Options configure a Server. The zero value (or nil) serves the development account.
type Options struct {
	// Accounts are the accounts the server accepts, by name and keys. Each is its own
	// namespace of tables in the one DB the server serves, as each storage account is on
	// the service, found by the account's name as the DB records it
	// (tabula.DB.AccountNamespaces): on a DB that records none, the first account's tables
	// are the DB's own (DB.Namespace("")), so that a single-account server serves exactly
	// what the embedded API sees, and every other account's are DB.Namespace(name); from
	// then on the order of the accounts changes nothing, an account left out keeps its
	// data, and a new account's keys may change. Each also answers at "<name>-secondary",
	// the read-only endpoint of read-access geo-redundant storage. Default:
	// DevelopmentAccount().
	Accounts []Account

	// Clock is the server's time: the Date header, the time in error messages, Shared Key
	// clock skew and SAS validity are measured on it. It is separate from the DB's clock,
	// which stamps entities, so that a test can fake Timestamps while real SDKs keep
	// signing with the real time. Default: time.Now.
	Clock func() time.Time

	// BearerTokens makes the server accept OAuth bearer tokens over HTTPS, as sent by
	// azcore's token credentials (azidentity), checked as Azurite's basic OAuth mode
	// checks them: shape, issuer, audience and lifetime, but NOT the signature (see
	// oauth.go). Off by default, since anyone can make a token that passes.
	BearerTokens bool

	// PathStyleOnly reads the account from the path's first segment only, never from the
	// host name (see accountOf): Azurite's --disableProductStyleUrl, for clients that reach
	// the server by a dotted host name (a container's, say) whose first label happens to be
	// an account.
	PathStyleOnly bool

	// AnyVersion serves every x-ms-version instead of refusing those the service does not
	// know: Azurite's --skipApiVersionCheck, beyond the service.
	AnyVersion bool

	// AdminKey is the management API's administrator credential: the password of HTTP Basic
	// authentication as the user "_tabula", which steers every account and creates and
	// deletes accounts (see reservedpath.go). Default: a random key, which AdminKey returns.
	AdminKey string

	// Logger receives what the server says outside requests, such as how it assigned the
	// accounts of a data directory that recorded none. Default: slog.Default().
	Logger *slog.Logger
}

// Server is an http.Handler speaking the Azure Table service's REST protocol (JSON only)
// at the storage emulators' path-style URLs, in front of one tabula.DB. It is safe for
// concurrent use.
type Server struct {
	db         *tabula.DB
	dir        accountSet // the accounts served, changed at run time by the management API (accounts.go)
	clock      func() time.Time
	newID      func() string // request IDs and batch boundaries; tests make them predictable
	bearer     bool          // Options.BearerTokens
	pathStyle  bool          // Options.PathStyleOnly
	anyVersion bool          // Options.AnyVersion
	admin      string        // Options.AdminKey
	buffers    bufferPool    // large request and response buffers, reused (buffers.go)

	controlMu sync.Mutex // serialises changes through the management API (control.go)

	states savedStates // the saved states of the whole server (snapshots.go)
}

// New returns a Server for db. It fails if an account is malformed or the DB cannot be read.
func New(db *tabula.DB, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if len(o.Accounts) == 0 {
		o.Accounts = []Account{DevelopmentAccount()}
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.AdminKey == "" {
		o.AdminKey = newAdminKey()
	}
	s := &Server{db: db, clock: o.Clock, newID: newRequestID, bearer: o.BearerTokens, admin: o.AdminKey,
		pathStyle: o.PathStyleOnly, anyVersion: o.AnyVersion}
	if err := s.addConfigured(o.Accounts, o.Logger); err != nil {
		return nil, err
	}
	return s, nil
}

// Accounts returns the accounts the server accepts now: those of Options.Accounts, then
// those created through the management API, in the order they were created.
func (s *Server) Accounts() []Account { return s.dir.list() }

// DB returns the database the server serves.
func (s *Server) DB() *tabula.DB { return s.db }

// Namespace returns the namespace of tables the account is served from, or nil if the
// server does not serve the account.
func (s *Server) Namespace(account string) *tabula.Namespace {
	if e := s.dir.get(account); e != nil {
		return e.ns
	}
	return nil
}
