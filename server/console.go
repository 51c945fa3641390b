package server

import (
	"embed"
	"net/http"
	"strings"

	"github.com/tabuladb/tabula"
)

// The console is plain HTML, CSS and JavaScript that draws SVG: no build step and nothing
// loaded from elsewhere. It reads api/report, api/explain and api/data and writes nothing.
//
//go:embed console
var consoleFiles embed.FS

// consoleTypes are the console's files and their content types; nothing else is served.
var consoleTypes = map[string]string{
	"index.html":  "text/html; charset=utf-8",
	"console.js":  "text/javascript; charset=utf-8",
	"console.css": "text/css; charset=utf-8",
	"favicon.svg": "image/svg+xml",
}

// consolePolicy lets the console's page run only its own script and style and talk only to
// its own server: keys shown in it cannot become markup, and it cannot be framed.
const consolePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// consolePollHeader marks the console's own polls of api/report, which RequestLog leaves out
// when they succeed: an open console would otherwise add a line every 2 s.
const consolePollHeader = "X-Tabula-Console-Poll"

// serveConsole serves the console under ReservedPrefix+"console/" for an authenticated
// account; path is what follows "console/".
func (s *Server) serveConsole(w http.ResponseWriter, r *http.Request, _ principal, path string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "tabula: the console is read-only", http.StatusMethodNotAllowed)
		return
	}
	if path == "" && !strings.HasSuffix(r.URL.Path, "/") {
		// The page finds its files and the API by relative URLs: it must end in a slash. The
		// Location is relative so that it holds wherever NewConsoleHandler is mounted.
		w.Header().Set("Location", "console/")
		w.WriteHeader(http.StatusFound)
		return
	}
	if path == "" {
		path = "index.html"
	}
	ctype, ok := consoleTypes[path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	body, err := consoleFiles.ReadFile("console/" + path)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Security-Policy", consolePolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// NewConsoleHandler returns an http.Handler serving the console and the management API of
// db, for a Go program or test to mount on its own mux; New(db, opts).ServeHTTP serves the
// same under ReservedPrefix. Beneath where it is mounted:
//
//	console/                          the console: a page that polls the report every 2 s
//	                                  (RequestLog leaves its successful polls out)
//	api/report                        the heat report as JSON (?format=svg: as an SVG heat map)
//	api/explain?table=T&filter=F      the plan of $filter F on table T, and one page's cost
//	api/data?table=T&filter=F&top=N   a page of T's entities matching F, with their types
//	api/data/export?table=T&filter=F  those entities as an interchange file (JSON Lines)
//
// Paths are taken relative to where it is mounted, so mount it under a prefix with
// http.StripPrefix:
//
//	h, err := server.NewConsoleHandler(db, nil)
//	mux.Handle("/tabula/", http.StripPrefix("/tabula", h)) // console at /tabula/console/
//
// Every request needs HTTP Basic authentication with an account name of opts (default the
// development account) as the user and one of its keys as the password, and then shows and
// steers that account alone; or as AdminUser with the admin key (Options.AdminKey), for every
// account. A browser asks for them itself.
func NewConsoleHandler(db *tabula.DB, opts *Options) (http.Handler, error) {
	s, err := New(db, opts)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = ReservedPrefix + strings.TrimPrefix(r.URL.Path, "/")
		r2.URL.RawPath = ""
		s.serveReserved(w, r2)
	}), nil
}
