package server

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tabuladb/tabula"
)

// A call is one request to the service's paths (everything but ReservedPrefix), from
// ServeHTTP, which sets the headers every answer carries, to answer, the one place its
// failure is written.

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
