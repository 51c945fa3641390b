package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/server"
)

// The flags of "tabula serve", their checks, and the config they make (serve.go runs it).

// config is a parsed "tabula serve" command line.
type config struct {
	addr     string
	dir      string
	inMemory bool
	accounts []server.Account // nil: the development account
	adminKey string           // "": one made up at start

	db   tabula.Options
	http server.HTTPLimits

	certFile, keyFile string
	pfxPassword       string // --pwd: --cert is a PKCS#12 (.pfx) file
	pfx               bool
	selfSigned        bool
	oauth             bool

	pathStyleOnly bool // --disableProductStyleUrl
	anyVersion    bool // --skipApiVersionCheck

	// notes are what the operator should hear about the command line: Azurite flags that
	// mean nothing to Tabula's single Table service. serve prints them on standard error.
	notes []string

	silent    bool
	debugFile string
	logFormat string

	// Data in and out (tabula import and export, cmd/tabula/data.go).
	importFile, exportOnExit string
}

const serveIntro = `Usage: tabula serve [flags]

Serves a Tabula database over the Azure Table service's REST protocol, at the storage
emulators' path-style URLs (http://127.0.0.1:10002/devstoreaccount1), and prints a
connection string for each account. Flags take one dash or two. Azurite's command line
runs unchanged: its table flags mean what they mean to Azurite (or the equivalent said
below), AZURITE_ACCOUNTS is read as TABULA_ACCOUNTS, and the flags of Azurite's blob and
queue services are accepted and ignored.
`

// serveFlags are the flags that a check turns into the config, rather than set it directly.
type serveFlags struct {
	host, accountsSpec, limits, faults string
	port, keepAlive                    int
	partitionRate, accountRate         float64
	extentMemoryLimit                  float64
	loose, disableTelemetry, version   bool
}

// parseServe reads the flags of "tabula serve". Help (and --version) goes to out; errors
// are returned, not printed, so that each is reported once.
func parseServe(args []string, getenv func(string) string, out io.Writer) (*config, error) {
	cfg := &config{http: server.DefaultHTTPLimits()}
	var sf serveFlags
	fs := flag.NewFlagSet("tabula serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // the caller reports errors; help is printed below
	groups := cfg.defineFlags(fs, &sf)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(out, serveIntro, fs, groups)
			return nil, errHelp
		}
		return nil, flagError(fs, err)
	}
	if sf.version {
		fmt.Fprintln(out, versionLine())
		return nil, errHelp
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (flags come as --name value)", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, check := range []func(map[string]bool, *serveFlags, func(string) string) error{
		cfg.checkWhere, cfg.checkSecurity, cfg.checkLogAndHTTP, cfg.checkSimulation,
	} {
		if err := check(set, &sf, getenv); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// defineFlags defines the flags on fs, setting cfg and sf, and returns their groups for
// --help.
func (cfg *config) defineFlags(fs *flag.FlagSet, sf *serveFlags) []flagGroup {
	var groups []flagGroup
	// group defines a group's flags and lists them in the order given, which --help keeps.
	group := func(title string, define func(), names ...string) {
		define()
		groups = append(groups, flagGroup{title: title, names: names})
	}
	group("Where", func() {
		fs.StringVar(&cfg.addr, "addr", "127.0.0.1:10002", "`host:port` to listen on; port 0 picks a free one")
		fs.StringVar(&sf.host, "tableHost", "", "`host` to listen on, as Azurite's flag (overrides the host of --addr)")
		fs.IntVar(&sf.port, "tablePort", -1, "`port` to listen on, as Azurite's flag (overrides the port of --addr)")
		fs.StringVar(&cfg.dir, "data", "./tabula-data", "`directory` to keep the database in")
		fs.StringVar(&cfg.dir, "location", "./tabula-data", "the same as --data, in `directory` (Azurite's name; Tabula does not read\nAzurite's files, so give it a directory of its own)")
		fs.StringVar(&cfg.dir, "l", "./tabula-data", "")
		fs.BoolVar(&cfg.inMemory, "in-memory", false, "keep the database in memory only; --data is ignored")
		fs.BoolVar(&cfg.inMemory, "inMemoryPersistence", false, "the same as --in-memory (Azurite's name); not with --location, as in Azurite")
		fs.BoolVar(&cfg.db.SyncWrites, "sync-writes", false,
			"acknowledge a write only once the disk has it. Off, a crash of tabula loses nothing\n"+
				"acknowledged, but a power loss or kernel crash can lose the last second of\n"+
				"acknowledged writes (always whole transactions); on, nothing acknowledged is lost,\n"+
				"at the price of an fsync per write. Measured by cutting the power 40 times each way\n"+
				"(go test -run TestPowerLossEngine): on, 1,091 acknowledged transactions, none lost,\n"+
				"none partial; off, 1,710 of 10,445 lost, none partial, none acknowledged more than\n"+
				"0.93 s before the cut")
		fs.Func("disk-reserve", "free `size` to keep on the data directory's disk (512MiB, 64MiB, 1GiB; default 512MiB):\n"+
			"with less, writes get 503 ServerBusy and reads go on; a directory opened with less\n"+
			"opens read-only, and writes resume as soon as the space is there", func(v string) error {
			n, err := parseSize(v)
			if err == nil && n == 0 {
				err = errors.New("0 would mean the default, 512MiB; give a size of more than 0 bytes, such as 64MiB")
			}
			cfg.db.DiskReserve = n
			return err
		})
		fs.Func("memory", "`size` of memory the on-disk store may take for its buffers, caches and\n"+
			"compactions, and the Go heap's room to collect in (256MiB, 1.5GiB, 2GB; default 1GiB,\n"+
			"least 256MiB, most the machine's memory); also sets the Go memory limit to 15/16\n"+
			"of it plus what tabula used at start, unless GOMEMLIMIT is set", func(v string) (err error) {
			cfg.db.MemoryBudget, err = parseMemory(v, machineMemory())
			return err
		})
	}, "addr", "tableHost", "tablePort", "data", "location", "in-memory", "inMemoryPersistence", "sync-writes", "disk-reserve", "memory")
	group("Accounts and security", func() {
		fs.StringVar(&sf.accountsSpec, "accounts", "", "accounts to accept, \"`name:base64key[:base64key];…`\"\n(default $TABULA_ACCOUNTS, else Azurite's $AZURITE_ACCOUNTS, else the development\naccount devstoreaccount1)")
		fs.StringVar(&cfg.adminKey, "admin-key", "", "the management API's administrator password (user _tabula), which steers every\naccount and creates accounts (default $TABULA_ADMIN_KEY, else a random one, printed)")
		fs.StringVar(&cfg.certFile, "cert", "", "serve HTTPS with the PEM certificate in `file` (needs --key), or the\nPKCS#12 (.pfx) certificate and key in file (with --pwd)")
		fs.StringVar(&cfg.keyFile, "key", "", "the PEM private key of --cert, in `file`")
		fs.StringVar(&cfg.pfxPassword, "pwd", "", "the `password` of the .pfx file --cert names, as Azurite's flag")
		fs.BoolVar(&cfg.selfSigned, "self-signed", false,
			"serve HTTPS with a new certificate for 127.0.0.1 and localhost, written to --cert\n"+
				"(default tabula-cert.pem in the data directory, or a temporary one with --in-memory)\n"+
				"for clients to trust")
		fs.Func("oauth", "accept bearer tokens (`basic`, as Azurite): the token's shape, audience and expiry\n"+
			"are checked but its signature is NOT verified, so only use it where anyone may\n"+
			"write; needs HTTPS", func(v string) error {
			if v != "basic" {
				return fmt.Errorf("only \"basic\" is supported")
			}
			cfg.oauth = true
			return nil
		})
	}, "accounts", "admin-key", "cert", "key", "pwd", "self-signed", "oauth")
	group("Azurite's switches", func() {
		fs.BoolVar(&cfg.anyVersion, "skipApiVersionCheck", false, "serve every x-ms-version, not only the service's (beyond the service, as Azurite)")
		fs.BoolVar(&cfg.pathStyleOnly, "disableProductStyleUrl", false,
			"read the account from the path's first segment only, never from the host name\n"+
				"(as Azurite: for clients that reach the server by a dotted name such as a container's)")
		fs.BoolVar(&sf.loose, "loose", false, "accepted (Azurite's loose mode): Tabula, like the service, ignores headers and\n"+
			"query parameters it has no use for")
		fs.BoolVar(&sf.loose, "L", false, "")
		fs.BoolVar(&sf.disableTelemetry, "disableTelemetry", false, "accepted: Tabula collects no telemetry")
		fs.IntVar(&sf.keepAlive, "tableKeepAliveTimeout", -1, "how long a keep-alive connection waits for its next request, in `seconds`\n(Azurite's name for --idle-timeout)")
		for _, name := range []string{"blobHost", "blobPort", "blobKeepAliveTimeout", "queueHost", "queuePort", "queueKeepAliveTimeout"} {
			fs.Func(name, "", func(string) error {
				cfg.notes = append(cfg.notes, "Note: --"+name+" is ignored: Tabula serves only the Table service.")
				return nil
			})
		}
		fs.BoolVar(&sf.version, "version", false, "print the version and stop, as Azurite's flag")
		fs.BoolVar(&sf.version, "v", false, "")
		fs.Float64Var(&sf.extentMemoryLimit, "extentMemoryLimit", -1, "accepted with --inMemoryPersistence, as Azurite: it limits blob\ncontent, which Tabula does not keep, in `megabytes`")
	}, "skipApiVersionCheck", "disableProductStyleUrl", "loose", "disableTelemetry", "tableKeepAliveTimeout", "extentMemoryLimit", "version")
	group("Request log", func() {
		fs.BoolVar(&cfg.silent, "silent", false, "log no requests (one line each by default, on standard output)")
		fs.BoolVar(&cfg.silent, "s", false, "")
		fs.StringVar(&cfg.debugFile, "debug", "", "append every request and response in full to `file`, with keys and\nsignatures redacted")
		fs.StringVar(&cfg.debugFile, "d", "", "")
		fs.StringVar(&cfg.logFormat, "log-format", "text", "request log `format`: text or json")
	}, "silent", "log-format", "debug")
	group("HTTP", func() {
		fs.DurationVar(&cfg.http.ReadTimeout, "read-timeout", cfg.http.ReadTimeout, "most time to read a whole request, body included")
		fs.DurationVar(&cfg.http.WriteTimeout, "write-timeout", cfg.http.WriteTimeout, "most time from a request's headers to the end of its response")
		fs.DurationVar(&cfg.http.IdleTimeout, "idle-timeout", cfg.http.IdleTimeout, "most time a keep-alive connection waits for its next request")
		fs.IntVar(&cfg.http.MaxConnections, "max-connections", cfg.http.MaxConnections, "most connections open at once; 0 for no cap")
	}, "read-timeout", "write-timeout", "idle-timeout", "max-connections")
	group("Simulation of the service under load", func() {
		fs.StringVar(&sf.limits, "limits", "observe", "what the scalability targets do (`mode`): off, observe (count what would\nbe throttled; the default) or enforce (answer ServerBusy above them)")
		fs.Float64Var(&sf.partitionRate, "partition-rate", partition.DefaultPartitionRate, "target per PartitionKey, in `entities/s`")
		fs.Float64Var(&sf.accountRate, "account-rate", partition.DefaultAccountRate, "target of each account served, in `entities/s`")
		fs.StringVar(&sf.faults, "faults", "", "inject faults, deterministically: \"`seed=N,busy=P,timeout=P,...`\" where busy and\n"+
			"timeout are probabilities per operation of ServerBusy and OperationTimedOut;\n"+
			"also kinds=insert+query (or reads, writes), continuation-every=N (end query\n"+
			"pages after N scanned entities), offline-on-split, offline-for=3s")
		fs.BoolVar(&cfg.db.ForbidFullScans, "forbid-full-scans", false, "fail queries the service would run as full table scans")
		fs.BoolVar(&cfg.db.BoundaryContinuations, "boundary-continuations", false, "end query pages where they cross range partitions, as the service may")
		fs.Func("flavor", "whose rules to enforce (`name`): table, the Azure Table service's (default), or\n"+
			"cosmos, adding the Cosmos DB for Table API's stricter ones with its answers:\n"+
			"RowKey at most 255 bytes, no empty keys, transactions at most 2 MiB, property\n"+
			"names ID, rid and ResourceId reserved, case-sensitive table names, query\n"+
			"pages not in key order", func(v string) (err error) {
			cfg.db.Flavor, err = tabula.ParseFlavor(v)
			return err
		})
		fs.DurationVar(&cfg.db.TableDeleteDelay, "table-delete-delay", 0, "keep a deleted table in the service's TableBeingDeleted state for `duration`\n"+
			"(such as 40s, as the service takes at least that): a create of its name, or any\n"+
			"operation on it, answers 409 TableBeingDeleted meanwhile; 0 frees the name at once,\n"+
			"as the emulators do")
	}, "limits", "partition-rate", "account-rate", "faults", "forbid-full-scans", "boundary-continuations", "table-delete-delay", "flavor")

	group("Data in and out", func() {
		fs.StringVar(&cfg.importFile, "import", "", "load the interchange `file` (see \"tabula export --help\") at start, replacing\nthe entities that exist and keeping the file's Timestamps")
		fs.StringVar(&cfg.exportOnExit, "export-on-exit", "", "on a clean stop, write every table to the interchange `file`")
	}, "import", "export-on-exit")

	return groups
}

// parseMemory reads --memory: a size from tabula.MinMemoryBudget, as the help says, to the
// machine's memory (when known, machine > 0), beyond which the store fails later and worse.
func parseMemory(v string, machine uint64) (uint64, error) {
	n, err := parseSize(v)
	switch {
	case err != nil:
		return 0, err
	case n < tabula.MinMemoryBudget:
		return 0, fmt.Errorf("%s less than the least, %s: give --memory %s or more, or leave it out",
			sizeIs(v, n), formatSize(tabula.MinMemoryBudget), formatSize(tabula.MinMemoryBudget))
	case machine > 0 && n > machine:
		return 0, fmt.Errorf("%s more than this machine's memory, %s: give --memory at most that",
			sizeIs(v, n), formatSize(machine))
	}
	return n, nil
}

// checkWhere checks where tabula listens and keeps its data.
func (cfg *config) checkWhere(set map[string]bool, sf *serveFlags, _ func(string) string) error {
	if sf.host != "" || sf.port >= 0 {
		if set["addr"] {
			return errors.New("give --addr or --tableHost/--tablePort, not both")
		}
		h, p, _ := net.SplitHostPort(cfg.addr)
		if sf.host != "" {
			h = sf.host
		}
		if sf.port >= 0 {
			if sf.port > 65535 {
				return fmt.Errorf("--tablePort %d is not a port: give one from 1 to 65535, or 0 for a free one", sf.port)
			}
			p = strconv.Itoa(sf.port)
		}
		cfg.addr = net.JoinHostPort(h, p)
	}
	if _, _, err := net.SplitHostPort(cfg.addr); err != nil {
		return fmt.Errorf("--addr %q: want host:port, such as 127.0.0.1:10002", cfg.addr)
	}
	location := set["location"] || set["l"]
	if set["data"] && location || set["location"] && set["l"] {
		return errors.New("give --data or --location, not both")
	}
	if cfg.inMemory && location {
		return errors.New("--inMemoryPersistence does not go with --location (as in Azurite): keep the data in memory or in a directory")
	}
	if set["extentMemoryLimit"] && !cfg.inMemory {
		return errors.New("--extentMemoryLimit goes only with --inMemoryPersistence (as in Azurite)")
	}
	return nil
}

// checkSecurity checks the accounts, the admin key, HTTPS and bearer tokens.
func (cfg *config) checkSecurity(set map[string]bool, sf *serveFlags, getenv func(string) string) error {
	spec := sf.accountsSpec
	if spec == "" {
		spec = getenv("TABULA_ACCOUNTS")
	}
	if spec == "" {
		spec = getenv("AZURITE_ACCOUNTS") // the same form: name:key[:key];…
	}
	if spec != "" {
		var err error
		if cfg.accounts, err = server.ParseAccounts(spec); err != nil {
			return fmt.Errorf("--accounts: %w", err)
		}
	}
	if cfg.adminKey == "" {
		cfg.adminKey = getenv("TABULA_ADMIN_KEY")
	}
	lower := strings.ToLower(cfg.certFile)
	cfg.pfx = set["pwd"] || cfg.keyFile == "" && (strings.HasSuffix(lower, ".pfx") || strings.HasSuffix(lower, ".p12"))
	switch {
	case cfg.pfx && cfg.certFile == "":
		return errors.New("--pwd is the password of a .pfx file given with --cert")
	case cfg.pfx && cfg.keyFile != "":
		return errors.New("a .pfx file holds its key: give --cert and --pwd, no --key")
	case cfg.pfx && cfg.selfSigned:
		return errors.New("--self-signed makes its own certificate; give no .pfx")
	case !cfg.pfx && (cfg.certFile == "") != (cfg.keyFile == "") && !cfg.selfSigned:
		return errors.New("--cert and --key go together (or --cert FILE.pfx and --pwd)")
	case cfg.selfSigned && cfg.keyFile != "":
		return errors.New("--self-signed makes its own key; give no --key")
	case cfg.oauth && cfg.certFile == "" && !cfg.selfSigned:
		return errors.New("--oauth needs HTTPS (--cert and --key, or --self-signed): token credentials send bearer tokens only over HTTPS")
	}
	return nil
}

// checkLogAndHTTP checks the request log and the HTTP limits.
func (cfg *config) checkLogAndHTTP(set map[string]bool, sf *serveFlags, _ func(string) string) error {
	switch cfg.logFormat {
	case "text", "json":
	default:
		return fmt.Errorf("--log-format %q: want text or json", cfg.logFormat)
	}
	if set["tableKeepAliveTimeout"] {
		if set["idle-timeout"] {
			return errors.New("give --idle-timeout or --tableKeepAliveTimeout, not both")
		}
		if sf.keepAlive < 0 {
			return fmt.Errorf("--tableKeepAliveTimeout %d: want seconds, 0 or more", sf.keepAlive)
		}
		cfg.http.IdleTimeout = time.Duration(sf.keepAlive) * time.Second
	}
	if cfg.http.MaxConnections < 0 {
		return fmt.Errorf("--max-connections %d: want 0 (no cap) or more", cfg.http.MaxConnections)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"read-timeout", cfg.http.ReadTimeout}, {"write-timeout", cfg.http.WriteTimeout}, {"idle-timeout", cfg.http.IdleTimeout},
		{"table-delete-delay", cfg.db.TableDeleteDelay}} {
		if d.d < 0 {
			return fmt.Errorf("--%s %v: want 0 (none) or more", d.name, d.d)
		}
	}
	return nil
}

// checkSimulation checks the simulation of the service under load, in partition's grammar,
// which the management API reads too.
func (cfg *config) checkSimulation(_ map[string]bool, sf *serveFlags, _ func(string) string) error {
	mode, err := partition.ParseLimitMode(sf.limits)
	if err != nil {
		return fmt.Errorf("--limits %q: want off, observe or enforce", sf.limits)
	}
	cfg.db.Limits.Mode = mode
	for _, r := range []struct {
		name string
		v    float64
	}{{"partition-rate", sf.partitionRate}, {"account-rate", sf.accountRate}} {
		if err := partition.CheckRate(r.name, r.v); err != nil {
			return fmt.Errorf("--%v", err)
		}
	}
	cfg.db.Limits.PartitionRate, cfg.db.Limits.AccountRate = sf.partitionRate, sf.accountRate
	if sf.faults != "" {
		if cfg.db.Faults, err = partition.ParseFaults(sf.faults); err != nil {
			return fmt.Errorf("--faults: %w", err)
		}
	}
	return nil
}

// sizeIs says what v, read as n bytes, is ("1GB is 953.7MiB,", "10MiB is"), in the units of
// the messages about it.
func sizeIs(v string, n uint64) string {
	if f := formatSize(n); f != strings.TrimSpace(v) {
		return v + " is " + f + ","
	}
	return v + " is"
}
