package server

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tabuladb/tabula"
)

// Which host names name an account: only a dotted name whose first label is an account
// this server serves (or its -secondary), never an IP address.
func TestHostAccount(t *testing.T) {
	db, err := tabula.OpenInMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(db, &Options{Accounts: []Account{DevelopmentAccount(), {Name: "127", Keys: []string{DevelopmentAccountKey}}}})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]string{
		"devstoreaccount1.table.localhost:10002":           "devstoreaccount1",
		"devstoreaccount1.table.localhost":                 "devstoreaccount1",
		"DevStoreAccount1.table.localhost:10002":           "devstoreaccount1",
		"devstoreaccount1-secondary.table.localhost:10002": "devstoreaccount1-secondary",
		"devstoreaccount1.table.core.windows.net":          "devstoreaccount1",
		"127.0.0.1:10002":                                  "", // an IP address, though "127" is an account
		"127.0.0.1":                                        "",
		"[::1]:10002":                                      "",
		"localhost:10002":                                  "",
		"devstoreaccount1:10002":                           "", // one label: a machine's name
		"other.table.localhost:10002":                      "",
		"other-secondary.table.localhost":                  "",
		".table.localhost":                                 "",
		"":                                                 "",
	} {
		got, ok := s.hostAccount(host)
		assert.Equal(t, want, got, host)
		assert.Equal(t, want != "", ok, host)
	}
}
