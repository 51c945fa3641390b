package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

// shutdownGrace is how long requests in flight get to finish once a signal arrives.
const shutdownGrace = 30 * time.Second

// runServe is "tabula serve": its flags (serveflags.go), then the server until ctx is done.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseServe(args, os.Getenv, stdout)
	if err != nil {
		if errors.Is(err, errHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "tabula serve: %s\nRun \"tabula serve --help\" for the flags.\n", message(err))
		return 2
	}
	if err := serve(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "tabula:", message(err))
		return 1
	}
	return 0
}

func serve(ctx context.Context, cfg *config, stdout, stderr io.Writer) (err error) {
	for _, n := range cfg.notes {
		fmt.Fprintln(stderr, n)
	}
	var debug io.Writer
	if cfg.debugFile != "" {
		f, ferr := os.OpenFile(cfg.debugFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if ferr != nil {
			return fmt.Errorf("opening the --debug file: %w", ferr)
		}
		defer func() { err = errors.Join(err, f.Close()) }()
		debug = f
	}
	logger := requestLogger(cfg, stdout)
	// What the database reports on its own (an upgrade of the directory's format, the disk
	// below --disk-reserve, the first write refused for it) goes to the log, or to standard
	// error when --silent turns the request log off.
	cfg.db.Logger = logger
	if logger == nil {
		cfg.db.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}

	if cfg.exportOnExit != "" {
		if err := checkExportPath(cfg.exportOnExit); err != nil {
			return fmt.Errorf("--export-on-exit %s: %w", cfg.exportOnExit, err)
		}
	}
	// Listen first: a port in use is the commonest failure, and it should cost nothing,
	// least of all a data directory made for a server that never ran.
	ln, err := listen(cfg)
	if err != nil {
		return err
	}
	started := false
	defer func() {
		if !started {
			ln.Close()
		}
	}()
	db, where, err := openDatabase(cfg)
	if err != nil {
		return err
	}
	defer func() {
		if cfg.exportOnExit != "" && err == nil {
			if err = exportOnExit(context.WithoutCancel(ctx), db.DB, cfg.exportOnExit); err != nil {
				err = fmt.Errorf("--export-on-exit %s: %w", cfg.exportOnExit, err)
			} else {
				fmt.Fprintf(stdout, "Exported every table to %s.\n", cfg.exportOnExit)
			}
		}
		if cerr := db.close(started); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the database: %w", cerr))
		} else if err == nil {
			fmt.Fprintln(stdout, "Stopped; the database is closed.")
		}
	}()
	// The front end first, so that it records which account owns the data of an empty
	// directory before --import fills it (after, it would take the data for an older
	// directory's and warn of it).
	h, err := server.New(db.DB, &server.Options{Accounts: cfg.accounts, BearerTokens: cfg.oauth,
		PathStyleOnly: cfg.pathStyleOnly, AnyVersion: cfg.anyVersion, AdminKey: cfg.adminKey, Logger: cfg.db.Logger})
	if err != nil {
		return err
	}
	if cfg.importFile != "" {
		if err := importBeforeServing(ctx, cfg, db.DB, h, stdout); err != nil {
			return err
		}
	}
	tlsCfg, certPath, err := serveTLS(cfg)
	if err != nil {
		return err
	}

	var handler http.Handler = h
	if logger != nil || debug != nil {
		handler = server.RequestLog(h, server.LogOptions{Logger: logger, Debug: debug})
	}
	srv := server.NewHTTPServer(handler, cfg.http)
	srv.ErrorLog = log.New(stderr, "", log.LstdFlags) // failed TLS handshakes, mostly
	printBanner(cfg, h, db, ln.Addr().(*net.TCPAddr), tlsCfg != nil, certPath, where, stdout, stderr)

	// The connection cap sits under TLS so that its ServerBusy refusal is itself sent over TLS.
	if tlsCfg != nil {
		ln = server.LimitTLSListener(ln, cfg.http.MaxConnections, tlsCfg)
	} else {
		ln = server.LimitListener(ln, cfg.http.MaxConnections)
	}
	started = true
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served: // the listener failed
	case <-ctx.Done():
		fmt.Fprintln(stdout, "Shutting down: finishing the requests in flight.")
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		err = srv.Shutdown(sctx)
		cancel()
		<-served
	}
	return err
}

// requestLogger is the request log --log-format asks for, nil with --silent.
func requestLogger(cfg *config, stdout io.Writer) *slog.Logger {
	switch {
	case cfg.silent:
		return nil
	case cfg.logFormat == "json":
		return slog.New(slog.NewJSONHandler(stdout, nil))
	default:
		return slog.New(slog.NewTextHandler(stdout, nil))
	}
}

// importBeforeServing runs --import. It comes after the server has assigned its accounts
// their namespaces, so that the file's accounts land where it serves them.
func importBeforeServing(ctx context.Context, cfg *config, db *tabula.DB, h *server.Server, stdout io.Writer) error {
	var accounts []string
	for _, a := range h.Accounts() {
		accounts = append(accounts, a.Name)
	}
	p, err := importAtStart(ctx, db, cfg.importFile, accounts)
	if err != nil {
		return fmt.Errorf("--import: %w", err)
	}
	fmt.Fprintf(stdout, "Imported %s, %s from %s.\n", count(p.Tables, "table"), count(p.Entities, "entity"), cfg.importFile)
	return nil
}

// serveTLS is the TLS configuration --cert or --self-signed asks for (nil for plain HTTP),
// with the path of the certificate clients must trust.
func serveTLS(cfg *config) (*tls.Config, string, error) {
	if cfg.certFile == "" && !cfg.selfSigned {
		return nil, "", nil
	}
	certPath := cfg.certFile
	if cfg.selfSigned && certPath == "" {
		dir := cfg.dir
		if cfg.inMemory {
			var err error
			if dir, err = os.MkdirTemp("", "tabula-tls-"); err != nil {
				return nil, "", fmt.Errorf("making a directory for the self-signed certificate (or give --cert FILE): %w", err)
			}
		}
		certPath = filepath.Join(dir, "tabula-cert.pem")
	}
	tlsCfg, err := tlsConfig(cfg, certPath, time.Now())
	return tlsCfg, certPath, err
}

// printBanner says where the server listens, where its data is, and how to connect, then
// warns of what deserves it (exposure, a full disk).
func printBanner(cfg *config, h *server.Server, db *openedDB, listening *net.TCPAddr, secure bool, certPath, where string, stdout, stderr io.Writer) {
	scheme := "http"
	if secure {
		scheme = "https"
	}
	endpoint := scheme + "://" + clientAddr(listening)
	fmt.Fprintf(stdout, "Tabula %s is serving the Azure Table API over %s on %s%s.\n",
		versionOnly(), scheme, listening, everyInterface(listening))
	fmt.Fprintf(stdout, "Data: %s%s.\n", where, durability(cfg))
	if cfg.selfSigned {
		fmt.Fprintf(stdout, "Self-signed certificate for 127.0.0.1 and localhost (make your client trust it): %s\n", certPath)
	}
	for _, a := range h.Accounts() {
		fmt.Fprintf(stdout, "Connection string for %s:\n  %s\n", a.Name, a.ConnectionString(endpoint))
	}
	fmt.Fprintf(stdout, "Console (sign in with an account name and key): %s%sconsole/\n", endpoint, server.ReservedPrefix)
	if cfg.adminKey == "" {
		fmt.Fprintf(stdout, "Admin key (user %s; every account, and creating accounts): %s\n", server.AdminUser, h.AdminKey())
	} else {
		fmt.Fprintf(stdout, "Admin key: as given (user %s; every account, and creating accounts).\n", server.AdminUser)
	}
	if !secure && listening.Port == 10002 && usesDevelopmentAccount(h.Accounts()) {
		fmt.Fprintln(stdout, "SDKs other than Go's also accept UseDevelopmentStorage=true.")
	}
	for _, w := range exposureWarnings(listening, h.Accounts(), cfg.oauth) {
		fmt.Fprintln(stderr, w)
	}
	if err := db.DiskFull(); err != nil { // the database's log says it too
		fmt.Fprintf(stderr, "WARNING: the disk has less free space than --disk-reserve: reads answer, and writes are refused (503 ServerBusy) until there is more (or start with a smaller --disk-reserve): %s\n", message(err))
	}
}

// clientAddr is the address clients on this machine should use: a listener on every
// interface is reached on loopback.
func clientAddr(a *net.TCPAddr) string {
	if a.IP == nil || a.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
	}
	return a.String()
}

// everyInterface says so when the listener is reachable from other machines on every
// interface, so that the banner never hides it.
func everyInterface(a *net.TCPAddr) string {
	if a.IP == nil || a.IP.IsUnspecified() {
		return " (every interface)"
	}
	return ""
}

// versionOnly is the version word of versionLine.
func versionOnly() string {
	v := versionLine()[len("tabula "):]
	for i, r := range v {
		if r == ' ' {
			return v[:i]
		}
	}
	return v
}

// durability says what an acknowledged write survives.
func durability(cfg *config) string {
	switch {
	case cfg.inMemory:
		return " (gone when Tabula stops)"
	case cfg.db.SyncWrites:
		return " (--sync-writes: every acknowledged write is on disk)"
	default:
		return " (a power loss can lose the last second of acknowledged writes; --sync-writes waits for the disk)"
	}
}

func usesDevelopmentAccount(accounts []server.Account) bool {
	for _, a := range accounts {
		for _, k := range a.Keys {
			if k == server.DevelopmentAccountKey {
				return true
			}
		}
	}
	return false
}

// exposureWarnings are what the operator must hear when the server is reachable from other
// machines with credentials anyone has: the published development key, or bearer tokens
// whose signatures are not verified.
func exposureWarnings(a *net.TCPAddr, accounts []server.Account, oauth bool) []string {
	if a.IP != nil && a.IP.IsLoopback() {
		return nil
	}
	var ws []string
	if usesDevelopmentAccount(accounts) {
		ws = append(ws, "WARNING: Tabula listens on "+a.String()+", beyond this machine, and accepts the PUBLISHED\n"+
			"WARNING: development key: anyone who can reach the port can read, change and delete every table.\n"+
			"WARNING: Give your own key with --accounts name:base64key, or listen on 127.0.0.1.")
	}
	if oauth {
		ws = append(ws, "WARNING: --oauth basic does not verify token signatures: anyone who can reach "+a.String()+"\n"+
			"WARNING: can make a token that Tabula accepts.")
	}
	return ws
}

// listen listens on cfg.addr, saying what to do when the port is taken.
func listen(cfg *config) (net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.addr)
	// Windows says it as WSAEADDRINUSE, which is not syscall.EADDRINUSE there.
	if errors.Is(err, syscall.EADDRINUSE) || err != nil && strings.Contains(err.Error(), "Only one usage of each socket address") {
		return nil, fmt.Errorf("%s is in use by another program: is Azurite or another tabula serve running? "+
			"Stop it, or listen elsewhere with --tablePort PORT (or --addr host:port; port 0 picks a free one)", cfg.addr)
	}
	return ln, err
}

// openedDB is the database serve opened, and whether it made the data directory to do so.
type openedDB struct {
	*tabula.DB
	made string // the directory this start created, "" if none
}

// openDatabase opens the database cfg names, and where it is, for the banner. A directory
// it creates for a start that then fails is removed again (see close).
func openDatabase(cfg *config) (*openedDB, string, error) {
	if cfg.inMemory {
		db, err := tabula.OpenInMemory(&cfg.db)
		if err != nil {
			return nil, "", fmt.Errorf("opening the database in memory: %w", err)
		}
		return &openedDB{DB: db}, "in memory", nil
	}
	made := ""
	if _, err := os.Stat(cfg.dir); errors.Is(err, fs.ErrNotExist) {
		made = cfg.dir
	}
	db, err := tabula.Open(cfg.dir, &cfg.db)
	if err != nil {
		if made != "" {
			_ = os.RemoveAll(made)
		}
		if strings.Contains(err.Error(), "is in use by") {
			return nil, "", fmt.Errorf("opening the database in %s: %w (to serve beside it: another --data DIR, or --in-memory)", cfg.dir, err)
		}
		return nil, "", fmt.Errorf("opening the database in %s: %w", cfg.dir, err)
	}
	return &openedDB{DB: db, made: made}, cfg.dir, nil
}

// close closes the database; when the server never started, a directory made for it goes.
func (db *openedDB) close(started bool) error {
	err := db.Close()
	if !started && db.made != "" && err == nil {
		err = os.RemoveAll(db.made)
	}
	return err
}

// count says how many of a thing: "1 table", "2 entities".
func count(n int64, one string) string {
	if n == 1 {
		return "1 " + one
	}
	if strings.HasSuffix(one, "y") {
		return strconv.FormatInt(n, 10) + " " + strings.TrimSuffix(one, "y") + "ies"
	}
	return strconv.FormatInt(n, 10) + " " + one + "s"
}
