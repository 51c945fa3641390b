package server

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
)

// What a request's URL says beyond the resource (route.go parses that): the target as
// escaped on the wire, the base URL of links and Location, and the query.

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
