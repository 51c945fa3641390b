package server_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/server"
	"github.com/tabuladb/tabula/tabulatest"
)

// An account named in the host, as on the service and in Azurite's production-style URLs
// (devstoreaccount1.table.localhost), through the Go SDK unchanged: over loopback HTTP with
// every host name dialled to the server, and in process.
func TestSDKAccountInHostName(t *testing.T) {
	const endpoint = "http://devstoreaccount1.table.localhost:10002"
	cred, err := aztables.NewSharedKeyCredential(server.DevelopmentAccountName, server.DevelopmentAccountKey)
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		transport func(t *testing.T) policy.Transporter
	}{
		{"loopback", func(t *testing.T) policy.Transporter {
			srv := tabulatest.NewServer(t, nil)
			addr := serverAddr(t, srv)
			var d net.Dialer
			return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, addr) // *.table.localhost need not resolve here
			}}}
		}},
		{"inprocess", func(t *testing.T) policy.Transporter { return tabulatest.NewInProcess(t, nil).Transport() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tc.transport(t), Retry: policy.RetryOptions{MaxRetries: -1}}}
			svc, err := aztables.NewServiceClientWithSharedKey(endpoint+"/", cred, opts)
			require.NoError(t, err)
			_, err = svc.CreateTable(ctx, "HostStyle", nil)
			require.NoError(t, err)
			c := svc.NewClient("HostStyle")
			_, err = c.AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "N": 1}), nil)
			require.NoError(t, err)

			got, err := c.GetEntity(ctx, "p", "r", nil)
			require.NoError(t, err)
			assert.Contains(t, string(got.Value), `"odata.metadata":"`+endpoint+`/$metadata#HostStyle/@Element"`,
				"links name the account in the host, not in the path")

			batch := []aztables.TransactionAction{
				{ActionType: aztables.TransactionTypeAdd, Entity: marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "b1"})},
				{ActionType: aztables.TransactionTypeUpdateMerge, Entity: marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "r", "M": 2})},
			}
			_, err = c.SubmitTransaction(ctx, batch, nil)
			require.NoError(t, err, "a $batch whose operations name the account in the host")

			pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p'")})
			var keys []string
			for pager.More() {
				page, err := pager.NextPage(ctx)
				require.NoError(t, err)
				for _, e := range page.Entities {
					keys = append(keys, string(e))
				}
			}
			require.Len(t, keys, 2)
			assert.Contains(t, keys[1], `"M":2`)

			// A table SAS on a host-style URL.
			sasURL, err := c.GetTableSASURL(aztables.SASPermissions{Read: true}, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(sasURL, endpoint+"/HostStyle?"), sasURL)
			sasClient, err := aztables.NewClientWithNoCredential(sasURL, opts)
			require.NoError(t, err)
			_, err = sasClient.GetEntity(ctx, "p", "b1", nil)
			assert.NoError(t, err)

			// The secondary, also by host name.
			secondary, err := aztables.NewServiceClientWithSharedKey("http://devstoreaccount1-secondary.table.localhost:10002/", cred, opts)
			require.NoError(t, err)
			_, err = secondary.GetStatistics(ctx, nil)
			assert.NoError(t, err)
			_, err = secondary.NewClient("HostStyle").AddEntity(ctx, marshal(t, map[string]any{"PartitionKey": "p", "RowKey": "no"}), nil)
			wantCode(t, err, http.StatusForbidden, "AuthorizationFailure")

			// A host whose first label is no account is read path-style, as before.
			path, err := aztables.NewServiceClientWithSharedKey("http://tabula.example:10002/devstoreaccount1/", cred, opts)
			require.NoError(t, err)
			_, err = path.NewClient("HostStyle").GetEntity(ctx, "p", "r", nil)
			assert.NoError(t, err)
		})
	}
}

// serverAddr is the host:port a loopback test server listens on.
func serverAddr(t *testing.T, srv *tabulatest.Server) string {
	t.Helper()
	for _, part := range strings.Split(srv.ConnectionString(), ";") {
		if v, ok := strings.CutPrefix(part, "TableEndpoint="); ok {
			u, err := url.Parse(v)
			require.NoError(t, err)
			return u.Host
		}
	}
	t.Fatalf("no TableEndpoint in %s", srv.ConnectionString())
	return ""
}
