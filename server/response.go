package server

import (
	"net/http"
	"net/textproto"
	"strconv"
	"sync"
)

// A response's headers, set under the names the service spells, and its sending.

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

// noContent answers 204.
func (c *call) noContent() { c.send(http.StatusNoContent, "", nil) }
