package server

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"

	"github.com/tabuladb/tabula"
)

// The service-level XML operations (Get/Set Table Service Properties, Get Table Service
// Stats) and the table ACL operations (Get/Set Table ACL), the only ones of the Table
// service that speak XML.

// routeXML dispatches a request that carries restype or comp.
func (c *call) routeXML(res resource, method string) error {
	restype, comp := c.query.Get("restype"), c.query.Get("comp")
	switch {
	case res.kind == resService && restype == "service" && comp == "properties":
		switch method {
		case http.MethodGet, http.MethodHead:
			return c.getServiceProperties()
		case http.MethodPut:
			return c.setServiceProperties()
		}
	case res.kind == resService && restype == "service" && comp == "stats":
		if method == http.MethodGet || method == http.MethodHead {
			return c.getServiceStats()
		}
	case res.kind == resEntitySet && comp == "acl" && restype == "":
		switch method {
		case http.MethodGet, http.MethodHead:
			return c.getTableACL(res.table)
		case http.MethodPut:
			return c.setTableACL(res.table)
		}
	default:
		return withDetail(errInvalidQueryParameterValue, "restype="+restype+"&comp="+comp+" names no operation on this resource")
	}
	return withDetail(errMethodNotAllowed, method+" is not allowed here")
}

// serviceProperties is the body of Get and Set Table Service Properties. Pointers tell an
// element left out of a Set (which keeps its stored value) from one given.
type serviceProperties struct {
	XMLName       xml.Name           `xml:"StorageServiceProperties"`
	Logging       *loggingProperties `xml:"Logging"`
	HourMetrics   *metricsProperties `xml:"HourMetrics"`
	MinuteMetrics *metricsProperties `xml:"MinuteMetrics"`
	Cors          *corsProperties    `xml:"Cors"`
}

// The fields of loggingProperties and corsRule are in the order the service writes the
// elements, which is not the order of the REST docs' examples: Version, Read, Write, Delete
// and AllowedMethods, AllowedOrigins, AllowedHeaders, ExposedHeaders, MaxAgeInSeconds, as
// the aztables module's recorded TestSetLogging and TestSetCors read them back.
type loggingProperties struct {
	Version         string          `xml:"Version"`
	Read            bool            `xml:"Read"`
	Write           bool            `xml:"Write"`
	Delete          bool            `xml:"Delete"`
	RetentionPolicy retentionPolicy `xml:"RetentionPolicy"`
}

type metricsProperties struct {
	Version         string          `xml:"Version"`
	Enabled         bool            `xml:"Enabled"`
	IncludeAPIs     *bool           `xml:"IncludeAPIs,omitempty"`
	RetentionPolicy retentionPolicy `xml:"RetentionPolicy"`
}

type retentionPolicy struct {
	Enabled bool `xml:"Enabled"`
	Days    *int `xml:"Days,omitempty"`
}

type corsProperties struct {
	Rules []corsRule `xml:"CorsRule"`
}

type corsRule struct {
	AllowedMethods  string `xml:"AllowedMethods"`
	AllowedOrigins  string `xml:"AllowedOrigins"`
	AllowedHeaders  string `xml:"AllowedHeaders"`
	ExposedHeaders  string `xml:"ExposedHeaders"`
	MaxAgeInSeconds int    `xml:"MaxAgeInSeconds"`
}

// The limits of "Cross-Origin Resource Sharing (CORS) support for the Azure Storage
// services" and "Set Table Service Properties".
const (
	maxCorsRules        = 5
	maxCorsOrigins      = 64
	maxCorsItemLength   = 256 // an origin, or an allowed or exposed header
	maxCorsLiterals     = 64  // literal allowed (or exposed) headers in a rule
	maxCorsPrefixed     = 2   // prefixed headers (x-ms-meta-*) in a rule
	maxCorsSettingsSize = 2048
	minRetentionDays    = 1
	maxRetentionDays    = 365
)

// corsMethods are the methods a CORS rule may allow.
var corsMethods = map[string]bool{"DELETE": true, "GET": true, "HEAD": true, "MERGE": true, "POST": true,
	"OPTIONS": true, "PUT": true, "PATCH": true}

// defaultServiceProperties are what an account has before any Set: logging and metrics off,
// no CORS rules.
func defaultServiceProperties() serviceProperties {
	return serviceProperties{
		Logging:       &loggingProperties{Version: "1.0"},
		HourMetrics:   &metricsProperties{Version: "1.0"},
		MinuteMetrics: &metricsProperties{Version: "1.0"},
		Cors:          &corsProperties{},
	}
}

// parseServiceProperties reads and validates a Set Table Service Properties body.
func parseServiceProperties(body []byte) (serviceProperties, *tabula.Error) {
	var p serviceProperties
	d := xml.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&p); err != nil {
		return p, withDetail(errInvalidXMLDocument, "the body is not a StorageServiceProperties document: "+err.Error())
	}
	if tok, err := d.Token(); err == nil {
		if _, ok := tok.(xml.CharData); !ok || len(bytes.TrimSpace(tok.(xml.CharData))) != 0 {
			return p, withDetail(errInvalidXMLDocument, "the body goes on after StorageServiceProperties")
		}
	}
	bad := func(what string) (serviceProperties, *tabula.Error) {
		return p, withDetail(errInvalidXMLDocument, what)
	}
	if l := p.Logging; l != nil {
		if l.Version != "1.0" {
			return bad("Logging/Version must be 1.0")
		}
		if err := l.RetentionPolicy.check("Logging"); err != nil {
			return p, err
		}
	}
	for _, m := range []struct {
		name string
		p    *metricsProperties
	}{{"HourMetrics", p.HourMetrics}, {"MinuteMetrics", p.MinuteMetrics}} {
		if m.p == nil {
			continue
		}
		if m.p.Version != "1.0" {
			return bad(m.name + "/Version must be 1.0")
		}
		if m.p.Enabled && m.p.IncludeAPIs == nil {
			return bad(m.name + "/IncludeAPIs is required when the metrics are enabled")
		}
		if !m.p.Enabled {
			m.p.IncludeAPIs = nil
		}
		if err := m.p.RetentionPolicy.check(m.name); err != nil {
			return p, err
		}
	}
	if p.Cors != nil {
		if len(p.Cors.Rules) > maxCorsRules {
			return p, withDetail(errInvalidXMLDocument, strconv.Itoa(len(p.Cors.Rules))+" CORS rules; at most 5 are allowed")
		}
		size := 0
		for i := range p.Cors.Rules {
			r := &p.Cors.Rules[i]
			if err := r.check(i); err != nil {
				return p, err
			}
			size += len(r.AllowedOrigins) + len(r.AllowedMethods) + len(r.ExposedHeaders) + len(r.AllowedHeaders) +
				len(strconv.Itoa(r.MaxAgeInSeconds))
		}
		if size > maxCorsSettingsSize {
			return bad("the CORS rules hold " + strconv.Itoa(size) + " characters; at most 2 KiB are allowed")
		}
	}
	return p, nil
}

func (r *retentionPolicy) check(owner string) *tabula.Error {
	if !r.Enabled {
		r.Days = nil
		return nil
	}
	if r.Days == nil || *r.Days < minRetentionDays || *r.Days > maxRetentionDays {
		return withDetail(errInvalidXMLDocument, owner+"/RetentionPolicy/Days must be 1 to 365 when the policy is enabled")
	}
	return nil
}

// check validates a CORS rule and normalizes its lists (items trimmed, methods upper-case).
func (r *corsRule) check(i int) *tabula.Error {
	bad := func(what string) *tabula.Error {
		return withDetail(errInvalidXMLDocument, "CorsRule "+strconv.Itoa(i)+": "+what)
	}
	origins := splitList(r.AllowedOrigins)
	if len(origins) == 0 || len(origins) > maxCorsOrigins {
		return bad("AllowedOrigins must list 1 to 64 origins")
	}
	for _, o := range origins {
		if len(o) > maxCorsItemLength {
			return bad("an origin is longer than 256 characters")
		}
	}
	methods := splitList(r.AllowedMethods)
	if len(methods) == 0 {
		return bad("AllowedMethods is empty")
	}
	for j, m := range methods {
		methods[j] = strings.ToUpper(m)
		if !corsMethods[methods[j]] {
			return bad("method " + m + " is not one of DELETE, GET, HEAD, MERGE, POST, OPTIONS, PUT, PATCH")
		}
	}
	if r.MaxAgeInSeconds < 0 {
		return bad("MaxAgeInSeconds is negative")
	}
	for _, list := range []struct{ name, value string }{{"AllowedHeaders", r.AllowedHeaders}, {"ExposedHeaders", r.ExposedHeaders}} {
		literals, prefixed := 0, 0
		for _, h := range splitList(list.value) {
			if len(h) > maxCorsItemLength {
				return bad(list.name + " has a header longer than 256 characters")
			}
			if strings.HasSuffix(h, "*") && h != "*" {
				prefixed++
			} else {
				literals++
			}
		}
		if literals > maxCorsLiterals || prefixed > maxCorsPrefixed {
			return bad(list.name + " has more than 64 literal or 2 prefixed headers")
		}
	}
	r.AllowedOrigins = strings.Join(origins, ",")
	r.AllowedMethods = strings.Join(methods, ",")
	r.AllowedHeaders = headerList(r.AllowedHeaders)
	r.ExposedHeaders = headerList(r.ExposedHeaders)
	return nil
}

// headerList is a rule's list of allowed or exposed headers as the service keeps it: the
// exact names first, then the prefixes (x-ms-meta-*), each in the order given. The Azure SDK
// for Python's recorded test_set_cors sent
// x-ms-meta-data*,x-ms-meta-target*,x-ms-meta-xyz,x-ms-meta-foo and read back
// x-ms-meta-xyz,x-ms-meta-foo,x-ms-meta-data*,x-ms-meta-target*.
func headerList(s string) string {
	items := splitList(s)
	exact := items[:0:0]
	var prefixes []string
	for _, h := range items {
		if strings.HasSuffix(h, "*") && h != "*" {
			prefixes = append(prefixes, h)
		} else {
			exact = append(exact, h)
		}
	}
	return strings.Join(append(exact, prefixes...), ",")
}

// splitList splits a comma-separated list, trimming items and dropping empty ones.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// loadServiceProperties returns the account's stored properties, or the defaults.
func (c *call) loadServiceProperties() (serviceProperties, *tabula.Error) {
	p := defaultServiceProperties()
	doc, err := c.ns.ServiceProperties(c.r.Context())
	if err != nil {
		return p, serviceError(err)
	}
	if doc == nil {
		return p, nil
	}
	if err := xml.Unmarshal(doc, &p); err != nil {
		return p, withDetail(tabula.ErrInternal, "stored service properties: "+err.Error())
	}
	return p, nil
}

func (c *call) getServiceProperties() error {
	if err := c.grant.authorize(opService, ""); err != nil {
		return err
	}
	p, err := c.loadServiceProperties()
	if err != nil {
		return err
	}
	if len(p.Cors.Rules) > 0 {
		// The answer depends on Origin once there are rules: the service says so whether or
		// not the request has one, as the aztables module's recorded TestSetCors shows (its
		// Get after the Set; its Get before, with no rules, has no Vary).
		c.set(c.w.Header(), "Vary", "Origin")
	}
	return c.sendXML(http.StatusOK, p)
}

func (c *call) setServiceProperties() error {
	if err := c.grant.authorize(opSetService, ""); err != nil {
		return err
	}
	if c.cosmos() {
		// Cosmos DB does not serve it (flavor.go): 501, whatever the body, in JSON.
		c.jsonError = true
		return withDetail(errCosmosNotSupported, "Set Table Service Properties (tabula serve --flavor cosmos)")
	}
	body, err := c.readBody()
	if err != nil {
		return err
	}
	set, err := parseServiceProperties(body)
	if err != nil {
		return err
	}
	// An element left out keeps its value; an empty Cors removes every rule.
	p, err := c.loadServiceProperties()
	if err != nil {
		return err
	}
	if set.Logging != nil {
		p.Logging = set.Logging
	}
	if set.HourMetrics != nil {
		p.HourMetrics = set.HourMetrics
	}
	if set.MinuteMetrics != nil {
		p.MinuteMetrics = set.MinuteMetrics
	}
	if set.Cors != nil {
		p.Cors = set.Cors
	}
	doc, merr := xml.Marshal(p)
	if merr != nil {
		return withDetail(tabula.ErrInternal, merr.Error())
	}
	// Stored in the form Get sends (less its prologue), so that a client reading the
	// document raw gets the engine's bytes.
	doc = shortEmptyElements(doc)
	if serr := c.ns.SetServiceProperties(c.r.Context(), doc); serr != nil {
		return serr
	}
	c.send(http.StatusAccepted, "", nil)
	return nil
}

// serviceStats is the body of Get Table Service Stats. Tabula has one copy of the data, so
// the secondary is always live and in sync as of now.
type serviceStats struct {
	XMLName        xml.Name `xml:"StorageServiceStats"`
	GeoReplication struct {
		Status       string `xml:"Status"`
		LastSyncTime string `xml:"LastSyncTime"`
	} `xml:"GeoReplication"`
}

func (c *call) getServiceStats() error {
	if err := c.grant.authorize(opService, ""); err != nil {
		return err
	}
	if !c.secondary {
		// Only the secondary endpoint answers stats (Get Table Service Stats).
		return withDetail(errInvalidQueryParameterValue, "service stats are served by the secondary endpoint, "+c.account+secondarySuffix)
	}
	var st serviceStats
	st.GeoReplication.Status = "live"
	st.GeoReplication.LastSyncTime = formatDate(c.now)
	return c.sendXML(http.StatusOK, st)
}

// sendXML answers with an XML document as the service writes them: a byte order mark, the
// declaration, then the document with each empty element in its short form (<Cors />,
// <SignedIdentifiers />, <AllowedHeaders />), as every document in the aztables module's
// recordings (TestGetProperties, TestSetAccessPolicy, TestGetStatistics) and the Azure SDK
// for Python's test_set_cors reads. It returns the failure to encode v, which is then the
// request's answer.
func (c *call) sendXML(status int, v any) error {
	b, err := xml.Marshal(v)
	if err != nil {
		return withDetail(tabula.ErrInternal, err.Error())
	}
	c.send(status, "application/xml", shortEmptyElements(append([]byte(xmlPrologue), b...)))
	return nil
}

// xmlPrologue starts every XML document the service sends: U+FEFF in UTF-8, and the
// declaration. Its error documents have the declaration only (see appendErrorXML).
const xmlPrologue = "\uFEFF" + `<?xml version="1.0" encoding="utf-8"?>`

// shortEmptyElements rewrites each <Name></Name> of doc, an element encoding/xml wrote with
// no content and no attributes, as <Name />. Character data holds no '<' (it is escaped),
// so every "></" closes an element.
func shortEmptyElements(doc []byte) []byte {
	out := doc[:0:0]
	for {
		i := bytes.Index(doc, []byte("></"))
		if i < 0 {
			return append(out, doc...)
		}
		end := bytes.IndexByte(doc[i+3:], '>')
		if end < 0 {
			return append(out, doc...)
		}
		name := doc[i+3 : i+3+end]
		start := i - len(name) - 1
		if start >= 0 && doc[start] == '<' && bytes.Equal(doc[start+1:i], name) {
			out = append(out, doc[:i]...)
			out = append(out, " />"...)
		} else {
			out = append(out, doc[:i+3+end+1]...)
		}
		doc = doc[i+3+end+1:]
	}
}
