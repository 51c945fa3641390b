package server_test

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

// serveDir serves the directory dir with the accounts given, runs fn with a connection string
// per account, and closes the database.
func serveDir(t *testing.T, dir string, opts *server.Options, fn func(conn map[string]string)) {
	t.Helper()
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	s, err := server.New(db, opts)
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	defer hs.Close()
	conn := map[string]string{}
	for _, a := range opts.Accounts {
		conn[a.Name] = a.ConnectionString(hs.URL)
	}
	fn(conn)
}

// The data of an account follows its name, not its place in the list of accounts: listed in
// another order, listed alone, left out or given a new key, each account sees its own tables
// and entities and never another's.
func TestAccountDataFollowsName(t *testing.T) {
	dir := t.TempDir()
	dev := server.DevelopmentAccount()
	other := otherAccount
	serveDir(t, dir, &server.Options{Accounts: []server.Account{dev, other}}, func(conn map[string]string) {
		for name, table := range map[string]string{dev.Name: "DevOnly", other.Name: "OtherOnly"} {
			svc := sdkClient(t, conn[name])
			_, err := svc.CreateTable(ctx, table, nil)
			require.NoError(t, err)
			_, err = svc.NewClient(table).AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r","Secret":"`+name+`"}`), nil)
			require.NoError(t, err)
		}
	})
	want := map[string]string{dev.Name: "DevOnly", other.Name: "OtherOnly"}
	rekeyed := server.Account{Name: other.Name, Keys: []string{"bmV3a2V5"}}
	for _, tc := range []struct {
		name     string
		accounts []server.Account
	}{
		{"the other order", []server.Account{other, dev}},
		{"the second alone", []server.Account{other}},
		{"the first alone", []server.Account{dev}},
		{"a new account first", []server.Account{{Name: "newcomer", Keys: []string{"bmV3"}}, other, dev}},
		{"a new key", []server.Account{rekeyed, dev}},
		{"the first order again", []server.Account{dev, other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serveDir(t, dir, &server.Options{Accounts: tc.accounts}, func(conn map[string]string) {
				for _, a := range tc.accounts {
					svc := sdkClient(t, conn[a.Name])
					table, ok := want[a.Name]
					if !ok {
						assert.Empty(t, tableNames(t, svc), "a new account starts empty")
						continue
					}
					assert.Equal(t, []string{table}, tableNames(t, svc), a.Name)
					got, err := svc.NewClient(table).GetEntity(ctx, "p", "r", nil)
					require.NoError(t, err)
					assert.Contains(t, string(got.Value), `"Secret":"`+a.Name+`"`)
				}
			})
		})
	}
}

// A directory from before owners were recorded is assigned as it always was (the first
// account gets the root namespace), once, with a log line, and the order is fixed from then on.
func TestAccountDataOfAnUnrecordedDirectory(t *testing.T) {
	dir := t.TempDir()
	// What an earlier build left: the first account's tables in the root namespace, the
	// second's in the namespace of its name, and no owner recorded.
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	_, err = db.CreateTable(ctx, "DevOnly")
	require.NoError(t, err)
	_, err = db.Namespace(otherAccount.Name).CreateTable(ctx, "OtherOnly")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	accounts := []server.Account{server.DevelopmentAccount(), otherAccount}
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	serveDir(t, dir, &server.Options{Accounts: accounts, Logger: logger}, func(conn map[string]string) {
		assert.Equal(t, []string{"DevOnly"}, tableNames(t, sdkClient(t, conn[server.DevelopmentAccountName])))
	})
	assert.Contains(t, log.String(), "did not record which account owns which data")
	assert.Contains(t, log.String(), "devstoreaccount1 owns the root namespace")

	log.Reset()
	swapped := []server.Account{otherAccount, server.DevelopmentAccount()}
	serveDir(t, dir, &server.Options{Accounts: swapped, Logger: logger}, func(conn map[string]string) {
		assert.Equal(t, []string{"DevOnly"}, tableNames(t, sdkClient(t, conn[server.DevelopmentAccountName])))
		assert.Equal(t, []string{"OtherOnly"}, tableNames(t, sdkClient(t, conn[otherAccount.Name])))
	})
	assert.Empty(t, log.String(), "a recorded directory logs nothing")

	// A new, empty directory is recorded without a word.
	serveDir(t, t.TempDir(), &server.Options{Accounts: accounts, Logger: logger}, func(map[string]string) {})
	assert.Empty(t, log.String())
}

// The first release's directory (format 1, ../testdata/format1) recorded no owners: its tables,
// the root namespace's, go to the first account listed on the first start, with a log line,
// and stay with that account whatever the order afterwards.
func TestAccountDataOfTheFirstRelease(t *testing.T) {
	dir := t.TempDir()
	entries, err := os.ReadDir("../testdata/format1/db")
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("../testdata/format1/db", e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600))
	}
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	first := []server.Account{otherAccount, server.DevelopmentAccount()}
	serveDir(t, dir, &server.Options{Accounts: first, Logger: logger}, func(conn map[string]string) {
		assert.Equal(t, []string{"ARCHIVE", "Movies", "people"}, tableNames(t, sdkClient(t, conn[otherAccount.Name])))
		assert.Empty(t, tableNames(t, sdkClient(t, conn[server.DevelopmentAccountName])))
	})
	assert.Contains(t, log.String(), "otheracct owns the root namespace")
	log.Reset()
	serveDir(t, dir, &server.Options{Accounts: []server.Account{server.DevelopmentAccount(), otherAccount}, Logger: logger}, func(conn map[string]string) {
		assert.Equal(t, []string{"ARCHIVE", "Movies", "people"}, tableNames(t, sdkClient(t, conn[otherAccount.Name])))
		assert.Empty(t, tableNames(t, sdkClient(t, conn[server.DevelopmentAccountName])))
	})
	assert.NotContains(t, log.String(), "owns the root namespace")
}
