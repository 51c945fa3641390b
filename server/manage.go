package server

import "net/http"

// serveManagement serves the management API under ReservedPrefix+"api/" for an authenticated
// account; path is what follows "api/". What the console reads (the heat report and query
// plans) is served by serveInsight; what steers the simulation (limits, faults) by serveControl.
func (s *Server) serveManagement(w http.ResponseWriter, r *http.Request, account, path string) {
	switch path {
	case "report", "explain":
		s.serveInsight(w, r, account, path)
	default:
		s.serveControl(w, r, account, path)
	}
}
