package server

import "net/http"

// serveInsight serves the read-only views of the load: the heat report and query plans.
func (s *Server) serveInsight(w http.ResponseWriter, r *http.Request, account, path string) {
	http.NotFound(w, r) // TODO(issue 15)
}
