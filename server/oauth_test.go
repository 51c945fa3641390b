package server

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// unsignedJWT makes a token of the shape Microsoft Entra ID issues, with claims overridden
// (a nil value removes a claim) and a signature nobody checks.
func unsignedJWT(now time.Time, override map[string]any) string {
	claims := map[string]any{
		"aud": "https://storage.azure.com",
		"iss": "https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/",
		"iat": now.Add(-time.Minute).Unix(),
		"nbf": now.Add(-time.Minute).Unix(),
		"exp": now.Add(time.Hour).Unix(),
		"oid": "00000000-0000-0000-0000-000000000001",
	}
	for k, v := range override {
		if v == nil {
			delete(claims, k)
		} else {
			claims[k] = v
		}
	}
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims) + ".c2lnbmF0dXJl"
}

// Bearer tokens are checked as Azurite's basic OAuth mode checks them: shape, issuer,
// audience (the storage resource or this account's table endpoint) and lifetime on the
// server's clock; and only over HTTPS, and only when the server accepts them.
func TestBearerTokens(t *testing.T) {
	future := testNow.Add(2 * time.Hour)
	for _, tc := range []struct {
		name   string
		token  string
		plain  bool // over HTTP
		off    bool // BearerTokens not set
		detail string
	}{
		{name: "storage audience", token: unsignedJWT(testNow, nil)},
		{name: "storage audience with slash", token: unsignedJWT(testNow, map[string]any{"aud": "https://storage.azure.com/"})},
		{name: "storage application id", token: unsignedJWT(testNow, map[string]any{"aud": "e406a681-f3d4-42a8-90b6-c2b029497af1"})},
		{name: "account endpoint", token: unsignedJWT(testNow, map[string]any{"aud": "https://devstoreaccount1.table.core.windows.net/"})},
		{name: "audience list", token: unsignedJWT(testNow, map[string]any{"aud": []string{"x", "https://storage.azure.com"}})},
		{name: "v2 issuer", token: unsignedJWT(testNow, map[string]any{"iss": "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0"})},
		{name: "another account's endpoint", token: unsignedJWT(testNow, map[string]any{"aud": "https://other.table.core.windows.net"}),
			detail: "the bearer token's audience https://other.table.core.windows.net is neither https://storage.azure.com nor account devstoreaccount1's table endpoint"},
		{name: "another resource", token: unsignedJWT(testNow, map[string]any{"aud": "https://vault.azure.net"}), detail: "audience https://vault.azure.net"},
		{name: "no audience", token: unsignedJWT(testNow, map[string]any{"aud": nil}), detail: "the bearer token has no audience"},
		{name: "foreign issuer", token: unsignedJWT(testNow, map[string]any{"iss": "https://evil.example/"}), detail: "issuer https://evil.example/ is not Microsoft Entra ID"},
		{name: "expired", token: unsignedJWT(testNow, map[string]any{"exp": testNow.Add(-time.Second).Unix()}), detail: "the bearer token expired at 2024-05-06T07:08:08Z"},
		{name: "not yet valid", token: unsignedJWT(testNow, map[string]any{"nbf": future.Unix()}), detail: "not valid before 2024-05-06T09:08:09Z"},
		{name: "no iat", token: unsignedJWT(testNow, map[string]any{"iat": nil}), detail: "lacks iat, nbf or exp"},
		{name: "two segments", token: "eyJhbGciOiJub25lIn0.e30", detail: "not a JWT"},
		{name: "not base64", token: "***.***.***", detail: "header is not a JWT header"},
		{name: "payload not JSON", token: base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256"}`)) + ".bm90IGpzb24.c2ln", detail: "payload is not JSON claims"},
		{name: "over HTTP", token: unsignedJWT(testNow, nil), plain: true, detail: "Authentication scheme Bearer is not allowed with HTTP"},
		{name: "not accepted", token: unsignedJWT(testNow, nil), off: true, detail: "bearer tokens are not accepted here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.s.bearer = !tc.off
			req := httptest.NewRequest("GET", "/devstoreaccount1/Tables", nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			req.Header.Set("x-ms-version", "2019-02-02")
			if !tc.plain {
				req.TLS = &tls.ConnectionState{}
			}
			rec := httptest.NewRecorder()
			h.s.ServeHTTP(rec, req)
			if tc.detail == "" {
				assert.Equal(t, http.StatusOK, rec.Code, rec.Header().Get("X-Tabula-Error-Detail"))
				return
			}
			assert.Equal(t, http.StatusForbidden, rec.Code)
			assert.Contains(t, rec.Body.String(), `"code":"AuthenticationFailed"`)
			assert.Contains(t, rec.Header().Get("X-Tabula-Error-Detail"), tc.detail)
		})
	}
}

// Whatever a client sends as a bearer token, checking it neither panics nor accepts a token
// without a storage audience and a lifetime that covers the server's clock.
func FuzzBearerToken(f *testing.F) {
	f.Add(unsignedJWT(testNow, nil))
	f.Add(unsignedJWT(testNow, map[string]any{"aud": []string{"https://devstoreaccount1.table.core.windows.net"}}))
	f.Add(unsignedJWT(testNow, map[string]any{"exp": "soon"}))
	f.Add("a.b.c")
	f.Add("..")
	h := newHarness(f, nil)
	h.s.bearer = true
	f.Fuzz(func(t *testing.T, token string) {
		req := httptest.NewRequest("GET", "/devstoreaccount1/Tables", nil)
		req.TLS = &tls.ConnectionState{}
		c := &call{s: h.s, w: httptest.NewRecorder(), r: req, account: DevelopmentAccountName, now: testNow}
		if h.s.checkBearer(c, token) != "" {
			return
		}
		var claims tokenClaims
		parts := strings.Split(token, ".")
		if len(parts) != 3 || decodeSegment(parts[1], &claims) != nil {
			t.Fatalf("accepted %q, which is not a JWT", token)
		}
		if claims.Expires == nil || testNow.After(unixSeconds(*claims.Expires)) {
			t.Fatalf("accepted %q, expired", token)
		}
		auds, _ := audiences(claims.Audience)
		ok := false
		for _, a := range auds {
			ok = ok || audienceFor(a, DevelopmentAccountName)
		}
		if !ok {
			t.Fatalf("accepted %q without a storage audience", token)
		}
	})
}
