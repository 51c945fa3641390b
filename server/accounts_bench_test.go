package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

// BenchmarkFreshAccountHTTP is BenchmarkFreshAccount over a loopback connection, as a test
// helper in another language sees it: two requests on a kept-alive connection.
func BenchmarkFreshAccountHTTP(b *testing.B) {
	db, err := tabula.OpenInMemory(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := server.New(db, &server.Options{AdminKey: testAdminKey})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	client := hs.Client()
	call := func(method, path string) (int, []byte) {
		r, err := http.NewRequest(method, hs.URL+path, nil)
		if err != nil {
			b.Fatal(err)
		}
		r.SetBasicAuth(server.AdminUser, testAdminKey)
		resp, err := client.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	b.ReportAllocs()
	for b.Loop() {
		status, body := call(http.MethodPost, server.ReservedPrefix+"api/accounts")
		if status != http.StatusCreated {
			b.Fatal(status, string(body))
		}
		var c struct{ Name string }
		if err := json.Unmarshal(body, &c); err != nil {
			b.Fatal(err)
		}
		if status, body := call(http.MethodDelete, server.ReservedPrefix+"api/accounts/"+c.Name); status != http.StatusNoContent {
			b.Fatal(status, string(body))
		}
	}
}

// BenchmarkFreshAccount creates a fresh isolated account on a running server and drops it,
// through the management API (POST api/accounts, then DELETE api/accounts/{name}), as a test
// helper in any language does around each test; served by the handler directly, so that the
// figures are the server's cost without a network. An account that held a table costs its drop
// too (withTable).
func BenchmarkFreshAccount(b *testing.B) {
	for _, store := range []string{"memory", "disk"} {
		for _, withTable := range []bool{false, true} {
			name := store
			if withTable {
				name += "/withTable"
			}
			b.Run(name, func(b *testing.B) {
				var db *tabula.DB
				var err error
				if store == "memory" {
					db, err = tabula.OpenInMemory(nil)
				} else {
					db, err = tabula.Open(b.TempDir(), nil)
				}
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				s, err := server.New(db, &server.Options{AdminKey: testAdminKey})
				if err != nil {
					b.Fatal(err)
				}
				call := func(method, target string) *httptest.ResponseRecorder {
					r := httptest.NewRequest(method, target, nil)
					r.SetBasicAuth(server.AdminUser, testAdminKey)
					w := httptest.NewRecorder()
					s.ServeHTTP(w, r)
					return w
				}
				b.ReportAllocs()
				for b.Loop() {
					w := call(http.MethodPost, server.ReservedPrefix+"api/accounts")
					if w.Code != http.StatusCreated {
						b.Fatal(w.Code, w.Body.String())
					}
					var c struct{ Name string }
					if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil {
						b.Fatal(err)
					}
					if withTable {
						if _, err := s.Namespace(c.Name).CreateTable(ctx, "Orders"); err != nil {
							b.Fatal(err)
						}
					}
					if w := call(http.MethodDelete, server.ReservedPrefix+"api/accounts/"+c.Name); w.Code != http.StatusNoContent {
						b.Fatal(w.Code, w.Body.String())
					}
				}
			})
		}
	}
}
