package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

// A test helper in any language takes a fresh, isolated account for each test from one
// running server, and drops it (with its data) when the test ends.
func ExampleServer_CreateAccount() {
	db, err := tabula.OpenInMemory(nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	s, err := server.New(db, &server.Options{AdminKey: "let-me-in"})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	admin := func(method, path, body string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+server.ReservedPrefix+"api/"+path, strings.NewReader(body))
		req.SetBasicAuth(server.AdminUser, "let-me-in")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		return resp
	}
	resp := admin("POST", "accounts", `{"name":"test42"}`)
	var account struct{ Name, Key, ConnectionString string }
	_ = json.NewDecoder(resp.Body).Decode(&account)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, account.Name, strings.Contains(account.ConnectionString, "TableEndpoint="+srv.URL+"/test42/;"))

	// ... the test runs against account.ConnectionString ...

	resp = admin("DELETE", "accounts/test42", "")
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output:
	// 201 test42 true
	// 204
}
