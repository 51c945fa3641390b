package conformance_test

import (
	"os"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/tabulatest"
	"github.com/tabuladb/tabula/tabulatest/conformance"
)

// EnvConnectionString names the variable that points the suite at any table service, such
// as Azurite or a storage account:
//
//	TABULA_CONFORMANCE_CONNECTION_STRING='DefaultEndpointsProtocol=https;AccountName=…;AccountKey=…' \
//		go test ./tabulatest/conformance -run TestRemoteEndpoint
//
// The suite creates and deletes its own tables there, named conf…, list…, Life….
const EnvConnectionString = "TABULA_CONFORMANCE_CONNECTION_STRING"

func TestEmbeddedInMemory(t *testing.T) {
	conformance.Run(t, func(t *testing.T) tabula.ServiceAPI {
		db, err := tabula.OpenInMemory(nil)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close()) })
		return tabula.Embedded(db)
	})
}

func TestEmbeddedOnDisk(t *testing.T) {
	conformance.Run(t, func(t *testing.T) tabula.ServiceAPI {
		db, err := tabula.Open(t.TempDir(), nil)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close()) })
		return tabula.Embedded(db)
	})
}

// noRetries makes the SDK report every refusal at once, as the engine does.
var noRetries = azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}

func TestRemoteInProcess(t *testing.T) {
	conformance.Run(t, func(t *testing.T) tabula.ServiceAPI {
		srv := tabulatest.NewInProcess(t, nil)
		opts := noRetries
		opts.Transport = srv.Transport()
		c, err := remote.Dial(srv.ConnectionString(), &remote.Options{ClientOptions: opts})
		require.NoError(t, err)
		return c
	})
}

// TestRemoteSAS runs the suite with an account shared access signature in place of the key.
func TestRemoteSAS(t *testing.T) {
	conformance.Run(t, func(t *testing.T) tabula.ServiceAPI {
		srv := tabulatest.NewInProcess(t, nil)
		cred, err := aztables.NewSharedKeyCredential(tabulatest.AccountName, tabulatest.AccountKey)
		require.NoError(t, err)
		sas, err := aztables.AccountSASSignatureValues{
			Protocol: aztables.SASProtocolHTTPSandHTTP, ExpiryTime: time.Now().UTC().Add(time.Hour), Services: "t",
			Permissions: aztables.AccountSASPermissions{Read: true, Write: true, Delete: true, List: true,
				Add: true, Create: true, Update: true}.String(),
			ResourceTypes: aztables.AccountSASResourceTypes{Service: true, Container: true, Object: true}.String(),
		}.Sign(cred)
		require.NoError(t, err)
		opts := noRetries
		opts.Transport = srv.Transport()
		c, err := remote.Dial("AccountName="+tabulatest.AccountName+";SharedAccessSignature="+sas.Encode()+
			";TableEndpoint="+srv.URL, &remote.Options{ClientOptions: opts})
		require.NoError(t, err)
		return c
	})
}

func TestRemoteLoopback(t *testing.T) {
	conformance.Run(t, func(t *testing.T) tabula.ServiceAPI {
		srv := tabulatest.NewServer(t, nil)
		c, err := remote.Dial(srv.ConnectionString(), &remote.Options{ClientOptions: noRetries})
		require.NoError(t, err)
		return c
	})
}

func TestRemoteEndpoint(t *testing.T) {
	conn := os.Getenv(EnvConnectionString)
	if conn == "" {
		t.Skip("set " + EnvConnectionString + " to a connection string to run the suite against that service")
	}
	c, err := remote.Dial(conn, nil)
	require.NoError(t, err)
	conformance.Run(t, func(t *testing.T) tabula.ServiceAPI { return c })
}

// The suite in the Cosmos DB for Table flavour (tabula.FlavorCosmos): an embedded DB in
// memory and on disk, and `tabula serve --flavor cosmos` through package remote, in process
// and over loopback.
func TestEmbeddedCosmos(t *testing.T) {
	for _, onDisk := range []bool{false, true} {
		t.Run(map[bool]string{false: "InMemory", true: "OnDisk"}[onDisk], func(t *testing.T) {
			conformance.RunFlavor(t, tabula.FlavorCosmos, func(t *testing.T) tabula.ServiceAPI {
				opts := &tabula.Options{Flavor: tabula.FlavorCosmos}
				db, err := tabula.OpenInMemory(opts)
				if onDisk {
					db, err = tabula.Open(t.TempDir(), opts)
				}
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, db.Close()) })
				return tabula.Embedded(db)
			})
		})
	}
}

func TestRemoteCosmos(t *testing.T) {
	opts := &tabula.Options{Flavor: tabula.FlavorCosmos}
	t.Run("InProcess", func(t *testing.T) {
		conformance.RunFlavor(t, tabula.FlavorCosmos, func(t *testing.T) tabula.ServiceAPI {
			srv := tabulatest.NewInProcess(t, opts)
			client := noRetries
			client.Transport = srv.Transport()
			c, err := remote.Dial(srv.ConnectionString(), &remote.Options{ClientOptions: client})
			require.NoError(t, err)
			return c
		})
	})
	t.Run("Loopback", func(t *testing.T) {
		conformance.RunFlavor(t, tabula.FlavorCosmos, func(t *testing.T) tabula.ServiceAPI {
			srv := tabulatest.NewServer(t, opts)
			c, err := remote.Dial(srv.ConnectionString(), &remote.Options{ClientOptions: noRetries})
			require.NoError(t, err)
			return c
		})
	})
}

// EnvCosmosConnectionString names the variable that points the suite, in the Cosmos
// flavour, at a Cosmos DB for Table account, to check the flavour against the real thing:
//
//	TABULA_CONFORMANCE_COSMOS_CONNECTION_STRING='DefaultEndpointsProtocol=https;AccountName=…;AccountKey=…;TableEndpoint=https://….table.cosmos.azure.com:443/' \
//		go test ./tabulatest/conformance -run TestRemoteCosmosEndpoint
const EnvCosmosConnectionString = "TABULA_CONFORMANCE_COSMOS_CONNECTION_STRING"

func TestRemoteCosmosEndpoint(t *testing.T) {
	conn := os.Getenv(EnvCosmosConnectionString)
	if conn == "" {
		t.Skip("set " + EnvCosmosConnectionString + " to a Cosmos DB for Table connection string to run the suite against it")
	}
	c, err := remote.Dial(conn, nil)
	require.NoError(t, err)
	conformance.RunFlavor(t, tabula.FlavorCosmos, func(t *testing.T) tabula.ServiceAPI { return c })
}
