package server

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/tabuladb/tabula"
)

// kind is what a request path addresses.
type kind int

const (
	resService   kind = iota + 1 // /account (service properties and stats)
	resTables                    // /account/Tables
	resTable                     // /account/Tables('name')
	resEntitySet                 // /account/name or /account/name()
	resEntity                    // /account/name(PartitionKey='…',RowKey='…')
	resBatch                     // /account/$batch
)

// resource is a parsed request path.
type resource struct {
	kind   kind
	table  string
	pk, rk string
}

// splitAccount splits an escaped path-style path into the account (the first segment, as
// the emulators address accounts) and the escaped rest.
func splitAccount(escapedPath string) (account, rest string, err *tabula.Error) {
	p, ok := strings.CutPrefix(escapedPath, "/")
	if !ok {
		return "", "", withDetail(errInvalidURI, "the path does not start with '/'")
	}
	seg, rest, _ := strings.Cut(p, "/")
	account, uerr := url.PathUnescape(seg)
	if uerr != nil || account == "" {
		return "", "", withDetail(errInvalidURI, "the path does not start with an account name")
	}
	return account, rest, nil
}

// accountOf finds the account a request addresses and the escaped rest of its path. The
// account is named in the host, as on the service (account.table.core.windows.net) and in
// Azurite's production-style URLs (account.table.localhost), when the host name's first
// label is an account this server serves, or that account's -secondary; otherwise it is the
// path's first segment, as the emulators address accounts (127.0.0.1:10002/account/…), and
// always with Options.PathStyleOnly.
func (s *Server) accountOf(host, escapedPath string) (account, rest string, inHost bool, err *tabula.Error) {
	if account, ok := s.hostAccount(host); ok && !s.pathStyle {
		rest, ok := strings.CutPrefix(escapedPath, "/")
		if !ok {
			return "", "", false, withDetail(errInvalidURI, "the path does not start with '/'")
		}
		return account, rest, true, nil
	}
	account, rest, err = splitAccount(escapedPath)
	return account, rest, false, err
}

// hostAccount returns the account a host name (with or without a port) names in its first
// label, if this server serves it. An IP address, or a name of one label such as
// localhost, names none.
func (s *Server) hostAccount(host string) (string, bool) {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	label, _, dotted := strings.Cut(name, ".")
	if !dotted || label == "" {
		return "", false
	}
	for _, candidate := range [2]string{label, strings.ToLower(label)} { // host names ignore case
		primary, _ := strings.CutSuffix(candidate, secondarySuffix)
		if (s.dir.get(candidate) != nil || s.dir.get(primary) != nil) && net.ParseIP(name) == nil {
			return candidate, true
		}
	}
	return "", false
}

// parseResource parses the escaped path after the account segment. The segment is unescaped as a
// whole before the key predicate is read, so a key may arrive with its quotes, commas and
// parentheses escaped or not; only an escaped '/' or '\' ends up inside a key, where the service
// answers "Error in query syntax" (REST docs: "Querying tables and entities").
func parseResource(rest string) (resource, *tabula.Error) {
	if rest == "" {
		return resource{kind: resService}, nil
	}
	if strings.Contains(rest, "/") {
		return resource{}, withDetail(errInvalidURI, "the path has more segments than account and resource")
	}
	seg, err := url.PathUnescape(rest)
	if err != nil {
		return resource{}, withDetail(errInvalidURI, "the path is not validly percent-encoded")
	}
	if strings.EqualFold(seg, "$batch") {
		return resource{kind: resBatch}, nil
	}
	name, args, hasArgs := strings.Cut(seg, "(")
	if name == "" {
		return resource{}, withDetail(errInvalidURI, "the path names no resource")
	}
	if hasArgs {
		var ok bool
		if args, ok = strings.CutSuffix(args, ")"); !ok {
			return resource{}, invalidInput(msgQuerySyntax, "the resource's parenthesis is not closed")
		}
	}
	if strings.EqualFold(name, "Tables") {
		if !hasArgs || strings.TrimSpace(args) == "" {
			return resource{kind: resTables}, nil
		}
		table, rest, ok := readQuoted(strings.TrimSpace(args))
		if !ok || strings.TrimSpace(rest) != "" {
			return resource{}, invalidInput(msgQuerySyntax, "Tables(…) must hold one quoted table name")
		}
		if err := checkTableName(table); err != nil {
			return resource{}, err
		}
		return resource{kind: resTable, table: table}, nil
	}
	if err := checkTableName(name); err != nil {
		return resource{}, err
	}
	if !hasArgs || strings.TrimSpace(args) == "" {
		return resource{kind: resEntitySet, table: name}, nil
	}
	pk, rk, perr := parseKeyPredicate(args)
	if perr != nil {
		return resource{}, perr
	}
	return resource{kind: resEntity, table: name, pk: pk, rk: rk}, nil
}

// maxTableName is the longest table name the service allows, in characters (REST docs:
// "Understanding the Table service data model").
const maxTableName = 63

// checkTableName refuses a table name in a URL that no table can have for its encoding or its
// length, as Create Table refuses it in a body: 400 InvalidResourceName for a name that is not
// UTF-8, 400 OutOfRangeInput for one longer than 63 characters. It is not looked up, and its
// error does not quote it. Any other name is looked up, and one that breaks the other rules
// is then not found, as before.
func checkTableName(name string) *tabula.Error {
	if !utf8.ValidString(name) {
		return withDetail(tabula.ErrInvalidResourceName, "the table name in the URL is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(name); n > maxTableName {
		return tabula.ErrOutOfRangeInput.WithMessage(msgNameLength,
			"the table name in the URL is %d characters long; it must be 3 to %d", n, maxTableName)
	}
	return nil
}

// parseKeyPredicate reads PartitionKey='…',RowKey='…' (in either order, each exactly
// once, quotes doubled inside values).
func parseKeyPredicate(s string) (pk, rk string, err *tabula.Error) {
	bad := func(why string) (string, string, *tabula.Error) {
		return "", "", invalidInput(msgQuerySyntax, "key predicate ("+s+"): "+why)
	}
	var hasPK, hasRK bool
	rest := s
	for i := 0; i < 2; i++ {
		rest = strings.TrimLeft(rest, " ")
		name, after, ok := strings.Cut(rest, "=")
		if !ok {
			return bad("expected Name='value'")
		}
		value, after, ok := readQuoted(strings.TrimLeft(after, " "))
		if !ok {
			return bad("expected a quoted value")
		}
		switch strings.TrimRight(name, " ") {
		case "PartitionKey":
			if hasPK {
				return bad("PartitionKey given twice")
			}
			pk, hasPK = value, true
		case "RowKey":
			if hasRK {
				return bad("RowKey given twice")
			}
			rk, hasRK = value, true
		default:
			return bad("only PartitionKey and RowKey address an entity")
		}
		rest = strings.TrimLeft(after, " ")
		if i == 0 {
			if rest, ok = strings.CutPrefix(rest, ","); !ok {
				return bad("expected both PartitionKey and RowKey")
			}
		}
	}
	if rest != "" {
		return bad("unexpected text after the keys")
	}
	for _, k := range []string{pk, rk} {
		if strings.ContainsAny(k, `/\`) {
			return bad("a key in the URL contains '/' or '\\'")
		}
	}
	return pk, rk, nil
}

// readQuoted reads a quoted literal, a doubled quote standing for one, returning the value and
// what follows the closing quote.
func readQuoted(s string) (value, rest string, ok bool) {
	if !strings.HasPrefix(s, "'") {
		return "", "", false
	}
	// Most keys hold no doubled quote: the value is then a slice of s, with no copy.
	end := strings.IndexByte(s[1:], '\'') + 1
	if end == 0 {
		return "", "", false
	}
	if end+1 >= len(s) || s[end+1] != '\'' {
		return s[1:end], s[end+1:], true
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[1:end])
	for i := end; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", "", false
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
