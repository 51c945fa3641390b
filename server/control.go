package server

import "net/http"

// serveControl serves the management API's controls: limits and faults.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request, account, path string) {
	http.NotFound(w, r) // TODO(issue 13)
}
