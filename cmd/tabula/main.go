// Command tabula serves a Tabula database over the Azure Table service's REST protocol, so
// that any program written for Azure Table storage (Go, .NET, Java, Python, JavaScript,
// through the official SDKs or not) can use it as a local replacement, as it would use the
// Azurite emulator.
//
// Usage:
//
//	tabula serve [--addr 127.0.0.1:10002] [--data ./tabula-data | --in-memory] [--accounts name:key;…]
//
// It listens on the loopback interface unless given another address, keeps its data in
// ./tabula-data unless told otherwise, prints the connection string of each account it
// accepts (by default the emulators' devstoreaccount1, or those of --accounts or the
// TABULA_ACCOUNTS environment variable, in the form "name:base64key[:base64key];…"), and on
// SIGINT or SIGTERM stops accepting connections, lets the requests in flight finish and
// closes the database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: tabula serve [flags]

Serves a Tabula database over the Azure Table service's REST protocol.
Run "tabula serve -h" for the flags.
`

// run is the command without its process: arguments in, exit code out, stopping when ctx
// is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if err := serve(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "tabula:", err)
		return 1
	}
	return 0
}

// shutdownGrace is how long requests in flight get to finish once a signal arrives.
const shutdownGrace = 30 * time.Second

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:10002", "address to listen on (the Table emulator's port on loopback by default)")
	dir := fs.String("data", "./tabula-data", "directory to keep the database in")
	inMemory := fs.Bool("in-memory", false, "keep the database in memory only (--data is ignored)")
	accountsFlag := fs.String("accounts", "", `accounts to accept, "name:base64key[:base64key];…" (default $TABULA_ACCOUNTS, else devstoreaccount1)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	spec := *accountsFlag
	if spec == "" {
		spec = os.Getenv("TABULA_ACCOUNTS")
	}
	var accounts []server.Account
	if spec != "" {
		var err error
		if accounts, err = server.ParseAccounts(spec); err != nil {
			return err
		}
	}

	var (
		db  *tabula.DB
		err error
	)
	where := "in memory"
	if *inMemory {
		db, err = tabula.OpenInMemory(nil)
	} else {
		where = *dir
		db, err = tabula.Open(*dir, nil)
	}
	if err != nil {
		return fmt.Errorf("opening the database: %w", err)
	}
	h, err := server.New(db, &server.Options{Accounts: accounts})
	if err != nil {
		return errors.Join(err, db.Close())
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return errors.Join(err, db.Close())
	}
	endpoint := "http://" + displayAddr(ln.Addr())
	fmt.Fprintf(stdout, "Tabula is serving the Azure Table API at %s (data %s).\n", endpoint, where)
	for _, a := range h.Accounts() {
		fmt.Fprintf(stdout, "Connection string for %s:\n  %s\n", a.Name, a.ConnectionString(endpoint))
	}
	fmt.Fprintf(stdout, "Console (sign in with an account name and key): %s%sconsole/\n", endpoint, server.ReservedPrefix)

	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
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
	if cerr := db.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("closing the database: %w", cerr))
	}
	if err == nil {
		fmt.Fprintln(stdout, "Stopped; the database is closed.")
	}
	return err
}

// displayAddr is the address clients should use: a listener on every interface is
// reached on loopback from the same machine.
func displayAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	return tcp.String()
}
