package server

import "net/http"

// serveManagement serves the management API under ReservedPrefix+"api/" for an authenticated
// account; path is what follows "api/".
func (s *Server) serveManagement(w http.ResponseWriter, r *http.Request, account, path string) {
	http.NotFound(w, r) // TODO(issue 13): the management API
}
