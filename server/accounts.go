package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tabuladb/tabula"
)

// The storage emulators' well-known development account (Azure docs: "Use the Azurite emulator for
// local Azure Storage development"). Every Azure SDK knows it, so clients pointed at Tabula need no
// configuration beyond the endpoint.
const (
	DevelopmentAccountName = "devstoreaccount1"
	DevelopmentAccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Account is a storage account the server accepts: its name and its keys (base64, as the
// portal shows them). Any of the keys signs a request, as an account's key1 and key2 do.
type Account struct {
	Name string
	Keys []string
}

// DevelopmentAccount is devstoreaccount1 with its well-known key, the account a Server
// accepts when none are configured.
func DevelopmentAccount() Account {
	return Account{Name: DevelopmentAccountName, Keys: []string{DevelopmentAccountKey}}
}

// ParseAccounts reads accounts in the form the emulators use for their environment
// variables, "name1:key1:key2;name2:key1": accounts separated by ';', name and keys by ':'.
// Keys must be base64.
func ParseAccounts(s string) ([]Account, error) {
	var accounts []Account
	for _, spec := range strings.Split(s, ";") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		parts := strings.Split(spec, ":")
		a := Account{Name: strings.TrimSpace(parts[0]), Keys: parts[1:]}
		if err := a.check(); err != nil {
			return nil, err
		}
		accounts = append(accounts, a)
	}
	if len(accounts) == 0 {
		return nil, fmt.Errorf("server: no accounts in %q; want name:base64key[:base64key];…", s)
	}
	return accounts, nil
}

func (a Account) check() error {
	if a.Name == "" || strings.ContainsAny(a.Name, "/?#%:; ") {
		return fmt.Errorf("server: account name %q is empty or has a character URLs cannot carry plainly", a.Name)
	}
	if a.Name == reservedAccountName {
		return fmt.Errorf("server: account name %q is reserved for Tabula's own paths", a.Name)
	}
	if len(a.Keys) == 0 {
		return fmt.Errorf("server: account %q has no key", a.Name)
	}
	for _, k := range a.Keys {
		if _, err := base64.StdEncoding.DecodeString(k); err != nil || k == "" {
			return fmt.Errorf("server: account %q: key %q is not base64", a.Name, k)
		}
	}
	return nil
}

// ConnectionString returns the connection string for the account on a server reachable at
// endpoint (scheme and host, such as "http://127.0.0.1:10002"), signed with the first key.
// The table endpoint is path-style, ending in a slash: the Go SDK appends a table name to it
// when it builds SAS URLs, and every SDK joins paths to it correctly either way.
func (a Account) ConnectionString(endpoint string) string {
	key := ""
	if len(a.Keys) > 0 {
		key = a.Keys[0]
	}
	protocol := "http"
	if strings.HasPrefix(endpoint, "https://") {
		protocol = "https"
	}
	return "DefaultEndpointsProtocol=" + protocol + ";AccountName=" + a.Name + ";AccountKey=" + key +
		";TableEndpoint=" + a.TableEndpoint(endpoint) + ";"
}

// TableEndpoint returns the account's table service URL on a server at endpoint:
// endpoint + "/" + name + "/".
func (a Account) TableEndpoint(endpoint string) string {
	return strings.TrimSuffix(endpoint, "/") + "/" + a.Name + "/"
}

// accountEntry is an account the server serves: its keys, decoded, and the namespace its
// tables live in. It never changes once made; replacing an account replaces its entry.
type accountEntry struct {
	Account
	keys    [][]byte
	ns      *tabula.Namespace
	created bool // through the management API, not Options.Accounts
}

// accountSet is the server's accounts, which the management API adds to and removes from
// while requests run. Requests look accounts up without a lock (byName is a sync.Map, read
// far more than written); mu serialises changes and guards order.
type accountSet struct {
	byName  sync.Map // name → *accountEntry
	mu      sync.Mutex
	order   []string // names, Options.Accounts first, then created accounts as they came
	created int      // how many of order were created through the management API
}

// get returns the account called name, or nil.
func (d *accountSet) get(name string) *accountEntry {
	if v, ok := d.byName.Load(name); ok {
		return v.(*accountEntry)
	}
	return nil
}

// add adds an account served from ns; it fails if the name is taken.
func (d *accountSet) add(a Account, ns *tabula.Namespace, created bool) error {
	e := &accountEntry{Account: Account{Name: a.Name, Keys: append([]string(nil), a.Keys...)}, ns: ns, created: created}
	for _, k := range a.Keys {
		key, err := base64.StdEncoding.DecodeString(k)
		if err != nil {
			return fmt.Errorf("server: account %q: key %q is not base64", a.Name, k)
		}
		e.keys = append(e.keys, key)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, dup := d.byName.LoadOrStore(a.Name, e); dup {
		return fmt.Errorf("server: account %q is given twice: %w", a.Name, errAccountExists)
	}
	d.order = append(d.order, a.Name)
	if created {
		d.created++
	}
	return nil
}

// remove removes the account called name and returns it, or nil if there is none.
func (d *accountSet) remove(name string) *accountEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.byName.LoadAndDelete(name)
	if !ok {
		return nil
	}
	d.order = slices.DeleteFunc(d.order, func(n string) bool { return n == name })
	e := v.(*accountEntry)
	if e.created {
		d.created--
	}
	return e
}

// list returns the accounts in order.
func (d *accountSet) list() []Account {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Account, 0, len(d.order))
	for _, n := range d.order {
		if e := d.get(n); e != nil {
			out = append(out, Account{Name: e.Name, Keys: append([]string(nil), e.Keys...)})
		}
	}
	return out
}

// errAccountExists is a create of an account whose name is taken.
var errAccountExists = errors.New("the account exists")

// MaxCreatedAccounts is the most accounts the management API keeps at once; each costs a few
// hundred bytes of memory, so the bound only stops a runaway loop.
const MaxCreatedAccounts = 1 << 16

// createdNamespacePrefix starts the namespaces of accounts created through the management
// API. No account of Options.Accounts can have it (':' is refused in account names), so a
// created account never reaches the data of a configured one, present or left out.
const createdNamespacePrefix = ":"

// createdNamespace names the namespace of a created account: its name and a number of its
// own, so that an account dropped and created again under the same name never sees what a
// request still running against the old one writes. The namespace counts as live (see
// dropCreatedLeftovers) until the account is deleted.
func createdNamespace(db *tabula.DB, name string) string {
	ns := createdNamespacePrefix + name + ":" + strconv.FormatUint(createdSeq.Add(1), 10)
	liveCreated.Store(liveNamespace{db, ns}, struct{}{})
	return ns
}

// liveNamespace is a namespace of a DB open now.
type liveNamespace struct {
	db *tabula.DB
	ns string
}

// createdSeq numbers created accounts' namespaces, process-wide.
var createdSeq atomic.Uint64

// liveCreated holds the namespaces of the created accounts of every Server of the process
// (a directory is open in one process at most), so that a Server made on a DB another Server
// already serves (NewConsoleHandler does) drops only what dead servers left.
var liveCreated sync.Map // liveNamespace → struct{}

// validCreatedName reports whether name is a storage account name as the service allows
// them: 3 to 24 lowercase letters and digits (Azure docs: "Storage account overview",
// naming).
func validCreatedName(name string) bool {
	if len(name) < 3 || len(name) > 24 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// CreateAccount adds a fresh, empty account to the running server, with its own key and a
// namespace of its own, and returns it. An empty name has one generated. It fails if the
// name is not 3 to 24 lowercase letters and digits, or is taken. The account lives as long
// as the Server: it is not recorded anywhere, and a new Server drops whatever data created
// accounts left in the DB.
func (s *Server) CreateAccount(name string) (Account, error) {
	generated := name == ""
	for attempt := 0; ; attempt++ {
		if generated {
			name = "t" + strings.ToLower(rand.Text()[:16])
		}
		if !validCreatedName(name) {
			return Account{}, fmt.Errorf("server: account name %q must be 3 to 24 lowercase letters and digits", name)
		}
		s.dir.mu.Lock()
		full := s.dir.created >= MaxCreatedAccounts
		s.dir.mu.Unlock()
		if full {
			return Account{}, fmt.Errorf("server: %d created accounts exist, the most the server keeps; delete some: %w", MaxCreatedAccounts, errTooManyAccounts)
		}
		var key [64]byte
		_, _ = rand.Read(key[:])
		a := Account{Name: name, Keys: []string{base64.StdEncoding.EncodeToString(key[:])}}
		ns := createdNamespace(s.db, name)
		err := s.dir.add(a, s.db.Namespace(ns), true)
		if err != nil {
			liveCreated.Delete(liveNamespace{s.db, ns})
		}
		if errors.Is(err, errAccountExists) && generated && attempt < 3 {
			continue
		}
		if err != nil {
			return Account{}, err
		}
		return a, nil
	}
}

// errTooManyAccounts is a create beyond MaxCreatedAccounts.
var errTooManyAccounts = errors.New("too many accounts")

// errConfiguredAccount is a delete of an account of Options.Accounts.
var errConfiguredAccount = errors.New("the account is configured, not created")

// ErrUnknownAccount is a delete of an account the server does not serve.
var ErrUnknownAccount = errors.New("server: no such account")

// DeleteAccount removes an account created with CreateAccount and drops its data: its
// tables with their entities and access policies, and its service properties. Requests for
// it fail from then on, and an account created again under the name starts empty. The
// accounts of Options.Accounts cannot be deleted.
func (s *Server) DeleteAccount(ctx context.Context, name string) error {
	e := s.dir.get(name)
	if e == nil {
		return fmt.Errorf("%w: %q", ErrUnknownAccount, name)
	}
	if !e.created {
		return fmt.Errorf("server: account %q is one the server was started with; it cannot be deleted: %w", name, errConfiguredAccount)
	}
	if s.dir.remove(name) == nil {
		return fmt.Errorf("%w: %q", ErrUnknownAccount, name) // deleted meanwhile
	}
	defer liveCreated.Delete(liveNamespace{s.db, e.ns.Name()})
	return e.ns.Drop(ctx)
}

// dropCreatedLeftovers drops what accounts created through the management API by an earlier
// server left in the DB (a server killed before its accounts were deleted); the accounts of
// Servers of this process that still run are left alone.
func (s *Server) dropCreatedLeftovers() error {
	names, err := s.db.Namespaces(context.Background())
	if err != nil {
		return fmt.Errorf("server: listing namespaces: %w", err)
	}
	for _, ns := range names {
		if _, live := liveCreated.Load(liveNamespace{s.db, ns}); !live && strings.HasPrefix(ns, createdNamespacePrefix) {
			if err := s.db.Namespace(ns).Drop(context.Background()); err != nil {
				return fmt.Errorf("server: dropping a created account's leftovers: %w", err)
			}
		}
	}
	return nil
}

// addConfigured adds the accounts of Options.Accounts, each served from the namespace the DB
// records for its name, and drops what created accounts of an earlier server left.
func (s *Server) addConfigured(accounts []Account, logger *slog.Logger) error {
	names := make([]string, 0, len(accounts))
	for _, a := range accounts {
		if err := a.check(); err != nil {
			return err
		}
		if slices.Contains(names, a.Name) {
			return fmt.Errorf("server: account %q is given twice", a.Name)
		}
		names = append(names, a.Name)
	}
	namespaces, legacy, err := s.db.AccountNamespaces(context.Background(), names)
	if err != nil {
		return fmt.Errorf("server: reading which account owns which data: %w", err)
	}
	// With one account there was nothing to decide: it owns the root namespace, the tables
	// an import or the embedded API wrote, as it always would have.
	if legacy && len(names) > 1 {
		if logger == nil {
			logger = slog.Default()
		}
		logger.Warn("tabula: the data directory did not record which account owns which data; assigned as before, by the order of the accounts, and recorded: "+
			names[0]+" owns the root namespace (the tables the embedded API sees), every other account the namespace of its name",
			"accounts", strings.Join(names, ","))
	}
	for _, a := range accounts {
		if err := s.dir.add(a, namespaces[a.Name], false); err != nil {
			return err
		}
	}
	return s.dropCreatedLeftovers()
}
