package server

import (
	"bytes"
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/tabuladb/tabula"
)

// Table ACLs: the stored access policies of "Set Table ACL" and "Get Table ACL", which a
// service SAS names with si ("Create a service SAS").

type signedIdentifiers struct {
	XMLName     xml.Name           `xml:"SignedIdentifiers"`
	Identifiers []signedIdentifier `xml:"SignedIdentifier"`
}

type signedIdentifier struct {
	ID string `xml:"Id"`
	// AccessPolicy is nil for an identifier with no start, expiry or permission, which
	// the service lists with no AccessPolicy element at all (the SDKs read it as none).
	AccessPolicy *accessPolicy `xml:"AccessPolicy,omitempty"`
}

type accessPolicy struct {
	Start      string `xml:"Start,omitempty"`
	Expiry     string `xml:"Expiry,omitempty"`
	Permission string `xml:"Permission,omitempty"`
}

// parseSignedIdentifiers reads and validates a Set Table ACL body: at most 5 identifiers,
// IDs of 1 to 64 characters, each once, permissions from "raud", times in ISO 8601. An
// empty body removes every policy.
func parseSignedIdentifiers(body []byte) ([]tabula.AccessPolicy, *tabula.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	var doc signedIdentifiers
	d := xml.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&doc); err != nil {
		return nil, withDetail(errInvalidXMLDocument, "the body is not a SignedIdentifiers document: "+err.Error())
	}
	if len(doc.Identifiers) > tabula.MaxAccessPolicies {
		return nil, withDetail(errInvalidXMLDocument, strconv.Itoa(len(doc.Identifiers))+" signed identifiers; at most 5 are allowed")
	}
	bad := func(i int, what string) ([]tabula.AccessPolicy, *tabula.Error) {
		return nil, withDetail(errInvalidXMLDocument, "SignedIdentifier "+strconv.Itoa(i)+": "+what)
	}
	seen := map[string]bool{}
	out := make([]tabula.AccessPolicy, 0, len(doc.Identifiers))
	for i, si := range doc.Identifiers {
		if n := len([]rune(si.ID)); n == 0 || n > tabula.MaxAccessPolicyID {
			return bad(i, "Id must have 1 to 64 characters")
		}
		if seen[si.ID] {
			return bad(i, "Id "+si.ID+" is given twice")
		}
		seen[si.ID] = true
		p := tabula.AccessPolicy{ID: si.ID}
		var ap accessPolicy
		if si.AccessPolicy != nil {
			ap = *si.AccessPolicy
		}
		var err error
		if s := ap.Start; s != "" {
			if p.Start, err = parseSASTime(s); err != nil {
				return bad(i, "Start "+s+" is not an ISO 8601 time")
			}
		}
		if s := ap.Expiry; s != "" {
			if p.Expiry, err = parseSASTime(s); err != nil {
				return bad(i, "Expiry "+s+" is not an ISO 8601 time")
			}
		}
		if p.Permission, err = canonicalPermissions(ap.Permission); err != nil {
			return bad(i, err.Error())
		}
		out = append(out, p)
	}
	return out, nil
}

// canonicalPermissions checks a table permission list and writes it in the order raud.
func canonicalPermissions(s string) (string, error) {
	var has [4]bool
	for _, c := range s {
		switch c {
		case 'r':
			has[0] = true
		case 'a':
			has[1] = true
		case 'u':
			has[2] = true
		case 'd':
			has[3] = true
		default:
			return "", errors.New("Permission " + s + " has a letter other than r, a, u, d")
		}
	}
	var out []byte
	for i, c := range []byte("raud") {
		if has[i] {
			out = append(out, c)
		}
	}
	return string(out), nil
}

// formatPolicyTime writes a policy's time as the service returns it, with seven fraction
// digits.
func formatPolicyTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.0000000Z")
}

// authorizeACL: only the account's key may read or change a table's ACL; a SAS cannot.
func (c *call) authorizeACL() *tabula.Error {
	if c.grant != nil {
		return withDetail(errAuthorizationFailure, "only the account key may read or set a table's access policies")
	}
	return nil
}

func (c *call) getTableACL(table string) error {
	if err := c.authorizeACL(); err != nil {
		return err
	}
	policies, err := c.ns.Table(table).AccessPolicies(c.r.Context())
	if err != nil {
		return c.aclError(err)
	}
	doc := signedIdentifiers{Identifiers: []signedIdentifier{}}
	for _, p := range policies {
		si := signedIdentifier{ID: p.ID}
		if ap := (accessPolicy{Start: formatPolicyTime(p.Start), Expiry: formatPolicyTime(p.Expiry), Permission: p.Permission}); ap != (accessPolicy{}) {
			si.AccessPolicy = &ap
		}
		doc.Identifiers = append(doc.Identifiers, si)
	}
	return c.sendXML(http.StatusOK, doc)
}

func (c *call) setTableACL(table string) error {
	if err := c.authorizeACL(); err != nil {
		return err
	}
	body, err := c.readBody()
	if err != nil {
		return err
	}
	policies, err := parseSignedIdentifiers(body)
	if err != nil {
		return err
	}
	if serr := c.ns.Table(table).SetAccessPolicies(c.r.Context(), policies); serr != nil {
		return c.aclError(serr)
	}
	c.noContent()
	return nil
}

// aclError is the answer to a Get or Set Table ACL that failed with err. A table that does
// not exist is TableNotFound to a request signed with the account's key, as the legacy Go
// SDK's recorded StorageTableSuite/TestSetPermissionsUnsuccessfully (github.com/Azure/
// azure-sdk-for-go, storage/recordings) shows for a Set, and ResourceNotFound, "The specified
// resource does not exist.", to one signed with a bearer token, as the Azure SDK for Python's
// recorded test_aad_access_policy_error shows for a Get and a Set.
func (c *call) aclError(err error) error {
	if c.bearer && errors.Is(err, tabula.ErrTableNotFound) {
		return withDetail(tabula.ErrResourceNotFound, serviceError(err).Detail)
	}
	return err
}

// bothSet is the detail the service gives a SAS that sets a field its policy sets too.
const bothSet = "Access policy fields can be associated with signature or SAS identifier but not both"

// applyPolicy completes a table SAS that names a stored access policy (si): the SAS takes
// from the policy each of start, expiry and permissions that it does not set itself; both
// setting one is refused, as is a policy that does not exist (or no longer does). It
// returns the effective permissions, start and expiry.
func (c *call) applyPolicy(table, id, sp, st, se string) (perms, start, expiry string, why string) {
	if c.ns == nil {
		return "", "", "", "the account has no tables"
	}
	policies, err := c.ns.Table(table).AccessPolicies(c.r.Context())
	if err != nil {
		return "", "", "", "si " + id + ": table " + table + " has no access policies"
	}
	for _, p := range policies {
		if p.ID != id {
			continue
		}
		perms, start, expiry = sp, st, se
		if p.Permission != "" {
			if sp != "" {
				return "", "", "", bothSet + " (sp, policy " + id + ")"
			}
			perms = p.Permission
		}
		if !p.Start.IsZero() {
			if st != "" {
				return "", "", "", bothSet + " (st, policy " + id + ")"
			}
			start = p.Start.UTC().Format(time.RFC3339Nano)
		}
		if !p.Expiry.IsZero() {
			if se != "" {
				return "", "", "", bothSet + " (se, policy " + id + ")"
			}
			expiry = p.Expiry.UTC().Format(time.RFC3339Nano)
		}
		return perms, start, expiry, ""
	}
	return "", "", "", "table " + table + " has no access policy " + id
}
