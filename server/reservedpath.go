package server

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// ReservedPrefix is the path under which Tabula serves what the Azure Table service does not
// have: the management API (ReservedPrefix+"api/") and the console (ReservedPrefix+"console/").
// No storage account can be named "_tabula" (account names are lowercase letters and digits),
// so the prefix never shadows a table URL.
const ReservedPrefix = "/_tabula/"

// reservedAccountName is the first path segment of ReservedPrefix, refused as an account name.
// It is also the user name of the administrator credential (AdminUser).
const reservedAccountName = "_tabula"

// AdminUser is the user name of the management API's administrator credential, whose password
// is the server's admin key (Options.AdminKey). No account can have the name.
const AdminUser = reservedAccountName

// principal is who signed in to a reserved path: an account, which sees and steers only
// itself, or the administrator, who sees and steers every account.
type principal struct {
	account string // the account signed in; "" for the administrator
	admin   bool
}

// AdminKey returns the administrator credential's password (Options.AdminKey, or the one New
// made up).
func (s *Server) AdminKey() string { return s.admin }

// newAdminKey makes up an admin key: 32 random bytes, in base64.
func newAdminKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}

// operator authenticates a request to a reserved path, in the form any HTTP client and a
// browser can send without signing code: HTTP Basic authentication, either with an account
// name as the user and any of its keys (base64, as the connection string holds it) as the
// password, or as AdminUser with the admin key.
func (s *Server) operator(r *http.Request) (principal, bool) {
	name, key, ok := r.BasicAuth()
	if !ok {
		return principal{}, false
	}
	if name == AdminUser {
		ok := subtle.ConstantTimeCompare([]byte(key), []byte(s.admin)) == 1
		return principal{admin: true}, ok
	}
	given, err := base64.StdEncoding.DecodeString(strings.TrimSpace(key))
	if err != nil {
		return principal{}, false
	}
	e := s.dir.get(name)
	if e == nil {
		return principal{}, false
	}
	match := 0
	for _, k := range e.keys {
		match |= subtle.ConstantTimeCompare(given, k)
	}
	return principal{account: name}, match == 1
}

// serveReserved answers a request under ReservedPrefix: it authenticates the operator, then
// hands the request to the management API or the console.
func (s *Server) serveReserved(w http.ResponseWriter, r *http.Request) {
	who, ok := s.operator(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="tabula", charset="UTF-8"`)
		http.Error(w, "tabula: sign in with the account name as the user and an account key as the password, or as "+
			AdminUser+" with the admin key", http.StatusUnauthorized)
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, ReservedPrefix)
	switch {
	case rest == "api" || strings.HasPrefix(rest, "api/"):
		s.serveManagement(w, r, who, strings.TrimPrefix(strings.TrimPrefix(rest, "api"), "/"))
	case rest == "console" || strings.HasPrefix(rest, "console/"):
		s.serveConsole(w, r, who, strings.TrimPrefix(strings.TrimPrefix(rest, "console"), "/"))
	default:
		http.NotFound(w, r)
	}
}

// serveManagement serves the management API under ReservedPrefix+"api/" for an authenticated
// principal; path is what follows "api/". Each resource has its file, named api<resource>.go
// but for the controls: the heat report and query plans the console reads (serveReport,
// apireport.go), the table data it browses and exports (serveData, apidata.go), the
// accounts (serveAccounts, apiaccounts.go), the saved states (serveSnapshots,
// apisnapshots.go) and what steers the simulation, limits, faults and query switches
// (serveControl, control.go).
func (s *Server) serveManagement(w http.ResponseWriter, r *http.Request, who principal, path string) {
	switch {
	case path == "report", path == "explain":
		s.serveReport(w, r, who, path)
	case path == "data", strings.HasPrefix(path, "data/"):
		s.serveData(w, r, who, path)
	case path == "accounts", strings.HasPrefix(path, "accounts/"):
		s.serveAccounts(w, r, who, strings.TrimPrefix(strings.TrimPrefix(path, "accounts"), "/"))
	case path == "snapshots", strings.HasPrefix(path, "snapshots/"):
		s.serveSnapshots(w, r, who.admin, strings.TrimPrefix(path, "snapshots"))
	default:
		s.serveControl(w, r, who, path)
	}
}
