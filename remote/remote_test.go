package remote_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/tabulatest"
)

func inProcess(t *testing.T, srv *tabulatest.Server) *remote.Options {
	return &remote.Options{ClientOptions: azcore.ClientOptions{
		Transport: srv.Transport(), Retry: policy.RetryOptions{MaxRetries: -1}}}
}

// newTable creates the named table on a fresh in-process server and returns it through a
// client dialled with the development account's key.
func newTable(t *testing.T, name string) tabula.TableAPI {
	t.Helper()
	srv := tabulatest.NewInProcess(t, nil)
	c, err := remote.Dial(srv.ConnectionString(), inProcess(t, srv))
	require.NoError(t, err)
	tbl, err := c.CreateTable(context.Background(), name)
	require.NoError(t, err)
	return tbl
}

// accountSAS signs an account SAS for the server's development account.
func accountSAS(t *testing.T, srv *tabulatest.Server, perms aztables.AccountSASPermissions) string {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(tabulatest.AccountName, tabulatest.AccountKey)
	require.NoError(t, err)
	now := time.Now().UTC()
	q, err := aztables.AccountSASSignatureValues{
		Protocol: aztables.SASProtocolHTTPSandHTTP, StartTime: now.Add(-time.Minute), ExpiryTime: now.Add(time.Hour),
		Permissions: perms.String(), Services: "t",
		ResourceTypes: aztables.AccountSASResourceTypes{Service: true, Container: true, Object: true}.String(),
	}.Sign(cred)
	require.NoError(t, err)
	return q.Encode()
}

func TestSharedAccessSignature(t *testing.T) {
	ctx := context.Background()
	srv := tabulatest.NewInProcess(t, nil)
	full := accountSAS(t, srv, aztables.AccountSASPermissions{Read: true, Write: true, Add: true, Create: true,
		Update: true, Delete: true, List: true})

	// By URL, and by a connection string naming its TableEndpoint.
	byURL, err := remote.DialSAS(srv.URL+"?"+full, inProcess(t, srv))
	require.NoError(t, err)
	byConn, err := remote.Dial("AccountName="+tabulatest.AccountName+";SharedAccessSignature="+full+
		";TableEndpoint="+srv.URL, inProcess(t, srv))
	require.NoError(t, err)

	tbl, err := byURL.CreateTable(ctx, "ViaSAS")
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r", Properties: tabula.Properties{"N": tabula.Int32(1)}})
	require.NoError(t, err)
	got, err := byConn.Table("ViaSAS").Get(ctx, "p", "r")
	require.NoError(t, err)
	assert.Equal(t, tabula.Properties{"N": tabula.Int32(1)}, got.Properties)

	// A read-only signature reads and is refused writes, with the service's code.
	readOnly, err := remote.DialSAS(srv.URL+"?"+accountSAS(t, srv, aztables.AccountSASPermissions{Read: true, List: true}), inProcess(t, srv))
	require.NoError(t, err)
	_, err = readOnly.Table("ViaSAS").Get(ctx, "p", "r")
	require.NoError(t, err)
	_, err = readOnly.Table("ViaSAS").Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "s"})
	var te *tabula.Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "AuthorizationPermissionMismatch", te.Code)
	assert.Equal(t, http.StatusForbidden, te.StatusCode)
	assert.ErrorIs(t, err, &tabula.Error{Code: "AuthorizationPermissionMismatch"}, "errors.Is matches by code")
}

func TestSharedKeyWrongKey(t *testing.T) {
	srv := tabulatest.NewInProcess(t, nil)
	c, err := remote.Dial("DefaultEndpointsProtocol=http;AccountName="+tabulatest.AccountName+
		";AccountKey=d3Jvbmcga2V5;TableEndpoint="+srv.URL, inProcess(t, srv))
	require.NoError(t, err, "Dial sends nothing")
	_, err = c.ListTables(context.Background(), tabula.TableQuery{})
	var te *tabula.Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "AuthenticationFailed", te.Code)
	assert.Equal(t, http.StatusForbidden, te.StatusCode)
	assert.NotEmpty(t, te.Detail, "tabula serve says why in X-Tabula-Error-Detail")
}

func TestDialRefusesBadConnectionString(t *testing.T) {
	_, err := remote.Dial("not a connection string", nil)
	assert.ErrorIs(t, err, tabula.ErrInvalidInput)
}

// staticToken is a TokenCredential that hands out one token and counts the requests.
type staticToken struct{ calls int }

func (s *staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	s.calls++
	return azcore.AccessToken{Token: "tok", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// recorder remembers the Authorization header of each request it passes on.
type recorder struct {
	next policy.Transporter
	mu   sync.Mutex
	auth []string
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	r.mu.Unlock()
	return r.next.Do(req)
}

// TestTokenCredential checks that a token credential signs requests with its bearer token
// (over HTTPS, the only way the SDK sends one). tabula serve knows only Shared Key and SAS,
// so it refuses the token as the service refuses a token it cannot validate, and the
// refusal comes back as a *tabula.Error.
func TestTokenCredential(t *testing.T) {
	srv := tabulatest.NewInProcess(t, nil)
	tls := httptest.NewTLSServer(srv.Handler)
	t.Cleanup(tls.Close)
	rec := &recorder{next: tls.Client()}
	cred := &staticToken{}
	c, err := remote.DialToken(tls.URL+"/"+tabulatest.AccountName+"/", cred, &remote.Options{ClientOptions: azcore.ClientOptions{
		Transport: rec, Retry: policy.RetryOptions{MaxRetries: -1}}})
	require.NoError(t, err)
	_, err = c.ListTables(context.Background(), tabula.TableQuery{})
	var te *tabula.Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "AuthenticationFailed", te.Code)
	assert.Equal(t, []string{"Bearer tok"}, rec.auth)
	assert.Equal(t, 1, cred.calls)
}

// TestTransportFailure checks that an error that is not the service's is not dressed up as
// one.
func TestTransportFailure(t *testing.T) {
	c, err := remote.Dial("DefaultEndpointsProtocol=http;AccountName=a;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:1/a/",
		&remote.Options{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	require.NoError(t, err)
	_, err = c.Table("Nope").Get(context.Background(), "p", "r")
	require.Error(t, err)
	var te *tabula.Error
	assert.False(t, errors.As(err, &te), "a refused connection is not a service error: %v", err)
	var ue *url.Error
	assert.ErrorAs(t, err, &ue, "the transport's error is kept")
}

// A future action kind that the engine knows and this client does not is refused before
// anything is sent, with the failing index; a kind no one knows is InvalidInput, as on the
// engine.
func TestUnknownActionKind(t *testing.T) {
	tbl := newTable(t, "Kinds")
	_, err := tbl.SubmitTransaction(context.Background(), []tabula.Action{
		tabula.InsertAction(tabula.Entity{PartitionKey: "p", RowKey: "a"}),
		{Kind: tabula.ActionKind(42), Entity: tabula.Entity{PartitionKey: "p", RowKey: "b"}},
	})
	var txe *tabula.TransactionError
	require.ErrorAs(t, err, &txe)
	assert.Equal(t, 1, txe.Index)
	assert.ErrorIs(t, err, tabula.ErrInvalidInput)
}

// The plan is unknown remotely, and says so.
func TestPlanUnavailable(t *testing.T) {
	tbl := newTable(t, "Plans")
	page, err := tbl.Query(context.Background(), tabula.Query{Filter: "PartitionKey eq 'p'"})
	require.NoError(t, err)
	assert.Equal(t, tabula.PlanUnavailable, page.Plan.Kind)
	assert.Equal(t, tabula.PlanUnavailable, page.Plan.ServiceKind)
}

func TestPlanUnavailableString(t *testing.T) {
	assert.Equal(t, "Unavailable", tabula.PlanUnavailable.String())
}
