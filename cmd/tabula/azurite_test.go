package main

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/tabuladb/tabula/server"
)

// Every flag of Azurite's --help (azurite-table's, and the table and shared flags of the
// all-in-one azurite, as its src/table/TableEnvironment.ts and src/common/Environment.ts
// define them), given as an Azurite command line gives it, and what it does to Tabula: the
// same setting as in Azurite, or the documented equivalent.
func TestAzuriteFlags(t *testing.T) {
	for _, tc := range []struct {
		flag string // as Azurite's --help names it
		args []string
		want func(t *testing.T, cfg *config)
	}{
		{"--tableHost", []string{"--tableHost", "0.0.0.0"}, func(t *testing.T, cfg *config) { assert.Equal(t, "0.0.0.0:10002", cfg.addr) }},
		{"--tablePort", []string{"--tablePort", "11002"}, func(t *testing.T, cfg *config) { assert.Equal(t, "127.0.0.1:11002", cfg.addr) }},
		{"-l", []string{"-l", "/tmp/ws"}, func(t *testing.T, cfg *config) { assert.Equal(t, "/tmp/ws", cfg.dir) }},
		{"--location", []string{"--location", "/tmp/ws"}, func(t *testing.T, cfg *config) { assert.Equal(t, "/tmp/ws", cfg.dir) }},
		{"-s", []string{"-s"}, func(t *testing.T, cfg *config) { assert.True(t, cfg.silent) }},
		{"--silent", []string{"--silent"}, func(t *testing.T, cfg *config) { assert.True(t, cfg.silent) }},
		{"-L", []string{"-L"}, func(t *testing.T, cfg *config) {}},           // Tabula ignores what it has no use for
		{"--loose", []string{"--loose"}, func(t *testing.T, cfg *config) {}}, // likewise
		{"--skipApiVersionCheck", []string{"--skipApiVersionCheck"}, func(t *testing.T, cfg *config) { assert.True(t, cfg.anyVersion) }},
		{"--disableProductStyleUrl", []string{"--disableProductStyleUrl"}, func(t *testing.T, cfg *config) { assert.True(t, cfg.pathStyleOnly) }},
		{"--inMemoryPersistence", []string{"--inMemoryPersistence"}, func(t *testing.T, cfg *config) { assert.True(t, cfg.inMemory) }},
		{"--extentMemoryLimit", []string{"--inMemoryPersistence", "--extentMemoryLimit", "50"}, func(t *testing.T, cfg *config) { assert.True(t, cfg.inMemory) }},
		{"-d", []string{"-d", "debug.log"}, func(t *testing.T, cfg *config) { assert.Equal(t, "debug.log", cfg.debugFile) }},
		{"--debug", []string{"--debug", "debug.log"}, func(t *testing.T, cfg *config) { assert.Equal(t, "debug.log", cfg.debugFile) }},
		{"--oauth", []string{"--oauth", "basic", "--cert", "c.pem", "--key", "k.pem"}, func(t *testing.T, cfg *config) { assert.True(t, cfg.oauth) }},
		{"--cert --key", []string{"--cert", "c.pem", "--key", "k.pem"}, func(t *testing.T, cfg *config) {
			assert.Equal(t, "c.pem", cfg.certFile)
			assert.Equal(t, "k.pem", cfg.keyFile)
			assert.False(t, cfg.pfx)
		}},
		{"--cert --pwd", []string{"--cert", "c.pfx", "--pwd", "secret"}, func(t *testing.T, cfg *config) {
			assert.True(t, cfg.pfx)
			assert.Equal(t, "secret", cfg.pfxPassword)
		}},
		{"--disableTelemetry", []string{"--disableTelemetry"}, func(t *testing.T, cfg *config) {}}, // Tabula sends none
		{"--tableKeepAliveTimeout", []string{"--tableKeepAliveTimeout", "5"}, func(t *testing.T, cfg *config) { assert.Equal(t, 5*time.Second, cfg.http.IdleTimeout) }},
		{"--blobHost", []string{"--blobHost", "0.0.0.0"}, ignoredNote("blobHost")},
		{"--blobPort", []string{"--blobPort", "10000"}, ignoredNote("blobPort")},
		{"--blobKeepAliveTimeout", []string{"--blobKeepAliveTimeout", "5"}, ignoredNote("blobKeepAliveTimeout")},
		{"--queueHost", []string{"--queueHost", "0.0.0.0"}, ignoredNote("queueHost")},
		{"--queuePort", []string{"--queuePort", "10001"}, ignoredNote("queuePort")},
		{"--queueKeepAliveTimeout", []string{"--queueKeepAliveTimeout", "5"}, ignoredNote("queueKeepAliveTimeout")},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			cfg, err := parseServe(tc.args, func(string) string { return "" }, &bytes.Buffer{})
			require.NoError(t, err)
			tc.want(t, cfg)
		})
	}
}

func ignoredNote(name string) func(*testing.T, *config) {
	return func(t *testing.T, cfg *config) {
		assert.Equal(t, []string{"Note: --" + name + " is ignored: Tabula serves only the Table service."}, cfg.notes)
	}
}

// What Azurite refuses, Tabula refuses, and so do the combinations that make no sense.
func TestAzuriteFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--inMemoryPersistence", "--location", "x"}, "--inMemoryPersistence does not go with --location"},
		{[]string{"--in-memory", "-l", "x"}, "--inMemoryPersistence does not go with --location"},
		{[]string{"--extentMemoryLimit", "50"}, "--extentMemoryLimit goes only with --inMemoryPersistence"},
		{[]string{"--oauth", "bearer"}, `only "basic" is supported`},
		{[]string{"--oauth", "basic"}, "--oauth needs HTTPS"},
		{[]string{"--debug"}, "--debug needs a value"},
		{[]string{"--pwd", "secret"}, "--pwd is the password of a .pfx file given with --cert"},
		{[]string{"--cert", "c.pfx", "--pwd", "p", "--key", "k.pem"}, "a .pfx file holds its key"},
		{[]string{"--cert", "c.pem"}, "--cert and --key go together"},
		{[]string{"--tableKeepAliveTimeout", "5", "--idle-timeout", "1s"}, "not both"},
		{[]string{"--data", "a", "-l", "b"}, "give --data or --location, not both"},
	} {
		_, err := parseServe(tc.args, func(string) string { return "" }, &bytes.Buffer{})
		if assert.Error(t, err, tc.args) {
			assert.Contains(t, err.Error(), tc.want, tc.args)
		}
	}
}

// AZURITE_ACCOUNTS is read as TABULA_ACCOUNTS is (the same form, and the same effect as in
// Azurite: the development account is replaced), unless TABULA_ACCOUNTS or --accounts is
// given.
func TestAzuriteAccountsVariable(t *testing.T) {
	env := map[string]string{"AZURITE_ACCOUNTS": "account1:a2V5MQ==:a2V5Mg==;account2:a2V5Mw=="}
	getenv := func(k string) string { return env[k] }
	cfg, err := parseServe(nil, getenv, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []server.Account{
		{Name: "account1", Keys: []string{"a2V5MQ==", "a2V5Mg=="}},
		{Name: "account2", Keys: []string{"a2V5Mw=="}},
	}, cfg.accounts)

	env["TABULA_ACCOUNTS"] = "mine:a2V5"
	cfg, err = parseServe(nil, getenv, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "mine", cfg.accounts[0].Name, "TABULA_ACCOUNTS wins")
	cfg, err = parseServe([]string{"--accounts", "flag:a2V5"}, getenv, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "flag", cfg.accounts[0].Name, "the flag wins")
}

// Azurite's command line from its documentation runs unchanged, and the blob and queue
// flags of the all-in-one azurite are named on standard error as ignored.
func TestAzuriteCommandLineRuns(t *testing.T) {
	dir := t.TempDir()
	r := start(t, "--silent", "--location", filepath.Join(dir, "data"), "--debug", filepath.Join(dir, "debug.log"),
		"--tablePort", "0", "--loose", "--skipApiVersionCheck", "--disableProductStyleUrl", "--disableTelemetry",
		"--blobHost", "0.0.0.0")
	svc, err := aztables.NewServiceClientFromConnectionString(r.connStr, nil)
	require.NoError(t, err)
	roundTrip(t, svc, "FromAzurite")
	r.shutdown(t)
	assert.Contains(t, r.errs.String(), "Note: --blobHost is ignored")
	debug, err := os.ReadFile(filepath.Join(dir, "debug.log"))
	require.NoError(t, err)
	assert.Contains(t, string(debug), "FromAzurite")
}

// --cert FILE.pfx --pwd PASSWORD serves HTTPS with the certificate and key of a PKCS#12
// file, as Azurite does, and the SDK trusting that certificate works through it; a wrong
// password is a clear error.
func TestServePFX(t *testing.T) {
	dir := t.TempDir()
	cert, certPEM, err := selfSignedCert(time.Now())
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	require.NoError(t, err)
	pfx, err := pkcs12.Modern.Encode(cert.PrivateKey, leaf, nil, "s3cret")
	require.NoError(t, err)
	pfxFile, pemFile := filepath.Join(dir, "cert.pfx"), filepath.Join(dir, "cert.pem")
	require.NoError(t, os.WriteFile(pfxFile, pfx, 0o600))
	require.NoError(t, os.WriteFile(pemFile, certPEM, 0o600))

	r := start(t, "--addr", "127.0.0.1:0", "--in-memory", "--cert", pfxFile, "--pwd", "s3cret", "--silent")
	assert.Contains(t, r.connStr, "DefaultEndpointsProtocol=https;")
	svc, err := aztables.NewServiceClientFromConnectionString(r.connStr, trusting(t, pemFile))
	require.NoError(t, err)
	roundTrip(t, svc, "FromPFX")
	r.shutdown(t)

	var out, errs strings.Builder
	_ = run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--in-memory", "--cert", pfxFile, "--pwd", "wrong"}, &out, &errs)
	assert.Contains(t, errs.String(), "is --pwd right?")
}
