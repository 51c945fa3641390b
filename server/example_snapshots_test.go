package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

// A suite in any language loads its fixture once, saves the server's state, and restores it
// between tests: in memory, in microseconds whatever the fixture holds.
func ExampleServer_SaveSnapshot() {
	ctx := context.Background()
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
	admin := func(path string) int {
		req, _ := http.NewRequest("POST", srv.URL+server.ReservedPrefix+"api/snapshots/"+path, nil)
		req.SetBasicAuth(server.AdminUser, "let-me-in")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	movies, err := db.CreateTable(ctx, "Movies") // the fixture, loaded any way at all
	if err != nil {
		panic(err)
	}
	fmt.Println(admin("fixture"))

	// ... a test writes ...
	if _, err := movies.Insert(ctx, tabula.Entity{PartitionKey: "Action", RowKey: "Heat"}); err != nil {
		panic(err)
	}

	fmt.Println(admin("fixture/restore"))
	_, err = movies.Get(ctx, "Action", "Heat")
	fmt.Println(errors.Is(err, tabula.ErrResourceNotFound))
	// Output:
	// 201
	// 204
	// true
}
