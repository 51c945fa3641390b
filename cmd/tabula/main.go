// Command tabula serves a Tabula database over the Azure Table service's REST protocol, so
// that any program written for Azure Table storage (Go, .NET, Java, Python, JavaScript,
// through the official SDKs or not) can use it as a local replacement, as it would use the
// Azurite emulator.
//
// Usage:
//
//	tabula serve [flags]
//	tabula check --data DIR
//	tabula salvage --data DIR --to NEWDIR
//	tabula export [flags] FILE
//	tabula import [flags] FILE
//	tabula version
//
// It listens on the loopback interface unless given another address, keeps its data in
// ./tabula-data unless told otherwise, prints the connection string of each account it
// accepts (by default the emulators' devstoreaccount1, or those of --accounts or the
// TABULA_ACCOUNTS environment variable, in the form "name:base64key[:base64key];…"), logs
// one line per request, and on SIGINT or SIGTERM stops accepting connections, lets the
// requests in flight finish and closes the database. "tabula serve --help" lists the flags:
// where the data lives, HTTPS and bearer tokens, the request log, HTTP timeouts, and the
// simulation of the service under load (rate limits, faults, forced continuations).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `Usage:
  tabula serve [flags]     serve the Azure Table API (see "tabula serve --help")
  tabula check --data DIR  verify a database's bytes and invariants (see "tabula check --help")
  tabula salvage --data DIR --to NEWDIR
                           copy what is readable of a damaged database (see "tabula salvage --help")
  tabula export FILE       write tables to an interchange file (see "tabula export --help")
  tabula import FILE       read an interchange file into tables (see "tabula import --help")
  tabula version           print the version
`

// run is the command without its process: arguments in, exit code out, stopping when ctx
// is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stdout, stderr)
	case "check":
		return runCheck(ctx, args[1:], stdout, stderr)
	case "salvage":
		return runSalvage(ctx, args[1:], stdout, stderr)
	case "export":
		return runExport(ctx, args[1:], stdout, stderr)
	case "import":
		return runImport(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version", "-v":
		fmt.Fprintln(stdout, versionLine())
		return 0
	case "help", "--help", "-help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "tabula: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

// message is err's text without the "tabula: " prefixes that the library's own errors
// carry, so that a wrapped error reads once: "opening the database: storage: open …".
func message(err error) string {
	msg := strings.TrimPrefix(err.Error(), "tabula: ")
	return strings.ReplaceAll(msg, ": tabula: ", ": ")
}

// version is set at link time by release builds (-ldflags "-X main.version=v1.2.3");
// otherwise the module version recorded by "go install …@version" is used.
var version = ""

// versionLine describes this build: version, commit when known, Go release and platform.
func versionLine() string {
	v, rev := version, ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	line := "tabula " + v
	if rev != "" {
		line += " (" + rev + ")"
	}
	return line + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}
