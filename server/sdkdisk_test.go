package server_test

import (
	"testing"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
	"github.com/tabuladb/tabula/tabulatest"
)

// onDiskServer is a tabulatest in-process server whose DB lives on disk in a temporary
// directory, so that the SDK suite also runs against Badger (tabulatest's own servers are
// in memory).
func onDiskServer(t *testing.T, opts *tabula.Options) *tabulatest.Server {
	t.Helper()
	db, err := tabula.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	h, err := server.New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The endpoint never resolves: only the in-process transport reaches the handler.
	const endpoint = "http://tabula.invalid"
	return &tabulatest.Server{DB: db, Handler: h, Endpoint: endpoint,
		URL: server.DevelopmentAccount().TableEndpoint(endpoint)}
}
