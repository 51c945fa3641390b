package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// CORS as "Cross-Origin Resource Sharing (CORS) support for the Azure Storage services" and
// "Preflight Table Request" describe it: the account's rules (Set Table Service Properties)
// are matched in order, the first that allows the origin and method (and, for a preflight,
// every requested header) wins. CORS is not authorization: a preflight needs no
// credentials, and an actual request needs the usual ones.

// preflight answers OPTIONS: 200 with the Access-Control-* headers of the first matching
// rule, 403 CorsPreflightFailure when no rule matches, 400 when Origin or
// Access-Control-Request-Method is missing.
func (c *call) preflight() error {
	origin := c.r.Header.Get("Origin")
	method := c.r.Header.Get("Access-Control-Request-Method")
	switch {
	case c.ns == nil:
		return withDetail(errAuthenticationFailed, "account "+c.account+" is not one this server serves")
	case origin == "":
		return withDetail(errMissingCorsHeader, "the preflight has no Origin header")
	case method == "":
		return withDetail(errMissingCorsHeader, "the preflight has no Access-Control-Request-Method header")
	}
	requested := splitList(c.r.Header.Get("Access-Control-Request-Headers"))
	p, err := c.loadServiceProperties()
	if err != nil {
		return err
	}
	for i := range p.Cors.Rules {
		r := &p.Cors.Rules[i]
		if !r.allowsOrigin(origin) || !r.allowsMethod(method) || !r.allowsHeaders(requested) {
			continue
		}
		h := c.w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Methods", method)
		if len(requested) > 0 {
			h.Set("Access-Control-Allow-Headers", strings.Join(requested, ","))
		}
		h.Set("Access-Control-Max-Age", strconv.Itoa(r.MaxAgeInSeconds))
		h.Set("Access-Control-Allow-Credentials", "true")
		c.send(http.StatusOK, "", nil)
		return nil
	}
	return withDetail(errCorsPreflightFailure, "no CORS rule allows origin "+origin+", method "+method+" and headers "+strings.Join(requested, ","))
}

// corsHeaders finds the rule that matches an actual request carrying Origin; send then adds
// its headers to the response, whatever the outcome.
func (c *call) corsHeaders() {
	origin := c.r.Header.Get("Origin")
	if origin == "" || c.ns == nil {
		return
	}
	p, err := c.loadServiceProperties()
	if err != nil || len(p.Cors.Rules) == 0 {
		return
	}
	c.corsOrigin = origin
	for i := range p.Cors.Rules {
		if r := &p.Cors.Rules[i]; r.allowsOrigin(origin) && r.allowsMethod(c.r.Method) {
			c.cors = r
			return
		}
	}
}

// writeCORS adds the matched rule's headers to a response about to be sent: the allowed
// origin ("*" when the rule allows every origin), the response headers the rule exposes,
// and Vary: Origin whenever the answer depends on the origin.
func (c *call) writeCORS() {
	if c.corsOrigin == "" {
		return
	}
	h := c.w.Header()
	r := c.cors
	if r == nil {
		h.Set("Vary", "Origin") // rules exist, none matched: the answer still depends on Origin
		return
	}
	if r.AllowedOrigins == "*" {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", c.corsOrigin)
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Set("Vary", "Origin")
	}
	var exposed []string
	for name := range h {
		if matchesHeaderList(name, r.ExposedHeaders) {
			exposed = append(exposed, strings.ToLower(name))
		}
	}
	if len(exposed) > 0 {
		slices.Sort(exposed)
		h.Set("Access-Control-Expose-Headers", strings.Join(exposed, ","))
	}
}

func (r *corsRule) allowsOrigin(origin string) bool {
	for _, o := range splitList(r.AllowedOrigins) {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}

func (r *corsRule) allowsMethod(method string) bool {
	for _, m := range splitList(r.AllowedMethods) {
		if strings.EqualFold(m, method) {
			return true
		}
	}
	return false
}

func (r *corsRule) allowsHeaders(requested []string) bool {
	for _, h := range requested {
		if !matchesHeaderList(h, r.AllowedHeaders) {
			return false
		}
	}
	return true
}

// matchesHeaderList reports whether a header name is in a rule's list: "*", the name itself
// (any case), or a prefix ending in '*' (x-ms-meta-*).
func matchesHeaderList(name, list string) bool {
	name = strings.ToLower(name)
	for _, item := range splitList(list) {
		item = strings.ToLower(item)
		if item == "*" || item == name {
			return true
		}
		if prefix, ok := strings.CutSuffix(item, "*"); ok && strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}
