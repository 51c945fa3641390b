package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/server"
)

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

// errHelp reports that --help was asked for and answered.
var errHelp = errors.New("help requested")

// flagGroup is a titled set of flags, so that --help reads by topic rather than A to Z.
type flagGroup struct {
	title string
	names []string
}

const serveIntro = `Usage: tabula serve [flags]

Serves a Tabula database over the Azure Table service's REST protocol, at the storage
emulators' path-style URLs (http://127.0.0.1:10002/devstoreaccount1), and prints a
connection string for each account. Flags take one dash or two. Azurite's command line
runs unchanged: its table flags mean what they mean to Azurite (or the equivalent said
below), AZURITE_ACCOUNTS is read as TABULA_ACCOUNTS, and the flags of Azurite's blob and
queue services are accepted and ignored.
`

// parseServe reads the flags of "tabula serve". Help goes to out; errors are returned, not
// printed, so that each is reported once.
func parseServe(args []string, getenv func(string) string, out io.Writer) (*config, error) {
	cfg := &config{http: server.DefaultHTTPLimits()}
	fs := flag.NewFlagSet("tabula serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var groups []flagGroup
	// group defines a group's flags and lists them in the order given, which --help keeps.
	group := func(title string, define func(), names ...string) {
		define()
		groups = append(groups, flagGroup{title: title, names: names})
	}

	var (
		host, accountsSpec, limits, faults string
		port                               int
		partitionRate, accountRate         float64
		loose, disableTelemetry            bool
		keepAlive                          int
		extentMemoryLimit                  float64
	)
	group("Where", func() {
		fs.StringVar(&cfg.addr, "addr", "127.0.0.1:10002", "`host:port` to listen on; port 0 picks a free one")
		fs.StringVar(&host, "tableHost", "", "`host` to listen on, as Azurite's flag (overrides the host of --addr)")
		fs.IntVar(&port, "tablePort", -1, "`port` to listen on, as Azurite's flag (overrides the port of --addr)")
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
				"(go test -run TestPowerLoss): on, 1,265 acknowledged transactions, 0 lost, 0 partial;\n"+
				"off, 1,725 of 2,492 lost, 0 partial, none acknowledged more than 0.9 s before the cut")
		fs.Func("disk-reserve", "free `size` to keep on the data directory's disk (512MiB, 64MiB, 1GiB; default 512MiB):\n"+
			"with less, writes get 503 ServerBusy and reads go on; a directory opened with less\n"+
			"opens read-only, and writes resume as soon as the space is there", func(v string) error {
			n, err := parseSize(v)
			cfg.db.DiskReserve = n
			return err
		})
		fs.Func("memory", "`size` of memory the on-disk store may take for its buffers, caches and\n"+
			"compactions, and the Go heap's room to collect in (256MiB, 1GiB; default 1GiB, least\n"+
			"256MiB); also sets the Go memory limit to 15/16 of it plus what tabula used at\n"+
			"start, unless GOMEMLIMIT is set", func(v string) error {
			n, err := parseSize(v)
			cfg.db.MemoryBudget = n
			return err
		})
	}, "addr", "tableHost", "tablePort", "data", "location", "in-memory", "inMemoryPersistence", "sync-writes", "disk-reserve", "memory")
	group("Accounts and security", func() {
		fs.StringVar(&accountsSpec, "accounts", "", "accounts to accept, \"`name:base64key[:base64key];…`\"\n(default $TABULA_ACCOUNTS, else Azurite's $AZURITE_ACCOUNTS, else the development\naccount devstoreaccount1)")
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
		fs.BoolVar(&loose, "loose", false, "accepted (Azurite's loose mode): Tabula, like the service, ignores headers and\n"+
			"query parameters it has no use for")
		fs.BoolVar(&loose, "L", false, "")
		fs.BoolVar(&disableTelemetry, "disableTelemetry", false, "accepted: Tabula collects no telemetry")
		fs.IntVar(&keepAlive, "tableKeepAliveTimeout", -1, "how long a keep-alive connection waits for its next request, in `seconds`\n(Azurite's name for --idle-timeout)")
		for _, name := range []string{"blobHost", "blobPort", "blobKeepAliveTimeout", "queueHost", "queuePort", "queueKeepAliveTimeout"} {
			fs.Func(name, "", func(string) error {
				cfg.notes = append(cfg.notes, "Note: --"+name+" is ignored: Tabula serves only the Table service.")
				return nil
			})
		}
		fs.Float64Var(&extentMemoryLimit, "extentMemoryLimit", -1, "accepted with --inMemoryPersistence, as Azurite: it limits blob\ncontent, which Tabula does not keep, in `megabytes`")
	}, "skipApiVersionCheck", "disableProductStyleUrl", "loose", "disableTelemetry", "tableKeepAliveTimeout", "extentMemoryLimit")
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
		fs.StringVar(&limits, "limits", "observe", "what the scalability targets do (`mode`): off, observe (count what would\nbe throttled; the default) or enforce (answer ServerBusy above them)")
		fs.Float64Var(&partitionRate, "partition-rate", partition.DefaultPartitionRate, "target per PartitionKey, in `entities/s`")
		fs.Float64Var(&accountRate, "account-rate", partition.DefaultAccountRate, "target of each account served, in `entities/s`")
		fs.StringVar(&faults, "faults", "", "inject faults, deterministically: \"`seed=N,busy=P,timeout=P,...`\" where busy and\n"+
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

	fs.Usage = func() {} // the caller reports errors; help is printed below
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(out, fs, groups)
			return nil, errHelp
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	if host != "" || port >= 0 {
		if set["addr"] {
			return nil, errors.New("give --addr or --tableHost/--tablePort, not both")
		}
		h, p, _ := net.SplitHostPort(cfg.addr)
		if host != "" {
			h = host
		}
		if port >= 0 {
			if port > 65535 {
				return nil, fmt.Errorf("--tablePort %d is not a port", port)
			}
			p = strconv.Itoa(port)
		}
		cfg.addr = net.JoinHostPort(h, p)
	}
	if _, _, err := net.SplitHostPort(cfg.addr); err != nil {
		return nil, fmt.Errorf("--addr %q: want host:port", cfg.addr)
	}
	location := set["location"] || set["l"]
	if set["data"] && location || set["location"] && set["l"] {
		return nil, errors.New("give --data or --location, not both")
	}
	if cfg.inMemory && location {
		return nil, errors.New("--inMemoryPersistence does not go with --location (as in Azurite): keep the data in memory or in a directory")
	}
	if set["extentMemoryLimit"] && !cfg.inMemory {
		return nil, errors.New("--extentMemoryLimit goes only with --inMemoryPersistence (as in Azurite)")
	}
	if set["tableKeepAliveTimeout"] {
		if set["idle-timeout"] {
			return nil, errors.New("give --idle-timeout or --tableKeepAliveTimeout, not both")
		}
		if keepAlive < 0 {
			return nil, fmt.Errorf("--tableKeepAliveTimeout %d: want seconds, 0 or more", keepAlive)
		}
		cfg.http.IdleTimeout = time.Duration(keepAlive) * time.Second
	}

	if accountsSpec == "" {
		accountsSpec = getenv("TABULA_ACCOUNTS")
	}
	if accountsSpec == "" {
		accountsSpec = getenv("AZURITE_ACCOUNTS") // the same form: name:key[:key];…
	}
	if accountsSpec != "" {
		var err error
		if cfg.accounts, err = server.ParseAccounts(accountsSpec); err != nil {
			return nil, fmt.Errorf("--accounts: %w", err)
		}
	}
	if cfg.adminKey == "" {
		cfg.adminKey = getenv("TABULA_ADMIN_KEY")
	}
	cfg.pfx = set["pwd"] || cfg.keyFile == "" && (strings.HasSuffix(strings.ToLower(cfg.certFile), ".pfx") || strings.HasSuffix(strings.ToLower(cfg.certFile), ".p12"))
	switch {
	case cfg.pfx && cfg.certFile == "":
		return nil, errors.New("--pwd is the password of a .pfx file given with --cert")
	case cfg.pfx && cfg.keyFile != "":
		return nil, errors.New("a .pfx file holds its key: give --cert and --pwd, no --key")
	case cfg.pfx && cfg.selfSigned:
		return nil, errors.New("--self-signed makes its own certificate; give no .pfx")
	case !cfg.pfx && (cfg.certFile == "") != (cfg.keyFile == "") && !cfg.selfSigned:
		return nil, errors.New("--cert and --key go together (or --cert FILE.pfx and --pwd)")
	}
	if cfg.selfSigned && cfg.keyFile != "" {
		return nil, errors.New("--self-signed makes its own key; give no --key")
	}
	if cfg.oauth && cfg.certFile == "" && !cfg.selfSigned {
		return nil, errors.New("--oauth needs HTTPS (--cert and --key, or --self-signed): token credentials send bearer tokens only over HTTPS")
	}
	switch cfg.logFormat {
	case "text", "json":
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", cfg.logFormat)
	}
	if cfg.http.MaxConnections < 0 {
		return nil, fmt.Errorf("--max-connections %d: want 0 (no cap) or more", cfg.http.MaxConnections)
	}
	for name, d := range map[string]time.Duration{"read-timeout": cfg.http.ReadTimeout, "write-timeout": cfg.http.WriteTimeout, "idle-timeout": cfg.http.IdleTimeout,
		"table-delete-delay": cfg.db.TableDeleteDelay} {
		if d < 0 {
			return nil, fmt.Errorf("--%s %v: want 0 (none) or more", name, d)
		}
	}

	switch limits {
	case "off":
		cfg.db.Limits.Mode = partition.LimitOff
	case "observe":
		cfg.db.Limits.Mode = partition.LimitObserve
	case "enforce":
		cfg.db.Limits.Mode = partition.LimitEnforce
	default:
		return nil, fmt.Errorf("--limits %q: want off, observe or enforce", limits)
	}
	if !(partitionRate > 0) || !(accountRate > 0) {
		return nil, errors.New("--partition-rate and --account-rate must be more than 0 entities/s")
	}
	cfg.db.Limits.PartitionRate, cfg.db.Limits.AccountRate = partitionRate, accountRate
	if faults != "" {
		f, err := parseFaults(faults)
		if err != nil {
			return nil, fmt.Errorf("--faults: %w", err)
		}
		cfg.db.Faults = f
	}
	return cfg, nil
}

// parseSize reads a size in bytes, with an optional unit: B, KiB, MiB, GiB, KB, MB, GB.
func parseSize(v string) (uint64, error) {
	units := []struct {
		suffix string
		factor uint64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, factor := strings.TrimSpace(v), uint64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, factor = strings.TrimSpace(n), u.factor
			break
		}
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n == 0 || n > math.MaxUint64/factor {
		return 0, fmt.Errorf("%q: want a size of more than 0 bytes, such as 512MiB", v)
	}
	return n * factor, nil
}

// parseFaults reads "seed=7,busy=0.01,timeout=0.005,kinds=insert+query,continuation-every=100,
// offline-on-split,offline-for=3s" into partition.Faults.
func parseFaults(spec string) (partition.Faults, error) {
	var f partition.Faults
	prob := func(k, v string) (float64, error) {
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || !(p >= 0 && p <= 1) {
			return 0, fmt.Errorf("%s=%s: want a probability from 0 to 1", k, v)
		}
		return p, nil
	}
	for _, item := range strings.Split(spec, ",") {
		k, v, hasValue := strings.Cut(strings.TrimSpace(item), "=")
		var err error
		switch k {
		case "seed":
			f.Seed, err = strconv.ParseUint(v, 10, 64)
		case "busy":
			f.ServerBusy, err = prob(k, v)
		case "timeout":
			f.Timeout, err = prob(k, v)
		case "kinds":
			f.Kinds, err = parseKinds(v)
		case "continuation-every":
			f.ContinuationEvery, err = strconv.Atoi(v)
			if err == nil && f.ContinuationEvery < 1 {
				err = errors.New("want 1 or more")
			}
		case "offline-on-split":
			f.OfflineOnSplit = !hasValue || v == "true"
			if hasValue && v != "true" && v != "false" {
				err = errors.New("want true or false")
			}
		case "offline-for":
			f.OfflineFor, err = time.ParseDuration(v)
		default:
			return f, fmt.Errorf("unknown setting %q; want seed, busy, timeout, kinds, continuation-every, offline-on-split or offline-for", k)
		}
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) {
				err = ne.Err
			}
			if strings.HasPrefix(err.Error(), k+"=") {
				return f, err
			}
			return f, fmt.Errorf("%s=%s: %v", k, v, err)
		}
	}
	return f, nil
}

// parseKinds reads "insert+query", "reads", "writes" or "all".
func parseKinds(spec string) (partition.KindSet, error) {
	var set partition.KindSet
	for _, name := range strings.Split(spec, "+") {
		switch name {
		case "all":
			set |= partition.AllKinds
			continue
		case "reads":
			set |= partition.ReadKinds
			continue
		case "writes":
			set |= partition.WriteKinds
			continue
		}
		found := false
		for k := partition.Kind(0); partition.AllKinds.Has(k); k++ {
			if k.String() == name {
				set |= partition.Kinds(k)
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown kind %q", name)
		}
	}
	return set, nil
}

// shortNames are Azurite's one-letter flags, printed beside their long names.
var shortNames = map[string]string{"location": "l", "silent": "s", "debug": "d", "loose": "L"}

// printUsage writes the help: the introduction, then each group's flags with two dashes.
func printUsage(out io.Writer, fs *flag.FlagSet, groups []flagGroup) {
	fmt.Fprint(out, serveIntro)
	for _, g := range groups {
		fmt.Fprintf(out, "\n%s:\n", g.title)
		for _, name := range g.names {
			f := fs.Lookup(name)
			arg, text := flag.UnquoteUsage(f)
			line := "  --" + f.Name
			if short := shortNames[f.Name]; short != "" {
				line = "  -" + short + ", --" + f.Name
			}
			if arg != "" {
				line += " " + arg
			}
			text = strings.ReplaceAll(text, "\n", "\n        ")
			if d := f.DefValue; d != "" && d != "false" && d != "-1" && d != "0" && !strings.Contains(text, "(default") {
				text += " (default " + d + ")"
			}
			fmt.Fprintf(out, "%s\n        %s\n", line, text)
		}
	}
}
