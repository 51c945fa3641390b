package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/odata"
)

// MaxClockSkew is how far a Shared Key request's date may be from the server's clock, as on
// the service (REST docs: "Authorize with Shared Key").
const MaxClockSkew = 15 * time.Minute

// grant is what an authenticated request may do. A nil grant is an account key's: anything.
// A SAS is narrower: the services, resource types and permissions it names and, for a table
// SAS, one table and possibly a range of keys.
type grant struct {
	account       bool   // an account SAS (ss, srt) rather than a table SAS (tn)
	services      string // account SAS: ss
	resourceTypes string // account SAS: srt
	perms         string // sp
	table         string // table SAS: tn
	// The key range a table SAS is limited to; empty bounds are open.
	startPK, startRK, endPK, endRK string
}

// authenticate checks the request's credentials: a Shared Key or Shared Key Lite
// Authorization header, a bearer token (when Options.BearerTokens allows it; see oauth.go),
// or a SAS in the query string. Anonymous requests are refused: the
// service has no public access to tables. Every failure is AuthenticationFailed, with
// what exactly failed in the error's detail.
func (s *Server) authenticate(c *call, rawPath string) (*grant, *tabula.Error) {
	fail := func(why string) (*grant, *tabula.Error) {
		return nil, withDetail(errAuthenticationFailed, why)
	}
	keys := c.keys
	if keys == nil {
		return fail("account " + c.account + " is not one this server serves")
	}
	if auth := c.r.Header.Get("Authorization"); auth != "" {
		if token, ok := strings.CutPrefix(auth, "Bearer "); ok {
			if err := s.checkBearer(c, strings.TrimSpace(token)); err != "" {
				return fail(err)
			}
			c.bearer = true
			return nil, nil
		}
		if err := s.checkSharedKey(c, keys, auth, rawPath); err != "" {
			if strings.HasPrefix(err, sharedKeyMismatch) {
				return nil, wrongKey(c.account, err)
			}
			return fail(err)
		}
		return nil, nil
	}
	if c.query.Has("sig") {
		return s.checkSAS(c, keys)
	}
	return fail("the request carries neither an Authorization header nor a SAS")
}

// checkSharedKey verifies "SharedKey account:signature" or "SharedKeyLite account:signature" in
// their Table flavours (REST docs: "Authorize with Shared Key") and returns why it failed, or "" on
// success. The signed date may be x-ms-date or Date, and the canonical resource may name the
// account twice (path-style emulator URLs, as SDKs sign them) or once (as if the account were in
// the host name).
func (s *Server) checkSharedKey(c *call, keys [][]byte, auth, rawPath string) string {
	scheme, cred, _ := strings.Cut(auth, " ")
	if scheme != "SharedKey" && scheme != "SharedKeyLite" {
		return "authorization scheme " + scheme + " is not SharedKey or SharedKeyLite"
	}
	account, sig, ok := strings.Cut(strings.TrimSpace(cred), ":")
	if !ok || account != c.account {
		return "the Authorization header is not for account " + c.account
	}
	var wantBuf [64]byte // a SHA-256 signature decodes to 32 bytes; longer ones cannot match
	want, ok := decodeSignature(wantBuf[:], sig)
	if !ok {
		return "the signature is not base64"
	}
	// The canonical resource is /account followed by the path, or by the path less its own
	// leading /account; both are appended to the string to sign in place rather than built.
	var candidates [3]string // on the stack: most requests sign the first
	paths := append(candidates[:0], rawPath)
	if once, ok := strings.CutPrefix(rawPath, "/"+account); ok {
		paths = append(paths, once)
	}
	if c.primaryPath != "" {
		paths = append(paths, c.primaryPath) // a secondary request signed for the primary
	}
	hasComp := c.query.Has("comp")
	comp := c.query.Get("comp")
	buf := stringsToSign.Get().(*[]byte)
	defer stringsToSign.Put(buf)
	for _, date := range [2]string{c.r.Header.Get("X-Ms-Date"), c.r.Header.Get("Date")} {
		if date == "" {
			continue
		}
		for _, path := range paths {
			sts := (*buf)[:0]
			if scheme == "SharedKey" {
				sts = append(sts, c.r.Method...)
				sts = append(sts, '\n')
				sts = append(sts, c.r.Header.Get("Content-MD5")...)
				sts = append(sts, '\n')
				sts = append(sts, c.r.Header.Get("Content-Type")...)
				sts = append(sts, '\n')
			}
			sts = append(sts, date...)
			sts = append(sts, '\n', '/')
			sts = append(sts, account...)
			sts = append(sts, path...)
			if hasComp {
				sts = append(sts, "?comp="...)
				sts = append(sts, comp...)
			}
			*buf = sts
			if !signedBy(keys, sts, want) {
				continue
			}
			t, err := parseHTTPDate(date)
			if err != nil {
				return "the signed date " + date + " is not an HTTP date"
			}
			if d := c.now.Sub(t); d > MaxClockSkew || d < -MaxClockSkew {
				return "the signed date " + date + " is more than 15 minutes from the server's clock"
			}
			return ""
		}
	}
	resource := "/" + account + rawPath
	return sharedKeyMismatch + " (canonical resource " + resource + ", signed date from x-ms-date or Date)"
}

// sharedKeyMismatch begins the reason of a Shared Key signature that no key of the account
// makes: almost always a connection string with another AccountKey.
const sharedKeyMismatch = "the signature does not match the request"

// wrongKey is the AuthenticationFailed of a signature no key of account makes. The hint says
// which key to check, in the detail (the request log, X-Tabula-Error-Detail); the body stays
// the service's own, as its recorded answers have it, since clients may compare it.
func wrongKey(account, why string) *tabula.Error {
	hint := "check the AccountKey in the connection string: it must be a key of account " + account
	if account == DevelopmentAccountName {
		hint += " (the emulators' published key, unless the server was given --accounts)"
	}
	return errAuthenticationFailed.WithDetail("%s; %s", why, hint)
}

// atSecondary prepares a path-style request to the secondary, whose escaped path after the
// "<account>-secondary" segment is rest, and returns the resource's path.
//
// Its signature may cover the secondary URL as written (the JS and .NET SDKs sign it so) or
// the same request to the primary: the service's canonical resource names the account, never
// its -secondary (REST docs: "Authorize with Shared Key"), and the emulator the SDKs are tested
// against, Azurite, accepts both (its TableSharedKeyAuthenticator). Only reads reach the
// secondary, so the same signature reads the same data at either endpoint, as on the service.
//
// The Python SDK (azure-data-tables, and az storage table stats through it) reaches the
// secondary of a path-style endpoint by putting the secondary's host and path in front of the
// primary URL it has signed: Get Table Service Stats from the connection string tabula serve
// prints goes to /devstoreaccount1-secondary/devstoreaccount1/?restype=service&comp=stats,
// signed for /devstoreaccount1/?restype=service&comp=stats. A second segment naming the
// account is read so: no resource path has two segments, so nothing else changes meaning.
func (c *call) atSecondary(rest string) string {
	if after, ok := strings.CutPrefix(rest, c.account+"/"); ok {
		rest = after
	}
	c.primaryPath = "/" + c.account + "/" + rest
	return rest
}

// parseHTTPDate is http.ParseTime, remembering the last date read: a client signs every
// request of a second with the same date, and parsing it cost a tenth of a point get.
func parseHTTPDate(date string) (time.Time, error) {
	if d := lastSignedDate.Load(); d != nil && d.text == date {
		return d.t, nil
	}
	t, err := http.ParseTime(date)
	if err == nil {
		lastSignedDate.Store(&signedDate{text: date, t: t})
	}
	return t, err
}

// lastSignedDate is the last date parseHTTPDate read. One entry: no bound needed.
var lastSignedDate atomic.Pointer[signedDate]

type signedDate struct {
	text string
	t    time.Time
}

// decodeSignature decodes a base64 signature into dst when it fits, as
// base64.StdEncoding.DecodeString would, without allocating.
func decodeSignature(dst []byte, sig string) ([]byte, bool) {
	if base64.StdEncoding.DecodedLen(len(sig)) > len(dst) {
		want, err := base64.StdEncoding.DecodeString(sig)
		return want, err == nil
	}
	var src [88]byte // base64 of at most 64 bytes
	n, err := base64.StdEncoding.Decode(dst, src[:copy(src[:], sig)])
	return dst[:n], err == nil
}

// stringsToSign holds buffers for Shared Key strings to sign, reused between requests.
var stringsToSign = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// keyedHash is an HMAC-SHA256 state keyed with one account key, with room for its sum.
type keyedHash struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

func signedBy(keys [][]byte, stringToSign, want []byte) bool {
	for _, k := range keys {
		pool := keyedHashes(k)
		m := pool.Get().(*keyedHash)
		m.h.Reset()
		_, _ = m.h.Write(stringToSign)
		ok := hmac.Equal(m.h.Sum(m.sum[:0]), want)
		pool.Put(m)
		if ok {
			return true
		}
	}
	return false
}

// hmacPools holds, per account key, a pool of HMAC-SHA256 states keyed with it: setting a
// key up (hashing its pads) costs as much as signing a short string, so requests reuse it.
// The keys are the server's accounts', never a client's, so the map stays small.
var hmacPools struct {
	sync.RWMutex
	byKey map[string]*sync.Pool // string(key) -> pool of *keyedHash
}

func keyedHashes(key []byte) *sync.Pool {
	hmacPools.RLock()
	p := hmacPools.byKey[string(key)] // no conversion is allocated for a map index
	hmacPools.RUnlock()
	if p != nil {
		return p
	}
	hmacPools.Lock()
	defer hmacPools.Unlock()
	if p = hmacPools.byKey[string(key)]; p == nil {
		if hmacPools.byKey == nil {
			hmacPools.byKey = make(map[string]*sync.Pool)
		}
		k := bytes.Clone(key)
		p = &sync.Pool{New: func() any { return &keyedHash{h: hmac.New(sha256.New, k)} }}
		hmacPools.byKey[string(k)] = p
	}
	return p
}

// sasParameters are the query parameters a SAS signs or is made of; each may appear once,
// or the SAS is refused.
var sasParameters = []string{"sv", "ss", "srt", "sp", "st", "se", "sip", "spr", "ses", "si", "tn", "spk", "srk", "epk", "erk", "sig"}

// checkSAS verifies a table SAS (tn) or an account SAS (ss, srt) and returns its grant. A
// table SAS may name a stored access policy of its table (si), which supplies what the SAS
// leaves out (see applyPolicy). Every parameter appears at most once. The
// protocol restriction (spr) is checked for a valid value but not enforced, because Tabula
// serves plain HTTP, as the emulators do, and the Go SDK's GetAccountSASURL always asks
// for https.
func (s *Server) checkSAS(c *call, keys [][]byte) (*grant, *tabula.Error) {
	q := c.query
	fail := func(why string) (*grant, *tabula.Error) {
		return nil, withDetail(errAuthenticationFailed, "SAS: "+why)
	}
	for _, name := range sasParameters {
		if len(q[name]) > 1 {
			return fail(name + " is given more than once")
		}
	}
	want, err := base64.StdEncoding.DecodeString(q.Get("sig"))
	if err != nil {
		return fail("sig is not base64")
	}
	sv := q.Get("sv")
	if sv == "" {
		return fail("sv is missing")
	}
	g := &grant{perms: q.Get("sp")}
	st, se := q.Get("st"), q.Get("se")
	var sts string
	switch {
	case q.Has("tn") || !q.Has("ss"):
		// A table SAS names its table in tn; one without tn is for the table its request
		// addresses, whose name its signature covers all the same (see pathTable).
		if g.table = q.Get("tn"); !q.Has("tn") {
			if g.table = c.pathTable(); g.table == "" {
				return fail("neither a table SAS (tn, or a table's URL) nor an account SAS (ss)")
			}
		}
		g.startPK, g.startRK, g.endPK, g.endRK = q.Get("spk"), q.Get("srk"), q.Get("epk"), q.Get("erk")
		fields := []string{g.perms, q.Get("st"), q.Get("se"), "/table/" + c.account + "/" + strings.ToLower(g.table), q.Get("si")}
		if sv >= "2015-04-05" {
			fields = append(fields, q.Get("sip"), q.Get("spr"))
		}
		fields = append(fields, sv, g.startPK, g.startRK, g.endPK, g.endRK)
		sts = strings.Join(fields, "\n")
	case q.Has("ss"):
		g.account, g.services, g.resourceTypes = true, q.Get("ss"), q.Get("srt")
		fields := []string{c.account, g.perms, g.services, g.resourceTypes, q.Get("st"), q.Get("se"), q.Get("sip"), q.Get("spr"), sv}
		if sv >= "2020-12-06" {
			fields = append(fields, q.Get("ses"))
		}
		sts = strings.Join(fields, "\n") + "\n"
	}
	if !signedBy(keys, []byte(sts), want) {
		return fail("the signature does not match")
	}
	if si := q.Get("si"); si != "" {
		if g.account {
			return fail("an account SAS cannot name a stored access policy (si)")
		}
		var why string
		if g.perms, st, se, why = c.applyPolicy(g.table, si, g.perms, st, se); why != "" {
			return fail(why)
		}
	}
	if se == "" {
		return fail("neither the SAS nor a stored access policy sets an expiry (se)")
	}
	expiry, err := parseSASTime(se)
	if err != nil {
		return fail("se " + se + " is not an ISO 8601 UTC time")
	}
	if !c.now.Before(expiry) {
		return fail("expired at " + se)
	}
	if st != "" {
		start, err := parseSASTime(st)
		if err != nil {
			return fail("st " + st + " is not an ISO 8601 UTC time")
		}
		if c.now.Before(start) {
			return fail("not valid before " + st)
		}
	}
	switch spr := q.Get("spr"); spr {
	case "", "https", "https,http", "http,https":
	default:
		return fail("spr " + spr + " is not https or https,http")
	}
	if sip := q.Get("sip"); sip != "" && !ipAllowed(sip, c.r.RemoteAddr) {
		return nil, withDetail(errAuthorizationSourceIPMismatch, "the client's address is outside sip "+sip)
	}
	return g, nil
}

// pathTable is the table a request's URL addresses ("" for none): what a table SAS without
// tn is for. A stored-policy SAS signed by hand often leaves tn out, since the policy and the
// URL say everything; the service accepts it, and so does Azurite, which reads a table SAS's
// table from the URL alone (its TableSASAuthenticator).
func (c *call) pathTable() string {
	res, err := parseResource(c.rest)
	if err != nil {
		return ""
	}
	return res.table
}

// parseSASTime reads the ISO 8601 forms a SAS may use for st and se.
func parseSASTime(s string) (time.Time, error) {
	var err error
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02"} {
		var t time.Time
		if t, err = time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// ipAllowed checks the client's address against sip, a single address or a range a-b. An
// address that is not an IP (the in-process transport's, say) is not checked.
func ipAllowed(sip, remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return true
	}
	lo, hi, isRange := strings.Cut(sip, "-")
	if !isRange {
		hi = lo
	}
	l, h := net.ParseIP(lo), net.ParseIP(hi)
	if l == nil || h == nil {
		return false
	}
	return bytes.Compare(ip.To16(), l.To16()) >= 0 && bytes.Compare(ip.To16(), h.To16()) <= 0
}

// operation is what a request (or one operation of a batch) does, for authorization.
type operation int

const (
	opQueryTables operation = iota + 1
	opCreateTable
	opDeleteTable
	opQueryEntities
	opGetEntity
	opInsert
	opUpdate
	opUpsert
	opDelete
	opService
	opSetService
)

// authorize checks a SAS grant against one operation on table. The codes are the
// service's: a table SAS used elsewhere is AuthorizationFailure; a missing permission,
// resource type or service has its own mismatch code. For an operation on one entity,
// authorizeKeys then checks the entity's keys.
func (g *grant) authorize(op operation, table string) *tabula.Error {
	if g == nil {
		return nil
	}
	need := map[operation]string{
		opQueryTables: "l", opCreateTable: "c", opDeleteTable: "d", opQueryEntities: "r", opGetEntity: "r",
		opInsert: "a", opUpdate: "u", opUpsert: "au", opDelete: "d", opService: "r", opSetService: "w",
	}[op]
	if g.account {
		if !strings.Contains(g.services, "t") {
			return withDetail(errAuthorizationServiceMismatch, "the account SAS does not include the table service (ss)")
		}
		resourceType := "o"
		switch op {
		case opQueryTables, opCreateTable, opDeleteTable:
			resourceType = "c"
		case opService, opSetService:
			resourceType = "s"
		}
		if !strings.Contains(g.resourceTypes, resourceType) {
			return withDetail(errAuthorizationResourceTypeMismatch, "the operation needs resource type "+resourceType+" (srt)")
		}
		if op == opCreateTable && strings.Contains(g.perms, "w") {
			return nil // create or write allows Create Table
		}
		if !hasAll(g.perms, need) {
			return withDetail(errAuthorizationPermissionMismatch, "the operation needs permission "+need+" (sp)")
		}
		return nil
	}
	switch op {
	case opQueryTables, opCreateTable, opDeleteTable, opService, opSetService:
		return withDetail(errAuthorizationFailure, "a table SAS only authorizes operations on the entities of its table")
	}
	if !strings.EqualFold(table, g.table) {
		return withDetail(errAuthorizationFailure, "the SAS is for table "+g.table)
	}
	if !hasAll(g.perms, need) {
		return withDetail(errAuthorizationPermissionMismatch, "the operation needs permission "+need+" (sp)")
	}
	return nil
}

// authorizeKeys checks that an entity is within a table SAS's key range.
func (g *grant) authorizeKeys(pk, rk string) *tabula.Error {
	if g.hasRange() && !g.inRange(pk, rk) {
		return withDetail(errAuthorizationFailure, "the entity is outside the SAS's key range")
	}
	return nil
}

func hasAll(perms, need string) bool {
	for _, p := range need {
		if !strings.ContainsRune(perms, p) {
			return false
		}
	}
	return true
}

func (g *grant) hasRange() bool {
	return g != nil && !g.account && (g.startPK != "" || g.endPK != "")
}

// inRange reports whether (pk, rk) is within the SAS's key range, comparing keys as the
// service orders them (by UTF-16 code units).
func (g *grant) inRange(pk, rk string) bool {
	if g.startPK != "" {
		c := odata.CompareStrings(pk, g.startPK)
		if c < 0 || c == 0 && g.startRK != "" && odata.CompareStrings(rk, g.startRK) < 0 {
			return false
		}
	}
	if g.endPK != "" {
		c := odata.CompareStrings(pk, g.endPK)
		if c > 0 || c == 0 && g.endRK != "" && odata.CompareStrings(rk, g.endRK) > 0 {
			return false
		}
	}
	return true
}

// rangeFilter is the SAS's key range as an OData filter, to be ANDed with a query's own.
func (g *grant) rangeFilter() string {
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	var terms []string
	if g.startPK != "" {
		if g.startRK != "" {
			terms = append(terms, "(PartitionKey gt "+lit(g.startPK)+" or (PartitionKey eq "+lit(g.startPK)+" and RowKey ge "+lit(g.startRK)+"))")
		} else {
			terms = append(terms, "PartitionKey ge "+lit(g.startPK))
		}
	}
	if g.endPK != "" {
		if g.endRK != "" {
			terms = append(terms, "(PartitionKey lt "+lit(g.endPK)+" or (PartitionKey eq "+lit(g.endPK)+" and RowKey le "+lit(g.endRK)+"))")
		} else {
			terms = append(terms, "PartitionKey le "+lit(g.endPK))
		}
	}
	return strings.Join(terms, " and ")
}
