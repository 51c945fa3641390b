package server

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula"
)

// MaxRequestBody is the most bytes a request body may have; larger bodies get 413
// RequestBodyTooLarge, as on the service (REST docs: "Understanding the Table service data model").
const MaxRequestBody = 4 << 20

// DefaultVersion is the x-ms-version a response carries when the request named none: the
// version whose behaviour Tabula reproduces.
const DefaultVersion = "2019-02-02"

// Options configure a Server. The zero value (or nil) serves the development account.
type Options struct {
	// Accounts are the accounts the server accepts, by name and keys. Each is its own
	// namespace of tables in the one DB the server serves, as each storage account is on
	// the service, found by the account's name as the DB records it
	// (tabula.DB.AssignNamespaces): on a DB that records none, the first account's tables
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
	// deletes accounts (see reserved.go). Default: a random key, which AdminKey returns.
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

// call is one request being served.
type call struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	id      string // x-ms-request-id
	now     time.Time
	account string   // the account's name, without -secondary
	keys    [][]byte // the account's keys, decoded; nil for an account the server does not serve
	// secondary is set for a request to the account's read-only secondary endpoint.
	secondary bool
	ns        *tabula.Namespace // the account's tables
	base      string            // scheme://host/account: the root of Location and odata.* links
	query     url.Values
	grant     *grant
	// bearer is set for a request signed with a bearer token rather than a key or a SAS.
	bearer bool
	// jsonError makes an XML operation's failure answer in JSON (see cosmos.go).
	jsonError bool
	written   bool
	// queryAnswer is set for a query (Query Tables, Query Entities, a point query), whose
	// success says Vary: Origin.
	queryAnswer bool
	// corsOrigin is the Origin of a request to an account with CORS rules, cors the rule
	// that matched it (nil for none); send adds their headers (see cors.go).
	corsOrigin string
	cors       *corsRule
	// headerValues backs the response's header values set through put, so that a request
	// allocates one array for them rather than a slice per header.
	headerValues []string
	headerArray  [12]string // headerValues' first array, allocated with the call
	// subFields holds the header fields of a $batch's sub-request, reused for the next one;
	// subQuery keeps the last sub-request's query, which the operations of a batch share
	// (see parseSubRequest).
	subFields mimeHeader
	subQuery  struct {
		raw    string
		values url.Values
	}

	// primaryPath is, for a path-style request to the secondary, the path of the same
	// request to the primary, which its signature may cover (see atSecondary).
	primaryPath string
	// rest is the escaped path after the account: the resource, parsed after authentication.
	rest string
}

// put sets a response header as setHeader does (which, for a name already in Go's canonical
// form, is what http.Header.Set does). Each value is a slice of capacity one of a shared
// array, so an Add to one header elsewhere reallocates rather than overwrites its neighbour.
func (c *call) put(h http.Header, name, value string) {
	if len(h) > 0 {
		delete(h, canonicalName(name))
	}
	c.set(h, name, value)
}

// set is put for a name spelled in Go's canonical form, which h[name] replaces under any
// spelling, or for a header the response cannot have yet: no lookup of the canonical form.
func (c *call) set(h http.Header, name, value string) {
	if c.headerValues == nil {
		c.headerValues = c.headerArray[:0]
	} else if len(c.headerValues) == cap(c.headerValues) {
		c.headerValues = make([]string, 0, 12)
	}
	c.headerValues = append(c.headerValues, value)
	n := len(c.headerValues)
	h[name] = c.headerValues[n-1 : n : n]
}

// ServeHTTP serves one request: it answers with the service's common headers, checks the
// credentials before anything else (a request that fails them touches nothing), then
// routes by path and method.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, ReservedPrefix) {
		s.serveReserved(w, r)
		return
	}
	c := &call{s: s, w: w, r: r, id: s.newID(), now: s.clock()}
	h := w.Header()
	put := c.put
	if len(h) == 0 { // as a response from net/http starts: no name can be there twice
		put = c.set
	}
	put(h, "x-ms-request-id", c.id)
	if v := r.Header.Get("X-Ms-Version"); v != "" {
		put(h, "x-ms-version", v)
	} else {
		put(h, "x-ms-version", DefaultVersion)
	}
	if v := r.Header.Get("X-Ms-Client-Request-Id"); v != "" {
		put(h, "x-ms-client-request-id", v)
	}
	c.set(h, "Date", formatDate(c.now))
	c.set(h, "Cache-Control", "no-cache")
	c.set(h, "X-Content-Type-Options", "nosniff")
	c.set(h, "Server", "Tabula")
	defer func() {
		if p := recover(); p != nil {
			c.answer(withDetail(tabula.ErrInternal, fmt.Sprint("panic: ", p)))
		}
	}()
	c.answer(c.serve())
}

// serve reads the request's account, query and credentials and runs its operation. Like
// every handler it writes the response only on success; it returns a failure, for answer to
// write.
func (c *call) serve() error {
	s, r := c.s, c.r
	rawPath, rawQuery := requestTarget(r)
	account, rest, inHost, perr := s.accountOf(r.Host, rawPath)
	if perr != nil {
		return perr
	}
	c.account = account
	e := s.dir.get(account)
	if primary, ok := strings.CutSuffix(account, secondarySuffix); ok && e == nil {
		if e = s.dir.get(primary); e != nil {
			c.account, c.secondary = primary, true
		}
	}
	if e != nil {
		c.ns, c.keys = e.ns, e.keys
	}
	if inHost {
		c.base = baseFor(r.TLS != nil, r.Host, "")
	} else {
		c.base = baseURL(r, account)
	}
	if c.secondary && !inHost {
		rest = c.atSecondary(rest)
	}
	c.rest = rest
	query, qerr := parseQuery(rawQuery)
	if qerr != nil {
		return invalidInput("", "the query string is malformed: "+qerr.Error())
	}
	c.query = query
	if r.Method == http.MethodOptions {
		return c.preflight() // CORS preflights carry no credentials (see cors.go)
	}
	c.corsHeaders() // on failures too, so that a browser can read them
	g, aerr := s.authenticate(c, rawPath)
	if aerr == nil && g == nil && !s.anyVersion {
		// A SAS request runs at its signed version (sv); the header matters otherwise.
		aerr = checkVersion(r.Header.Get("X-Ms-Version"))
	}
	if aerr == nil {
		aerr = c.cosmosSASError(g)
	}
	if aerr != nil {
		return aerr
	}
	c.grant = g
	res, rerr := parseResource(rest)
	if rerr != nil {
		return rerr
	}
	method, merr := effectiveMethod(r)
	if merr != nil {
		return merr
	}
	return c.route(res, method)
}

// answer writes the failure a handler returned as the service's error response: the one
// place a request's error is written. Handlers write only their successes; an error that
// is not a *tabula.Error (an engine's, a context's) becomes one through serviceError.
// Nothing is written for nil, nor once a response has been sent.
func (c *call) answer(err error) {
	if err == nil || c.written {
		return
	}
	e := serviceError(err)
	if e == nil { // a nil *tabula.Error returned as an error: no failure
		return
	}
	noteError(c.w, e.Code)
	h := c.w.Header()
	for _, k := range []string{"ETag", "Location", "DataServiceId", "Preference-Applied",
		"x-ms-continuation-NextPartitionKey", "x-ms-continuation-NextRowKey", "x-ms-continuation-NextTableName"} {
		delete(h, k)
		h.Del(k)
	}
	if e.Detail != "" {
		h.Set("X-Tabula-Error-Detail", detailHeader(e.Detail))
	}
	// The code in a header too, as the service sends it on every failure from version
	// 2017-07-29 (Status and error codes): HEAD responses and raw-HTTP callers keep it.
	setHeader(h, "x-ms-error-code", e.Code)
	if (c.query.Has("comp") || c.query.Has("restype")) && !c.jsonError { // an XML operation answers in XML
		c.dropTableHeaders()
		c.send(e.StatusCode, "application/xml", appendErrorXML(nil, e.Code, e.Message, c.id, c.now))
		return
	}
	contentType := levelMinimal.contentType()
	if e.Code == errAuthenticationFailed.Code && c.batchPath() {
		// The front end that refuses a $batch's credentials answers in plain JSON, with
		// none of the table layer's headers: the Azure SDK for Python's recorded
		// test_new_invalid_key, a $batch signed with a wrong key, read 403 with
		// Content-Type: application/json, neither x-ms-version nor the client's request ID
		// repeated, and the usual odata.error body.
		contentType = "application/json"
		c.dropTableHeaders()
		delete(h, "x-ms-version")
		delete(h, "x-ms-client-request-id")
	}
	c.send(e.StatusCode, contentType, appendErrorJSON(nil, e.Code, e.Message, c.id, c.now))
}

// batchPath says whether the request's path names $batch, before or without parsing it.
func (c *call) batchPath() bool {
	seg, err := url.PathUnescape(c.rest)
	return err == nil && strings.EqualFold(seg, "$batch")
}

// dropTableHeaders removes the headers of the JSON operations that the XML operations' answers do
// not carry: the service sends neither Cache-Control nor X-Content-Type-Options with them,
// successes or failures, as every XML answer in the aztables module's recordings shows
// (TestGetProperties, TestSetAccessPolicy, TestSetTooManyCors). Nor does it with a $batch's
// AuthenticationFailed (see answer).
func (c *call) dropTableHeaders() {
	h := c.w.Header()
	delete(h, "Cache-Control")
	delete(h, "X-Content-Type-Options")
}

// route dispatches a parsed request to its operation.
func (c *call) route(res resource, method string) error {
	if c.secondary && method != http.MethodGet && method != http.MethodHead {
		return withDetail(errAuthorizationFailure, "the secondary endpoint is read-only")
	}
	if c.query.Has("comp") || c.query.Has("restype") {
		c.dropTableHeaders()
		return c.routeXML(res, method) // service properties and stats, table ACLs
	}
	// The service's answers to queries say they vary by Origin, whether or not the request
	// has one, as the SDKs' recorded live traffic shows.
	c.queryAnswer = method == http.MethodGet && res.kind != resBatch && res.kind != resService
	switch res.kind {
	case resTables:
		switch method {
		case http.MethodGet:
			return c.queryTables()
		case http.MethodPost:
			return c.createTable()
		}
	case resTable:
		switch method {
		case http.MethodGet:
			return c.getTable(res.table)
		case http.MethodDelete:
			return c.deleteTable(res.table)
		}
	case resEntitySet:
		switch method {
		case http.MethodGet:
			return c.queryEntities(res.table)
		case http.MethodPost:
			noteEntities(c.w, 1) // unless it fails
			return c.insertEntity(res.table)
		}
	case resEntity:
		noteEntities(c.w, 1) // unless it fails
		switch method {
		case http.MethodGet:
			return c.getEntity(res)
		case http.MethodPut:
			return c.writeEntity(res, tabula.Replace)
		case "MERGE", http.MethodPatch:
			return c.writeEntity(res, tabula.Merge)
		case http.MethodDelete:
			return c.deleteEntity(res)
		}
	case resBatch:
		if method == http.MethodPost {
			return c.batch()
		}
	case resService:
		return withDetail(errInvalidQueryParameterValue, "a request to the service needs restype=service and comp=properties or comp=stats")
	}
	return withDetail(errMethodNotAllowed, method+" is not allowed here")
}

// effectiveMethod applies X-HTTP-Method tunnelling: only on POST, once, and only to MERGE,
// PUT or DELETE (REST docs: "Merge Entity").
func effectiveMethod(r *http.Request) (string, *tabula.Error) {
	return tunnelledMethod(r.Method, r.Header.Values("X-Http-Method")) // canonical form: no conversion per request
}

// tunnelledMethod is the method a request sent as method means, given its X-HTTP-Method
// values.
func tunnelledMethod(method string, values []string) (string, *tabula.Error) {
	if len(values) == 0 {
		return method, nil
	}
	if method != http.MethodPost {
		return "", errXMethodNotUsingPost
	}
	if len(values) > 1 {
		return "", errXMethodIncorrectCount
	}
	switch m := strings.ToUpper(strings.TrimSpace(values[0])); m {
	case "MERGE", http.MethodPut, http.MethodDelete:
		return m, nil
	}
	return "", withDetail(errXMethodIncorrectValue, "X-HTTP-Method: "+values[0])
}

// requestTarget returns the path exactly as escaped on the wire (what clients sign) and
// the raw query.
func requestTarget(r *http.Request) (path, query string) {
	target := r.RequestURI
	if target == "" || target == "*" {
		return r.URL.EscapedPath(), r.URL.RawQuery
	}
	if !strings.HasPrefix(target, "/") { // absolute form, through a proxy
		if u, err := url.Parse(target); err == nil {
			return u.EscapedPath(), u.RawQuery
		}
	}
	path, query, _ = strings.Cut(target, "?")
	return path, query
}

func baseURL(r *http.Request, account string) string { return baseFor(r.TLS != nil, r.Host, account) }

// baseFor is the base URL scheme://host/account of a request, or of a $batch sub-request;
// scheme://host when account is "", for an account named in the host.
func baseFor(tls bool, host, account string) string {
	if b := lastBase.Load(); b != nil && b.tls == tls && b.host == host && b.account == account {
		return b.text
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	text := scheme + "://" + host
	if account != "" {
		text += "/" + url.PathEscape(account)
	}
	lastBase.Store(&baseStamp{tls: tls, host: host, account: account, text: text})
	return text
}

// lastBase holds the last base URL built: a client sends its requests to one host and
// account, so most requests reuse it. One entry, so it needs no bound.
var lastBase atomic.Pointer[baseStamp]

type baseStamp struct {
	tls                 bool
	host, account, text string
}

// newRequestID returns a random GUID, the form the service's request IDs take.
func newRequestID() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := rand.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return tabula.Guid(b).String()
}

// presizedBody is the most readBody allocates for a body before reading it.
const presizedBody = 256 << 10

// readBody reads the request body, refusing more than MaxRequestBody bytes.
func (c *call) readBody() ([]byte, *tabula.Error) { return c.readBodyInto(nil) }

// readBodyInto is readBody into buf, an empty buffer, when it has room: a pooled one.
func (c *call) readBodyInto(buf []byte) ([]byte, *tabula.Error) {
	if c.r.ContentLength > MaxRequestBody {
		return nil, withDetail(tabula.ErrRequestBodyTooLarge, "Content-Length "+strconv.FormatInt(c.r.ContentLength, 10)+" exceeds 4 MiB")
	}
	if c.r.Body == nil {
		return nil, nil
	}
	var data []byte
	var err error
	if n := c.r.ContentLength; n >= 0 {
		// Sized from Content-Length, one byte more to see the end without growing; but no
		// more than presizedBody before the bytes arrive, so that a client declaring 4 MiB
		// and sending nothing does not hold 4 MiB of the server's memory.
		if size := int(min(n+1, presizedBody)); cap(buf) < size {
			buf = make([]byte, 0, size)
		}
		data, err = appendFrom(io.LimitReader(c.r.Body, MaxRequestBody+1), buf)
	} else {
		data, err = io.ReadAll(io.LimitReader(c.r.Body, MaxRequestBody+1))
	}
	if err != nil {
		return nil, invalidInput("", "reading the request body: "+err.Error())
	}
	if len(data) > MaxRequestBody {
		return nil, withDetail(tabula.ErrRequestBodyTooLarge, "the body exceeds 4 MiB")
	}
	return data, nil
}

// appendFrom appends everything r holds to buf, whose capacity is expected to hold it all.
func appendFrom(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// send writes a response with a body (or none when contentType is empty).
func (c *call) send(status int, contentType string, body []byte) {
	c.written = true
	c.writeCORS()
	h := c.w.Header()
	if c.queryAnswer && status == http.StatusOK && h["Vary"] == nil {
		c.set(h, "Vary", "Origin")
	}
	if contentType != "" {
		c.set(h, "Content-Type", contentType)
		c.set(h, "Content-Length", strconv.Itoa(len(body)))
	}
	c.w.WriteHeader(status)
	if len(body) > 0 && c.r.Method != http.MethodHead {
		_, _ = c.w.Write(body)
	}
}

// setHeader sets a header under exactly the name given, as the service spells it (ETag,
// DataServiceId, x-ms-request-id), rather than Go's canonical form; header names are
// case-insensitive, but what goes on the wire is then the service's bytes.
func setHeader(h http.Header, name, value string) {
	if len(h) > 0 {
		delete(h, canonicalName(name)) // h.Del(name), without converting name each time
	}
	h[name] = []string{value}
}

// commonCanonicalNames are the canonical forms of the names every response carries, looked
// up without the sync.Map's locking and boxing (it is only read).
var commonCanonicalNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"x-ms-request-id", "x-ms-version", "x-ms-client-request-id", "Date", "Server",
		"X-Content-Type-Options", "Cache-Control", "Content-Type", "Content-Length", "ETag", "Location",
		"DataServiceId", "DataServiceVersion", "Preference-Applied", "x-ms-error-code"} {
		m[n] = textproto.CanonicalMIMEHeaderKey(n)
	}
	return m
}()

// canonicalNames caches textproto.CanonicalMIMEHeaderKey for setHeader's names, which are
// constants of this package.
var canonicalNames sync.Map

func canonicalName(name string) string {
	if c, ok := commonCanonicalNames[name]; ok {
		return c
	}
	if c, ok := canonicalNames.Load(name); ok {
		return c.(string)
	}
	c, _ := canonicalNames.LoadOrStore(name, textproto.CanonicalMIMEHeaderKey(name))
	return c.(string)
}

// parseQuery splits a query string on '&' only: the service, unlike Go's url.ParseQuery,
// takes ';' as an ordinary character, and clients do send $format=application/json;odata=…
// unescaped.
func parseQuery(raw string) (url.Values, error) {
	var v url.Values // nil, and read as empty, for a request with no query
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		key, value, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(key)
		if err != nil {
			return nil, err
		}
		if value, err = url.QueryUnescape(value); err != nil {
			return nil, err
		}
		if v == nil {
			v = url.Values{}
		}
		v[key] = append(v[key], value)
	}
	return v, nil
}

// noContent answers 204.
func (c *call) noContent() { c.send(http.StatusNoContent, "", nil) }
