package remote

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strings"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula"
)

// Options configure a Client. The zero value (or a nil *Options) is the default.
type Options struct {
	// ClientOptions are the Azure SDK's: the HTTP transport (Transport, for instance
	// tabulatest's in-process one), the retry policy, telemetry and logging. By default
	// the SDK retries ServerBusy, timeouts and connection failures three times with
	// exponential backoff; set Retry.MaxRetries to -1 to see every refusal, as the
	// embedded engine reports it.
	ClientOptions azcore.ClientOptions
}

// Client is a table service reached over its REST protocol. It is safe for concurrent use
// and holds no resources of its own beyond the SDK's HTTP connections, so it needs no Close.
type Client struct {
	svc *aztables.ServiceClient
}

// The remote client is a ServiceAPI as it is.
var _ tabula.ServiceAPI = (*Client)(nil)

// Dial returns a client for the service a connection string names: with AccountName and
// AccountKey (Shared Key), or with AccountName and SharedAccessSignature, and optionally
// TableEndpoint, DefaultEndpointsProtocol and EndpointSuffix, as the Azure portal and
// `tabula serve` print them. Like grpc.Dial, it sends nothing: a wrong key shows on the
// first operation, as AuthenticationFailed.
//
// UseDevelopmentStorage=true, which other SDKs accept and Go's does not, names the storage
// emulators' development account at http://127.0.0.1:10002, as tabula serve and Azurite
// serve it by default.
func Dial(connectionString string, opts *Options) (*Client, error) {
	if isDevelopmentStorage(connectionString) {
		connectionString = developmentStorage
	}
	// The SDK builds a SAS connection string's URL from AccountName alone, as for a storage
	// account in Azure's public cloud; one that names its TableEndpoint (Azurite, tabula
	// serve, another cloud) is honoured here.
	if endpoint, sas, ok := sasEndpoint(connectionString); ok {
		return DialSAS(endpoint+"?"+sas, opts)
	}
	svc, err := aztables.NewServiceClientFromConnectionString(connectionString, clientOptions(opts))
	if err != nil {
		return nil, tabula.ErrInvalidInput.WithDetail("connection string: %v", err)
	}
	return &Client{svc: svc}, nil
}

// developmentStorage is what UseDevelopmentStorage=true stands for in the SDKs that take it:
// the emulators' account, with its key as published in "Use the Azurite emulator for local
// Azure Storage development".
const developmentStorage = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;" +
	"AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;" +
	"TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;"

// isDevelopmentStorage reports whether a connection string is UseDevelopmentStorage=true
// alone (with any spacing, case of the value, or final semicolon).
func isDevelopmentStorage(connectionString string) bool {
	k, v, ok := strings.Cut(strings.TrimSuffix(strings.TrimSpace(connectionString), ";"), "=")
	return ok && strings.TrimSpace(k) == "UseDevelopmentStorage" && strings.EqualFold(strings.TrimSpace(v), "true")
}

// sasEndpoint returns the TableEndpoint and SharedAccessSignature of a connection string
// that has both and no AccountKey.
func sasEndpoint(connectionString string) (endpoint, sas string, ok bool) {
	fields := map[string]string{}
	for _, f := range strings.Split(connectionString, ";") {
		if k, v, found := strings.Cut(strings.TrimSpace(f), "="); found {
			fields[k] = v
		}
	}
	endpoint, sas = fields["TableEndpoint"], strings.TrimPrefix(fields["SharedAccessSignature"], "?")
	if endpoint == "" || sas == "" || fields["AccountKey"] != "" {
		return "", "", false
	}
	if !strings.HasSuffix(endpoint, "/") {
		endpoint += "/"
	}
	return endpoint, sas, true
}

// DialSAS returns a client for a service URL that carries a shared access signature in its
// query, such as https://account.table.core.windows.net/?sv=…&sig=….
func DialSAS(serviceURL string, opts *Options) (*Client, error) {
	svc, err := aztables.NewServiceClientWithNoCredential(serviceURL, clientOptions(opts))
	if err != nil {
		return nil, tabula.ErrInvalidInput.WithDetail("service URL: %v", err)
	}
	return &Client{svc: svc}, nil
}

// DialToken returns a client that authorizes every request with a Microsoft Entra token
// from cred (for instance one of package azidentity's credentials). The SDK sends tokens
// over HTTPS only.
func DialToken(serviceURL string, cred azcore.TokenCredential, opts *Options) (*Client, error) {
	svc, err := aztables.NewServiceClient(serviceURL, cred, clientOptions(opts))
	if err != nil {
		return nil, tabula.ErrInvalidInput.WithDetail("service URL: %v", err)
	}
	return &Client{svc: svc}, nil
}

// clientOptions adds the capture policy (see exchange) to the caller's SDK options.
func clientOptions(opts *Options) *aztables.ClientOptions {
	var o aztables.ClientOptions
	if opts != nil {
		o.ClientOptions = opts.ClientOptions
	}
	o.PerCallPolicies = append([]policy.Policy{capturePolicy{}}, o.PerCallPolicies...)
	o.PerRetryPolicies = append(o.PerRetryPolicies, refusedPolicy{})
	return &o
}

// refusedPolicy stops the SDK retrying a connection the server refused: nothing listens
// there, and three retries with backoff (8 s by default) only delay saying so.
type refusedPolicy struct{}

func (refusedPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
		return resp, refused{err}
	}
	return resp, err
}

// refused is a refused connection, which the SDK's retry policy does not retry (it looks for
// the NonRetriable method).
type refused struct{ error }

func (refused) NonRetriable()   {}
func (e refused) Unwrap() error { return e.error }

// Table returns a handle on the named table without checking that it exists; operations on
// a missing table fail with TableNotFound.
func (c *Client) Table(name string) tabula.TableAPI { return c.table(name) }

func (c *Client) table(name string) *Table {
	return &Table{client: c.svc.NewClient(name), name: name}
}

// CreateTable creates a table (TableAlreadyExists if one of the same name exists).
func (c *Client) CreateTable(ctx context.Context, name string) (tabula.TableAPI, error) {
	ctx, ex := withExchange(ctx, "")
	if _, err := c.svc.CreateTable(ctx, name, nil); err != nil {
		return nil, ex.fail(err)
	}
	return c.table(name), nil
}

// DeleteTable deletes a table and its entities (ResourceNotFound if it does not exist).
func (c *Client) DeleteTable(ctx context.Context, name string) error {
	ctx, ex := withExchange(ctx, "")
	if _, err := c.svc.DeleteTable(ctx, name, nil); err != nil {
		return ex.fail(err)
	}
	return nil
}

// ListTables returns one page of tables in name order. TableInfo.Created is zero: the
// service's listing does not carry it.
func (c *Client) ListTables(ctx context.Context, q tabula.TableQuery) (tabula.TablePage, error) {
	opts := &aztables.ListTablesOptions{}
	if q.Filter != "" {
		opts.Filter = &q.Filter
	}
	if q.Top != 0 {
		top := int32(min(max(q.Top, -1), tabula.MaxTablesPerPage+1)) // out of range stays out of range
		opts.Top = &top
	}
	if q.NextTableName != "" {
		opts.NextTableName = &q.NextTableName
	}
	ctx, ex := withExchange(ctx, "")
	resp, err := c.svc.NewListTablesPager(opts).NextPage(ctx)
	if err != nil {
		return tabula.TablePage{}, ex.fail(err)
	}
	var page tabula.TablePage
	for _, t := range resp.Tables {
		if t != nil && t.Name != nil {
			page.Tables = append(page.Tables, tabula.TableInfo{Name: *t.Name})
		}
	}
	if resp.NextTableName != nil {
		page.NextTableName = *resp.NextTableName
	}
	return page, nil
}

// Tables iterates over the tables a filter selects (every table when it is empty), in name
// order, following NextTableName.
func (c *Client) Tables(ctx context.Context, filter string) iter.Seq2[tabula.TableInfo, error] {
	return func(yield func(tabula.TableInfo, error) bool) {
		q := tabula.TableQuery{Filter: filter}
		for {
			page, err := c.ListTables(ctx, q)
			if err != nil {
				yield(tabula.TableInfo{}, err)
				return
			}
			for _, t := range page.Tables {
				if !yield(t, nil) {
					return
				}
			}
			if page.NextTableName == "" {
				return
			}
			q.NextTableName = page.NextTableName
		}
	}
}
