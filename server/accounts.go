package server

import (
	"encoding/base64"
	"fmt"
	"strings"
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
