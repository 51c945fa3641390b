package server

import "net/http"

// serveConsole serves the console under ReservedPrefix+"console/" for an authenticated
// account; path is what follows "console/".
func (s *Server) serveConsole(w http.ResponseWriter, r *http.Request, account, path string) {
	http.NotFound(w, r) // TODO(issue 15): the console
}
