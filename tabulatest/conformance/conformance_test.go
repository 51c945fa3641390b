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

// TestEmbeddedCosmos runs the suite against an embedded DB of the Cosmos DB for Table flavour.
func TestEmbeddedCosmos(t *testing.T) {
	conformance.RunFlavor(t, tabula.FlavorCosmos, func(t *testing.T) tabula.ServiceAPI {
		db, err := tabula.OpenInMemory(&tabula.Options{Flavor: tabula.FlavorCosmos})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, db.Close()) })
		return tabula.Embedded(db)
	})
}

// TestRemoteCosmos runs the suite through package remote against `tabula serve --flavor
// cosmos`, in process.
func TestRemoteCosmos(t *testing.T) {
	conformance.RunFlavor(t, tabula.FlavorCosmos, func(t *testing.T) tabula.ServiceAPI {
		srv := tabulatest.NewInProcess(t, &tabula.Options{Flavor: tabula.FlavorCosmos})
		opts := noRetries
		opts.Transport = srv.Transport()
		c, err := remote.Dial(srv.ConnectionString(), &remote.Options{ClientOptions: opts})
		require.NoError(t, err)
		return c
	})
}
