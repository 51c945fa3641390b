package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var certLine = regexp.MustCompile(`make your client trust it\): (\S+)`)

// trusting returns SDK options whose HTTP client trusts only the certificate in file.
func trusting(t *testing.T, file string) *aztables.ClientOptions {
	t.Helper()
	certPEM, err := os.ReadFile(file)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM), "the certificate file holds a PEM certificate")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(client.CloseIdleConnections)
	return &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: client}}
}

// roundTrip creates a table, writes an entity and reads it back.
func roundTrip(t *testing.T, svc *aztables.ServiceClient, table string) {
	t.Helper()
	ctx := context.Background()
	c := svc.NewClient(table)
	_, err := c.CreateTable(ctx, nil)
	require.NoError(t, err)
	e, _ := json.Marshal(map[string]any{"PartitionKey": "p", "RowKey": "r", "V": "secure"})
	_, err = c.AddEntity(ctx, e, nil)
	require.NoError(t, err)
	got, err := c.GetEntity(ctx, "p", "r", nil)
	require.NoError(t, err)
	assert.Contains(t, string(got.Value), `"V":"secure"`)
}

// --self-signed serves HTTPS with a certificate for 127.0.0.1 written where the banner
// says, and the Go SDK, trusting that file alone, works through the connection string.
func TestServeSelfSignedHTTPS(t *testing.T) {
	certFile := filepath.Join(t.TempDir(), "tabula.pem")
	r := start(t, "--addr", "127.0.0.1:0", "--in-memory", "--self-signed", "--cert", certFile)
	assert.Contains(t, r.connStr, "DefaultEndpointsProtocol=https;")
	assert.Contains(t, r.connStr, "TableEndpoint=https://127.0.0.1:")
	assert.Contains(t, r.out.String(), "over https on 127.0.0.1:")
	m := certLine.FindStringSubmatch(r.out.String())
	require.NotNil(t, m, r.out.String())
	assert.Equal(t, certFile, m[1])

	svc, err := aztables.NewServiceClientFromConnectionString(r.connStr, trusting(t, certFile))
	require.NoError(t, err)
	roundTrip(t, svc, "Secure")

	// A client that trusts only the system's roots refuses the server.
	plain, err := aztables.NewServiceClientFromConnectionString(r.connStr, &aztables.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	require.NoError(t, err)
	_, err = plain.NewClient("Secure").GetEntity(context.Background(), "p", "r", nil)
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknown)
	r.shutdown(t)
}

// --cert and --key serve a certificate made elsewhere: here, by the self-signed mode of an
// earlier run, whose key file a test writes by hand.
func TestServeCertAndKey(t *testing.T) {
	dir := t.TempDir()
	cert, certPEM, err := selfSignedCert(time.Now())
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	require.NoError(t, err)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))

	r := start(t, "--addr", "127.0.0.1:0", "--in-memory", "--cert", certFile, "--key", keyFile, "--silent")
	svc, err := aztables.NewServiceClientFromConnectionString(r.connStr, trusting(t, certFile))
	require.NoError(t, err)
	roundTrip(t, svc, "Given")
	r.shutdown(t)

	var out, errs strings.Builder
	code := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--in-memory", "--cert", keyFile, "--key", certFile}, &out, &errs)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs.String(), "tabula: loading --cert and --key:")
}

// fakeCredential is an azcore.TokenCredential that mints an unsigned token of Entra ID's
// shape, as a managed identity's would look, and records the scopes asked for.
type fakeCredential struct {
	mu     sync.Mutex
	scopes []string
	aud    string
}

func (f *fakeCredential) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	f.mu.Lock()
	f.scopes = append(f.scopes, o.Scopes...)
	f.mu.Unlock()
	now := time.Now()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	token := enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(map[string]any{
		"aud": f.aud, "iss": "https://sts.windows.net/00000000-0000-0000-0000-000000000000/",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}) + ".bm90LXZlcmlmaWVk"
	return azcore.AccessToken{Token: token, ExpiresOn: now.Add(time.Hour)}, nil
}

// With --oauth basic, code that authenticates with a token credential (azidentity's
// DefaultAzureCredential, a managed identity) works against Tabula over HTTPS; a token for
// another resource is refused.
func TestServeBearerTokenThroughSDK(t *testing.T) {
	dir := t.TempDir()
	r := start(t, "--addr", "127.0.0.1:0", "--data", dir, "--self-signed", "--oauth", "basic")
	certFile := filepath.Join(dir, "tabula-cert.pem")
	assert.Contains(t, r.out.String(), "make your client trust it): "+certFile+"\n")
	endpoint := strings.TrimSuffix(regexp.MustCompile(`TableEndpoint=(\S+);`).FindStringSubmatch(r.connStr)[1], ";")

	cred := &fakeCredential{aud: "https://storage.azure.com"}
	svc, err := aztables.NewServiceClient(endpoint, cred, trusting(t, certFile))
	require.NoError(t, err)
	roundTrip(t, svc, "Tokens")
	cred.mu.Lock()
	assert.Contains(t, cred.scopes, "https://storage.azure.com/.default")
	cred.mu.Unlock()

	wrong := &fakeCredential{aud: "https://vault.azure.net"}
	opts := trusting(t, certFile)
	opts.Retry.MaxRetries = -1
	svc, err = aztables.NewServiceClient(endpoint, wrong, opts)
	require.NoError(t, err)
	_, err = svc.NewClient("Tokens").GetEntity(context.Background(), "p", "r", nil)
	var re *azcore.ResponseError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, http.StatusForbidden, re.StatusCode)
	assert.Equal(t, "AuthenticationFailed", re.ErrorCode)
	r.shutdown(t)
}
