package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/server"
)

// Each command line that does not start a server, and what it does: exit code, and what
// it prints where. An error is printed once, on standard error, without the help.
func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		stdout     string // a substring of standard output
		stderr     string // a substring of standard error, printed once
		noStderr   bool
		stderrLine int // lines on standard error, when an error is reported
	}{
		{args: nil, code: 2, stderr: "tabula serve [flags]"},
		{args: []string{"version"}, code: 0, stdout: "tabula ", noStderr: true},
		{args: []string{"--version"}, code: 0, stdout: "tabula ", noStderr: true},
		{args: []string{"help"}, code: 0, stdout: "tabula serve [flags]", noStderr: true},
		{args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`},
		{args: []string{"serve", "-h"}, code: 0, stdout: "Usage: tabula serve [flags]", noStderr: true},
		{args: []string{"serve", "--help"}, code: 0, stdout: "--sync-writes", noStderr: true},
		{args: []string{"serve", "--bogus"}, code: 2, stderr: "tabula serve: flag provided but not defined: -bogus\n", stderrLine: 2},
		{args: []string{"serve", "--addr"}, code: 2, stderr: "flag needs an argument: -addr", stderrLine: 2},
		{args: []string{"serve", "extra"}, code: 2, stderr: `unexpected arguments ["extra"]`, stderrLine: 2},
		{args: []string{"serve", "--addr", "nonsense"}, code: 2, stderr: `--addr "nonsense": want host:port`, stderrLine: 2},
		{args: []string{"serve", "--addr", "127.0.0.1:0", "--tablePort", "0"}, code: 2, stderr: "not both", stderrLine: 2},
		{args: []string{"serve", "--tablePort", "70000"}, code: 2, stderr: "is not a port", stderrLine: 2},
		{args: []string{"serve", "--data", "a", "--location", "b"}, code: 2, stderr: "--data or --location", stderrLine: 2},
		{args: []string{"serve", "--accounts", "bad"}, code: 2, stderr: `--accounts: server: account "bad" has no key`, stderrLine: 2},
		{args: []string{"serve", "--limits", "loud"}, code: 2, stderr: `--limits "loud": want off, observe or enforce`, stderrLine: 2},
		{args: []string{"serve", "--partition-rate", "0"}, code: 2, stderr: "more than 0 entities/s", stderrLine: 2},
		{args: []string{"serve", "--faults", "busy=2"}, code: 2, stderr: "--faults: busy=2: want a probability from 0 to 1", stderrLine: 2},
		{args: []string{"serve", "--faults", "seed=x"}, code: 2, stderr: "--faults: seed=x: invalid syntax", stderrLine: 2},
		{args: []string{"serve", "--faults", "kinds=fly"}, code: 2, stderr: `unknown kind "fly"`, stderrLine: 2},
		{args: []string{"serve", "--faults", "loud"}, code: 2, stderr: `unknown setting "loud"`, stderrLine: 2},
		{args: []string{"serve", "--faults", "continuation-every=0"}, code: 2, stderr: "continuation-every=0: want 1 or more", stderrLine: 2},
		{args: []string{"serve", "--cert", "c.pem"}, code: 2, stderr: "--cert and --key go together", stderrLine: 2},
		{args: []string{"serve", "--self-signed", "--key", "k.pem"}, code: 2, stderr: "give no --key", stderrLine: 2},
		{args: []string{"serve", "--oauth", "basic"}, code: 2, stderr: "--oauth needs HTTPS", stderrLine: 2},
		{args: []string{"serve", "--oauth", "full"}, code: 2, stderr: `only "basic" is supported`, stderrLine: 2},
		{args: []string{"serve", "--log-format", "xml"}, code: 2, stderr: `--log-format "xml": want text or json`, stderrLine: 2},
		{args: []string{"serve", "--max-connections", "-1"}, code: 2, stderr: "--max-connections -1", stderrLine: 2},
		{args: []string{"serve", "--read-timeout", "-1s"}, code: 2, stderr: "--read-timeout -1s", stderrLine: 2},
		{args: []string{"serve", "--table-delete-delay", "-1s"}, code: 2, stderr: "--table-delete-delay -1s", stderrLine: 2},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errs bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errs)
			assert.Equal(t, tc.code, code, "exit code; stderr %q", errs.String())
			assert.Contains(t, out.String(), tc.stdout)
			if tc.noStderr {
				assert.Empty(t, errs.String())
			}
			if tc.stderr != "" {
				assert.Equal(t, 1, strings.Count(errs.String(), tc.stderr), "stderr %q", errs.String())
			}
			if tc.stderrLine > 0 {
				assert.Equal(t, tc.stderrLine, strings.Count(errs.String(), "\n"), "stderr %q", errs.String())
				assert.NotContains(t, errs.String(), "Usage", "an error does not print the help")
			}
		})
	}
}

// Each flag reaches the setting it names.
func TestServeFlags(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	parse := func(t *testing.T, args ...string) *config {
		t.Helper()
		cfg, err := parseServe(args, getenv, &bytes.Buffer{})
		require.NoError(t, err)
		return cfg
	}

	t.Run("defaults", func(t *testing.T) {
		cfg := parse(t)
		assert.Equal(t, "127.0.0.1:10002", cfg.addr)
		assert.Equal(t, "./tabula-data", cfg.dir)
		assert.False(t, cfg.inMemory)
		assert.Nil(t, cfg.accounts)
		assert.False(t, cfg.db.SyncWrites)
		assert.Equal(t, partition.LimitObserve, cfg.db.Limits.Mode)
		assert.Equal(t, partition.DefaultPartitionRate, cfg.db.Limits.PartitionRate)
		assert.Equal(t, partition.DefaultAccountRate, cfg.db.Limits.AccountRate)
		assert.Equal(t, partition.Faults{}, cfg.db.Faults)
		assert.Equal(t, server.DefaultHTTPLimits(), cfg.http)
		assert.Equal(t, "text", cfg.logFormat)
		assert.False(t, cfg.silent || cfg.oauth || cfg.selfSigned)
	})
	t.Run("Azurite's address flags", func(t *testing.T) {
		assert.Equal(t, "127.0.0.1:10005", parse(t, "--tablePort", "10005").addr)
		assert.Equal(t, "0.0.0.0:10002", parse(t, "--tableHost", "0.0.0.0").addr)
		assert.Equal(t, "localhost:0", parse(t, "-tableHost", "localhost", "-tablePort", "0").addr)
		assert.Equal(t, "elsewhere", parse(t, "--location", "elsewhere").dir)
		assert.True(t, parse(t, "--inMemoryPersistence").inMemory)
		parse(t, "--skipApiVersionCheck")
	})
	t.Run("accounts", func(t *testing.T) {
		want := []server.Account{{Name: "mine", Keys: []string{"a2V5"}}}
		assert.Equal(t, want, parse(t, "--accounts", "mine:a2V5").accounts)
		env["TABULA_ACCOUNTS"] = "mine:a2V5"
		defer delete(env, "TABULA_ACCOUNTS")
		assert.Equal(t, want, parse(t).accounts)
		assert.Equal(t, "other", parse(t, "--accounts", "other:a2V5").accounts[0].Name, "the flag wins over the environment")
	})
	t.Run("admin key", func(t *testing.T) {
		assert.Empty(t, parse(t).adminKey, "none: the server makes one up")
		assert.Equal(t, "s3cret", parse(t, "--admin-key", "s3cret").adminKey)
		env["TABULA_ADMIN_KEY"] = "fromenv"
		defer delete(env, "TABULA_ADMIN_KEY")
		assert.Equal(t, "fromenv", parse(t).adminKey)
		assert.Equal(t, "s3cret", parse(t, "--admin-key", "s3cret").adminKey, "the flag wins over the environment")
	})
	t.Run("simulation", func(t *testing.T) {
		cfg := parse(t, "--limits", "enforce", "--partition-rate", "10", "--account-rate", "100",
			"--faults", "seed=7,busy=0.5,timeout=0.25,kinds=insert+query,continuation-every=3,offline-on-split,offline-for=2s",
			"--forbid-full-scans", "--boundary-continuations", "--table-delete-delay", "40s")
		assert.Equal(t, partition.Limits{Mode: partition.LimitEnforce, PartitionRate: 10, AccountRate: 100}, cfg.db.Limits)
		assert.Equal(t, partition.Faults{Seed: 7, ServerBusy: 0.5, Timeout: 0.25,
			Kinds:             partition.Kinds(partition.KindInsert, partition.KindQuery),
			ContinuationEvery: 3, OfflineOnSplit: true, OfflineFor: 2 * time.Second}, cfg.db.Faults)
		assert.True(t, cfg.db.ForbidFullScans)
		assert.True(t, cfg.db.BoundaryContinuations)
		assert.Equal(t, tabula.ServiceTableDeleteDelay, cfg.db.TableDeleteDelay)
		assert.Zero(t, parse(t).db.TableDeleteDelay, "off by default")
		assert.Equal(t, partition.LimitOff, parse(t, "--limits", "off").db.Limits.Mode)
		assert.Equal(t, partition.WriteKinds|partition.ReadKinds, parse(t, "--faults", "kinds=writes+reads").db.Faults.Kinds)
		assert.False(t, parse(t, "--faults", "offline-on-split=false").db.Faults.OfflineOnSplit)
	})
	t.Run("durability and HTTP", func(t *testing.T) {
		cfg := parse(t, "--sync-writes", "--read-timeout", "5s", "--write-timeout", "6s", "--idle-timeout", "7s", "--max-connections", "8")
		assert.True(t, cfg.db.SyncWrites)
		want := server.DefaultHTTPLimits()
		want.ReadTimeout, want.WriteTimeout, want.IdleTimeout, want.MaxConnections = 5*time.Second, 6*time.Second, 7*time.Second, 8
		assert.Equal(t, want, cfg.http)
		assert.Zero(t, cfg.db.DiskReserve, "the store's default")
		for v, want := range map[string]uint64{"64MiB": 64 << 20, "1GiB": 1 << 30, "100 MB": 100e6, "4096": 4096, "2KiB": 2048} {
			assert.Equal(t, want, parse(t, "--disk-reserve", v).db.DiskReserve, v)
		}
		for _, v := range []string{"0", "-1", "MiB", "12XB", "99999999999GiB"} {
			_, err := parseServe([]string{"--disk-reserve", v}, func(string) string { return "" }, io.Discard)
			assert.ErrorContains(t, err, "want a size of more than 0 bytes", v)
		}
		assert.Zero(t, cfg.db.MemoryBudget, "the store's default")
		assert.Equal(t, uint64(512<<20), parse(t, "--memory", "512MiB").db.MemoryBudget)
		_, err := parseServe([]string{"--memory", "lots"}, func(string) string { return "" }, io.Discard)
		assert.ErrorContains(t, err, "want a size of more than 0 bytes")
	})
	t.Run("HTTPS, tokens and the log", func(t *testing.T) {
		cfg := parse(t, "--cert", "c.pem", "--key", "k.pem", "--oauth", "basic", "--silent", "--debug", "d.log", "--log-format", "json")
		assert.Equal(t, "c.pem", cfg.certFile)
		assert.Equal(t, "k.pem", cfg.keyFile)
		assert.True(t, cfg.oauth)
		assert.True(t, cfg.silent)
		assert.Equal(t, "d.log", cfg.debugFile)
		assert.Equal(t, "json", cfg.logFormat)
		cfg = parse(t, "--self-signed", "--cert", "where.pem")
		assert.True(t, cfg.selfSigned)
		assert.Equal(t, "where.pem", cfg.certFile)
	})
}

// Every flag is in one group of the help, once.
func TestHelpListsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	_, err := parseServe([]string{"--help"}, func(string) string { return "" }, &out)
	require.ErrorIs(t, err, errHelp)
	for _, name := range []string{"addr", "tableHost", "tablePort", "data", "location", "in-memory", "inMemoryPersistence",
		"sync-writes", "disk-reserve", "memory", "accounts", "cert", "key", "pwd", "self-signed", "oauth", "skipApiVersionCheck", "silent", "log-format",
		"debug", "read-timeout", "write-timeout", "idle-timeout", "max-connections", "limits", "partition-rate",
		"account-rate", "faults", "forbid-full-scans", "boundary-continuations", "table-delete-delay", "disableProductStyleUrl", "loose",
		"disableTelemetry", "tableKeepAliveTimeout", "extentMemoryLimit"} {
		line := regexp.MustCompile(`(?m)^  (-\w, )?--` + name + `( |$)`)
		assert.Len(t, line.FindAllString(out.String(), -1), 1, name)
	}
	for long, short := range shortNames {
		assert.Regexp(t, `(?m)^  -`+short+`, --`+long+`( |$)`, out.String())
	}
	assert.Contains(t, out.String(), "a power loss or kernel crash can lose the last second")
}

// Listening beyond loopback with the published key, or with unverified tokens, is warned
// about; on loopback, or with a key of one's own, it is not.
func TestExposureWarnings(t *testing.T) {
	dev := []server.Account{server.DevelopmentAccount()}
	own := []server.Account{{Name: "mine", Keys: []string{"c2VjcmV0"}}}
	every := &net.TCPAddr{IP: net.IPv6unspecified, Port: 10002}
	lan := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 10002}
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10002}

	assert.Empty(t, exposureWarnings(loop, dev, true))
	assert.Empty(t, exposureWarnings(every, own, false))
	w := exposureWarnings(every, dev, false)
	require.Len(t, w, 1)
	assert.Contains(t, w[0], "WARNING: Tabula listens on [::]:10002")
	assert.Contains(t, w[0], "PUBLISHED")
	assert.Len(t, exposureWarnings(lan, dev, true), 2)
	assert.Len(t, exposureWarnings(lan, own, true), 1)
}

// A database that another process holds is reported once, without the library's prefix
// repeated inside the message.
func TestOpenErrorDoesNotStutter(t *testing.T) {
	dir := t.TempDir()
	r := start(t, "--addr", "127.0.0.1:0", "--data", dir, "--silent")
	var out, errs bytes.Buffer
	code := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--data", dir}, &out, &errs)
	assert.Equal(t, 1, code)
	assert.True(t, strings.HasPrefix(errs.String(), "tabula: opening the database in "+dir+": storage: open"), errs.String())
	assert.Equal(t, 1, strings.Count(errs.String(), "tabula:"), errs.String())
	r.shutdown(t)
}

// The request log reaches standard output, one line per request (JSON with --log-format
// json); --debug appends full, redacted exchanges to its file; --silent logs no line.
func TestServeRequestLog(t *testing.T) {
	debugFile := filepath.Join(t.TempDir(), "debug.log")
	r := start(t, "--addr", "127.0.0.1:0", "--in-memory", "--log-format", "json", "--debug", debugFile)
	svc, err := aztables.NewServiceClientFromConnectionString(r.connStr, nil)
	require.NoError(t, err)
	c := svc.NewClient("Logged")
	_, err = c.CreateTable(context.Background(), nil)
	require.NoError(t, err)
	_, err = c.GetEntity(context.Background(), "p", "missing", nil)
	require.Error(t, err)
	r.shutdown(t)

	var lines []map[string]any
	for _, line := range strings.Split(r.out.String(), "\n") {
		if strings.HasPrefix(line, "{") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &m), line)
			lines = append(lines, m)
		}
	}
	require.Len(t, lines, 2, r.out.String())
	assert.Equal(t, "POST", lines[0]["method"])
	assert.Equal(t, "/devstoreaccount1/Tables", lines[0]["path"])
	assert.EqualValues(t, 201, lines[0]["status"])
	assert.Equal(t, "WARN", lines[1]["level"])
	assert.EqualValues(t, 404, lines[1]["status"])
	assert.Equal(t, "ResourceNotFound", lines[1]["code"])
	assert.EqualValues(t, 0, lines[1]["entities"])

	dump, err := os.ReadFile(debugFile)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(dump), "\n=== ")+1, string(dump))
	assert.Contains(t, string(dump), "Authorization: SharedKeyLite devstoreaccount1:REDACTED\n")
	assert.Contains(t, string(dump), `{"TableName":"Logged"}`)

	r = start(t, "--addr", "127.0.0.1:0", "--in-memory", "--silent")
	svc, err = aztables.NewServiceClientFromConnectionString(r.connStr, nil)
	require.NoError(t, err)
	_, err = svc.NewClient("Quiet").CreateTable(context.Background(), nil)
	require.NoError(t, err)
	r.shutdown(t)
	assert.NotContains(t, r.out.String(), "msg=request")
}

// Azurite's --tableHost and --tablePort choose where Tabula listens, and the banner names the
// address it really listens on, the one in the connection string; it says what a write
// survives.
func TestServeBanner(t *testing.T) {
	r := start(t, "--tableHost", "127.0.0.1", "--tablePort", "0", "--location", t.TempDir(), "--sync-writes", "--silent")
	m := regexp.MustCompile(`over http on 127\.0\.0\.1:(\d+)\.\n`).FindStringSubmatch(r.out.String())
	require.NotNil(t, m, r.out.String())
	assert.NotEqual(t, "0", m[1])
	assert.Contains(t, r.connStr, "TableEndpoint=http://127.0.0.1:"+m[1]+"/devstoreaccount1/;")
	assert.Contains(t, r.out.String(), "(--sync-writes: every acknowledged write is on disk)")
	assert.Empty(t, r.errs.String(), "no warning on loopback")
	assert.Regexp(t, `Admin key \(user _tabula; every account, and creating accounts\): [A-Za-z0-9+/]{43}=\n`, r.out.String())
	r.shutdown(t)

	r = start(t, "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--silent")
	assert.Contains(t, r.out.String(), "a power loss can lose the last second of acknowledged writes")
	r.shutdown(t)
}

// With less free space than --disk-reserve, the banner warns, on stderr and in the log,
// writes get 503 ServerBusy, and the first refused write logs why, once.
func TestServeDiskReserve(t *testing.T) {
	dir := t.TempDir()
	start(t, "--addr", "127.0.0.1:0", "--data", dir, "--silent").shutdown(t)
	r := start(t, "--addr", "127.0.0.1:0", "--data", dir, "--disk-reserve", "1000000000GiB", "--log-format", "json")
	assert.Contains(t, r.errs.String(), "WARNING: writes are refused (503 ServerBusy) until there is more free space")
	assert.Contains(t, r.out.String(), `"msg":"tabula: the disk has less free space than the reserve`)
	svc, err := aztables.NewServiceClientFromConnectionString(r.connStr,
		&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	require.NoError(t, err)
	for range 2 {
		_, err = svc.NewClient("Full").CreateTable(context.Background(), nil)
		var re *azcore.ResponseError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, 503, re.StatusCode)
		assert.Equal(t, "ServerBusy", re.ErrorCode)
	}
	r.shutdown(t)
	assert.Equal(t, 1, strings.Count(r.out.String(), "writes refused for want of disk space"), r.out.String())
}

// Whatever --faults says, parsing it neither panics nor accepts a probability outside [0, 1].
func FuzzParseFaults(f *testing.F) {
	f.Add("seed=7,busy=0.5,timeout=0.25,kinds=insert+query,continuation-every=3,offline-on-split,offline-for=2s")
	f.Add("busy=NaN")
	f.Add("kinds=reads+writes+all")
	f.Add("offline-on-split=maybe")
	f.Fuzz(func(t *testing.T, spec string) {
		faults, err := parseFaults(spec)
		if err != nil {
			return
		}
		for _, p := range []float64{faults.ServerBusy, faults.Timeout} {
			if !(p >= 0 && p <= 1) {
				t.Fatalf("%q: probability %v accepted", spec, p)
			}
		}
		if faults.ContinuationEvery < 0 {
			t.Fatalf("%q: continuation-every %d accepted", spec, faults.ContinuationEvery)
		}
	})
}

// A data directory of an older format (the first release's, testdata/format1 of the root
// package) is upgraded when tabula serve opens it, and the log says so; with --silent, which
// turns the request log off, the line goes to standard error. The directory's entities are
// served.
func TestServeLogsAFormatUpgrade(t *testing.T) {
	for _, silent := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "db")
		require.NoError(t, os.CopyFS(dir, os.DirFS("../../testdata/format1/db")))
		args := []string{"--addr", "127.0.0.1:0", "--data", dir}
		if silent {
			args = append(args, "--silent")
		}
		r := start(t, args...)
		log := r.out.String()
		if silent {
			log = r.errs.String()
		}
		assert.Contains(t, log, `level=INFO msg="tabula: upgraded the data directory's format; builds of older formats will refuse to open it" dir=`+dir+" from=1 to=4", "silent: %v", silent)
		svc, err := aztables.NewServiceClientFromConnectionString(r.connStr, nil)
		require.NoError(t, err)
		_, err = svc.NewClient("Movies").GetEntity(context.Background(), "Nolan", "Inception", nil)
		require.NoError(t, err)
		r.shutdown(t)
	}
}
