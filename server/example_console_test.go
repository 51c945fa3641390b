package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

// A program mounts the console and its JSON on its own mux, under a prefix of its choice;
// every request signs in with an account name and key (HTTP Basic).
func ExampleNewConsoleHandler() {
	db, err := tabula.OpenInMemory(nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	movies, _ := db.CreateTable(context.Background(), "Movies")
	_, _ = movies.Insert(context.Background(), tabula.Entity{PartitionKey: "Action", RowKey: "Up"})

	console, err := server.NewConsoleHandler(db, nil)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/tabula/", http.StripPrefix("/ops/tabula", console))

	// The console page is at /ops/tabula/console/; what it draws comes from api/report.
	req := httptest.NewRequest(http.MethodGet, "/ops/tabula/api/report", nil)
	req.SetBasicAuth(server.DevelopmentAccountName, server.DevelopmentAccountKey)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, req)
	var rep struct {
		Mode   string
		Tables []struct {
			Name     string
			Entities int64
			Ranges   []struct{ Hot bool }
		}
	}
	_ = json.Unmarshal(w.Body.Bytes(), &rep)
	fmt.Println(w.Code, rep.Mode, rep.Tables[0].Name, rep.Tables[0].Entities, "entity,", len(rep.Tables[0].Ranges), "range partition")
	// Output: 200 observe Movies 1 entity, 1 range partition
}
