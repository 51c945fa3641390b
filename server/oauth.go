package server

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// Bearer tokens (OAuth 2.0 through Microsoft Entra ID), checked the way Azurite's basic OAuth
// mode checks them: the token must be a JWT of the right shape, issued by Entra ID for Azure
// Storage (or for this account's table endpoint) and within its lifetime on the server's
// clock. Its signature is NOT verified: Tabula cannot fetch Entra ID's signing keys, and a
// test's credential cannot get a real token. So a server that accepts bearer tokens must
// only be reachable by those who may write to it; this is why they are off unless
// Options.BearerTokens is set, and accepted only over HTTPS, as on the service.

// tokenAudiences are the audiences a storage token may carry whatever the account: the
// Azure Storage resource, by URL (what azcore's credentials ask for, as the
// "https://storage.azure.com/.default" scope) or by application ID.
var tokenAudiences = []string{
	"https://storage.azure.com", "https://storage.azure.com/",
	"e406a681-f3d4-42a8-90b6-c2b029497af1",
}

// tableEndpointSuffixes are the host suffixes of the clouds' table endpoints: a token for
// https://<account>.table.core.windows.net is good for that account only.
var tableEndpointSuffixes = []string{
	".table.core.windows.net", ".table.core.chinacloudapi.cn",
	".table.core.usgovcloudapi.net", ".table.core.cloudapi.de",
}

// tokenIssuers are prefixes of the issuers Entra ID signs access tokens as: v1.0 tokens
// (https://sts.windows.net/<tenant>/, and its sovereign clouds') and v2.0 tokens
// (https://login.microsoftonline.com/<tenant>/v2.0).
var tokenIssuers = []string{
	"https://sts.windows.net/", "https://sts.microsoftonline.de/",
	"https://sts.chinacloudapi.cn/", "https://sts.windows-ppe.net/",
	"https://login.microsoftonline.com/",
}

// tokenClaims are the claims of a JWT that the checks read. aud may be a string or a list.
type tokenClaims struct {
	Audience  json.RawMessage `json:"aud"`
	Issuer    string          `json:"iss"`
	IssuedAt  *float64        `json:"iat"`
	NotBefore *float64        `json:"nbf"`
	Expires   *float64        `json:"exp"`
}

// checkBearer checks a bearer token for the request's account and returns why it is
// refused, or "" if it is accepted.
func (s *Server) checkBearer(c *call, token string) string {
	if !s.bearer {
		return "bearer tokens are not accepted here (tabula serve --oauth basic accepts them)"
	}
	if c.r.TLS == nil {
		return "Authentication scheme Bearer is not allowed with HTTP"
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "the bearer token is not a JWT (header.payload.signature)"
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := decodeSegment(parts[0], &header); err != nil || header.Alg == "" {
		return "the bearer token's header is not a JWT header"
	}
	var claims tokenClaims
	if err := decodeSegment(parts[1], &claims); err != nil {
		return "the bearer token's payload is not JSON claims"
	}
	if claims.IssuedAt == nil || claims.NotBefore == nil || claims.Expires == nil {
		return "the bearer token lacks iat, nbf or exp"
	}
	if c.now.Before(unixSeconds(*claims.NotBefore)) {
		return "the bearer token is not valid before " + unixSeconds(*claims.NotBefore).UTC().Format(time.RFC3339)
	}
	if c.now.After(unixSeconds(*claims.Expires)) {
		return "the bearer token expired at " + unixSeconds(*claims.Expires).UTC().Format(time.RFC3339)
	}
	if !hasAnyPrefix(claims.Issuer, tokenIssuers) {
		return "the bearer token's issuer " + claims.Issuer + " is not Microsoft Entra ID"
	}
	auds, ok := audiences(claims.Audience)
	if !ok || len(auds) == 0 {
		return "the bearer token has no audience"
	}
	for _, aud := range auds {
		if audienceFor(aud, c.account) {
			return ""
		}
	}
	return "the bearer token's audience " + strings.Join(auds, ", ") + " is neither https://storage.azure.com nor account " + c.account + "'s table endpoint"
}

// audienceFor reports whether aud is good for account.
func audienceFor(aud, account string) bool {
	for _, a := range tokenAudiences {
		if aud == a {
			return true
		}
	}
	host, ok := strings.CutPrefix(strings.TrimSuffix(aud, "/"), "https://")
	if !ok {
		return false
	}
	for _, suffix := range tableEndpointSuffixes {
		if name, ok := strings.CutSuffix(host, suffix); ok {
			return name == account
		}
	}
	return false
}

// audiences reads aud, a string or a list of strings.
func audiences(raw json.RawMessage) ([]string, bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, one != ""
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many, true
	}
	return nil, false
}

// decodeSegment decodes a JWT segment, base64url without padding, as JSON.
func decodeSegment(seg string, v any) error {
	data, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func unixSeconds(s float64) time.Time {
	return time.Unix(0, 0).Add(time.Duration(s * float64(time.Second)))
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
