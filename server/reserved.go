package server

import (
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
const reservedAccountName = "_tabula"

// operator authenticates a request to a reserved path. It is guarded by the account key like
// every other request, in the form any HTTP client and a browser can send without signing
// code: HTTP Basic authentication with the account name as the user and any of its keys
// (base64, as the connection string holds it) as the password. It returns the account.
func (s *Server) operator(r *http.Request) (account string, ok bool) {
	name, key, ok := r.BasicAuth()
	if !ok {
		return "", false
	}
	given, err := base64.StdEncoding.DecodeString(strings.TrimSpace(key))
	if err != nil {
		return "", false
	}
	match := 0
	for _, k := range s.keys[name] {
		match |= subtle.ConstantTimeCompare(given, k)
	}
	return name, match == 1
}

// serveReserved answers a request under ReservedPrefix: it authenticates the operator, then
// hands the request to the management API or the console.
func (s *Server) serveReserved(w http.ResponseWriter, r *http.Request) {
	account, ok := s.operator(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="tabula", charset="UTF-8"`)
		http.Error(w, "tabula: sign in with the account name as the user and an account key as the password", http.StatusUnauthorized)
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, ReservedPrefix)
	switch {
	case rest == "api" || strings.HasPrefix(rest, "api/"):
		s.serveManagement(w, r, account, strings.TrimPrefix(strings.TrimPrefix(rest, "api"), "/"))
	case rest == "console" || strings.HasPrefix(rest, "console/"):
		s.serveConsole(w, r, account, strings.TrimPrefix(strings.TrimPrefix(rest, "console"), "/"))
	default:
		http.NotFound(w, r)
	}
}
