package server

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// The XML parsers of the service-level operations and the CORS matcher against arbitrary
// input: what they accept they write back and read again the same, and the server never
// answers 5xx.

func FuzzServiceProperties(f *testing.F) {
	for _, seed := range []string{
		corsProperties1,
		`<StorageServiceProperties/>`,
		`<StorageServiceProperties><Cors></Cors></StorageServiceProperties>`,
		`<StorageServiceProperties><HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>365</Days></RetentionPolicy></HourMetrics></StorageServiceProperties>`,
		`<StorageServiceProperties><Logging><Version>1.0</Version><RetentionPolicy><Enabled>true</Enabled><Days>0</Days></RetentionPolicy></Logging></StorageServiceProperties>`,
		`<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>get, Put</AllowedMethods><MaxAgeInSeconds>-1</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>`,
		`<?xml version="1.0"?><StorageServiceProperties><Cors><CorsRule/></Cors></StorageServiceProperties> x`,
	} {
		f.Add([]byte(seed))
	}
	h := newHarness(f, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseServiceProperties(data)
		if err == nil {
			doc, merr := xml.Marshal(p)
			if merr != nil {
				t.Fatalf("accepted %q but cannot write it: %v", data, merr)
			}
			again, err := parseServiceProperties(doc)
			if err != nil {
				t.Fatalf("accepted %q, wrote %s, which is refused: %v", data, doc, err)
			}
			if !reflect.DeepEqual(p, again) {
				t.Fatalf("%q read back as %+v, then %+v", data, p, again)
			}
		} else if err.StatusCode != http.StatusBadRequest {
			t.Fatalf("refused %q with %d", data, err.StatusCode)
		}
		resp := h.serveRaw("PUT", "/devstoreaccount1/?restype=service&comp=properties", "application/xml", data)
		no5xx(t, resp, data)
		if (resp.StatusCode == http.StatusAccepted) != (err == nil) {
			t.Fatalf("%q: parser says %v, server %d", data, err, resp.StatusCode)
		}
		got := h.serveRaw("GET", "/devstoreaccount1/?restype=service&comp=properties", "", nil)
		no5xx(t, got, "GET properties")
		// What Get writes (a byte order mark, short empty elements) reads back as a Set.
		doc, _ := io.ReadAll(got.Body)
		if _, err := parseServiceProperties(doc); err != nil {
			t.Fatalf("after %q, Get wrote %q, which is refused: %v", data, doc, err)
		}
	})
}

func FuzzSignedIdentifiers(f *testing.F) {
	for _, seed := range []string{
		``,
		`<SignedIdentifiers/>`,
		`<SignedIdentifiers><SignedIdentifier><Id>a</Id><AccessPolicy><Start>2024-05-06T00:00:00Z</Start><Expiry>2024-05-07T00:00:00.5Z</Expiry><Permission>raud</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
		`<SignedIdentifiers><SignedIdentifier><Id>a</Id></SignedIdentifier><SignedIdentifier><Id>a</Id></SignedIdentifier></SignedIdentifiers>`,
		`<SignedIdentifiers><SignedIdentifier><Id>😀</Id><AccessPolicy><Permission>dd</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`,
	} {
		f.Add([]byte(seed))
	}
	h := newHarness(f, nil)
	h.createTable("Fuzz")
	f.Fuzz(func(t *testing.T, data []byte) {
		policies, perr := parseSignedIdentifiers(data)
		resp := h.serveRaw("PUT", "/devstoreaccount1/Fuzz?comp=acl", "application/xml", data)
		no5xx(t, resp, data)
		if perr != nil {
			if perr.StatusCode != http.StatusBadRequest || resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("refused %q with %d, the server with %d", data, perr.StatusCode, resp.StatusCode)
			}
			return
		}
		// What the parser accepts, the engine stores and Get Table ACL gives back.
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("parsed %q but the server answered %d: %s", data, resp.StatusCode, body(t, resp))
		}
		got := h.serveRaw("GET", "/devstoreaccount1/Fuzz?comp=acl", "", nil)
		b := body(t, got)
		again, err := parseSignedIdentifiers([]byte(b))
		if err != nil {
			t.Fatalf("Get Table ACL after %q wrote %s, which is refused: %v", data, b, err)
		}
		if len(again) != len(policies) {
			t.Fatalf("%q: %d policies set, %d read back", data, len(policies), len(again))
		}
		for i := range policies {
			p, q := policies[i], again[i]
			if p.ID != q.ID || p.Permission != q.Permission || !p.Start.Truncate(100).Equal(q.Start) || !p.Expiry.Truncate(100).Equal(q.Expiry) {
				t.Fatalf("%q: policy %+v read back as %+v", data, p, q)
			}
		}
	})
}

func FuzzCORSPreflight(f *testing.F) {
	for _, seed := range [][3]string{
		{"https://app.example", "PUT", "x-ms-version,content-type"},
		{"https://evil.example", "GET", ""},
		{"", "GET", ""},
		{"https://app.example", "", ""},
		{"*", "put", " , ,x-ms-*"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	h := newHarness(f, nil)
	if resp := h.serveRaw("PUT", "/devstoreaccount1/?restype=service&comp=properties", "application/xml", []byte(corsProperties1)); resp.StatusCode != http.StatusAccepted {
		f.Fatalf("setting the rules: %d", resp.StatusCode)
	}
	rules, _ := parseServiceProperties([]byte(corsProperties1))
	f.Fuzz(func(t *testing.T, origin, method, headers string) {
		req := httptest.NewRequest("OPTIONS", "/devstoreaccount1/Fuzz()", nil)
		req.Host = "127.0.0.1:10002"
		for k, v := range map[string]string{"Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers} {
			if v != "" {
				req.Header[k] = []string{v}
			}
		}
		rec := httptest.NewRecorder()
		h.s.ServeHTTP(rec, req)
		resp := rec.Result()
		no5xx(t, resp, [3]string{origin, method, headers})
		origin, method = req.Header.Get("Origin"), req.Header.Get("Access-Control-Request-Method")
		requested := splitList(req.Header.Get("Access-Control-Request-Headers"))
		want := http.StatusForbidden
		switch {
		case origin == "" || method == "":
			want = http.StatusBadRequest
		default:
			for i := range rules.Cors.Rules {
				if r := &rules.Cors.Rules[i]; r.allowsOrigin(origin) && r.allowsMethod(method) && r.allowsHeaders(requested) {
					want = http.StatusOK
					break
				}
			}
		}
		if resp.StatusCode != want {
			t.Fatalf("preflight %q %q %q: %d, want %d", origin, method, headers, resp.StatusCode, want)
		}
		if want == http.StatusOK && !bytes.Equal([]byte(resp.Header.Get("Access-Control-Allow-Origin")), []byte(origin)) {
			t.Fatalf("preflight from %q allowed %q", origin, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	})
}
