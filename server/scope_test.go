package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

// twoAccounts is a running server with two accounts, each with a table of its own holding a
// hot PartitionKey of its own.
type twoAccounts struct {
	url      string
	accounts [2]server.Account
	tables   [2]string // each account's table
	hotKeys  [2]string // each account's hot PartitionKey
	clients  [2]*aztables.ServiceClient
}

func newTwoAccounts(t *testing.T) *twoAccounts {
	t.Helper()
	db, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	a := &twoAccounts{accounts: [2]server.Account{server.DevelopmentAccount(), otherAccount},
		tables: [2]string{"DevSecrets", "OtherSecrets"}, hotKeys: [2]string{"devhotkey", "otherhotkey"}}
	s, err := server.New(db, &server.Options{Accounts: a.accounts[:]})
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	a.url = hs.URL
	for i, acct := range a.accounts {
		a.clients[i] = sdkClient(t, acct.ConnectionString(hs.URL))
		_, err := a.clients[i].CreateTable(ctx, a.tables[i], nil)
		require.NoError(t, err)
		for range 3 {
			require.NoError(t, a.write(i))
		}
	}
	// Observe, so that the heat report tracks hot keys, for both accounts (each its own).
	for i := range a.accounts {
		status, body := a.manage(t, i, "PUT", "limits", `{"mode":"observe","partitionRate":0.001,"partitionBurst":1}`)
		require.Equal(t, 200, status, body)
		require.NoError(t, a.write(i))
		require.NoError(t, a.write(i)) // over the burst: observed as throttled, and hot
	}
	return a
}

var rowSeq int

// write upserts an entity in account i's table, under its hot key.
func (a *twoAccounts) write(i int) error {
	rowSeq++
	_, err := a.clients[i].NewClient(a.tables[i]).UpsertEntity(ctx,
		[]byte(`{"PartitionKey":"`+a.hotKeys[i]+`","RowKey":"r`+strings.Repeat("x", rowSeq%7)+`","N":1}`), nil)
	return err
}

// manage calls the management API as account i.
func (a *twoAccounts) manage(t *testing.T, i int, method, resource, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, a.url+server.ReservedPrefix+"api/"+resource, strings.NewReader(body))
	require.NoError(t, err)
	req.SetBasicAuth(a.accounts[i].Name, a.accounts[i].Keys[0])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// Each endpoint of the management API, signed in as one account, reads and steers that
// account alone: in both directions, the other account's tables, hot keys, faults, limits,
// query switches and counters stay out of reach.
func TestManagementAPIIsScopedToTheAccount(t *testing.T) {
	for _, dir := range []struct{ self, other int }{{0, 1}, {1, 0}} {
		a := newTwoAccounts(t)
		self, other := dir.self, dir.other
		t.Run(a.accounts[self].Name+" signed in", func(t *testing.T) {
			t.Run("report", func(t *testing.T) {
				status, body := a.manage(t, self, "GET", "report", "")
				require.Equal(t, 200, status, body)
				assert.Contains(t, body, a.tables[self])
				assert.Contains(t, body, a.hotKeys[self])
				assert.NotContains(t, body, a.tables[other], "another account's table names")
				assert.NotContains(t, body, a.hotKeys[other], "another account's hot PartitionKeys")
			})
			t.Run("report as SVG", func(t *testing.T) {
				status, body := a.manage(t, self, "GET", "report?format=svg", "")
				require.Equal(t, 200, status, body)
				assert.Contains(t, body, a.tables[self])
				assert.NotContains(t, body, a.tables[other])
				assert.NotContains(t, body, a.hotKeys[other])
			})
			t.Run("explain", func(t *testing.T) {
				status, body := a.manage(t, self, "GET", "explain?table="+a.tables[other]+"&filter=N%20eq%201", "")
				assert.Equal(t, 404, status, "another account's table is not there: %s", body)
				status, body = a.manage(t, self, "GET", "explain?table="+a.tables[self]+"&filter=N%20eq%201", "")
				assert.Equal(t, 200, status, body)
			})
			t.Run("faults", func(t *testing.T) {
				status, body := a.manage(t, self, "PUT", "faults", `{"serverBusy":1}`)
				require.Equal(t, 200, status, body)
				assert.Equal(t, "ServerBusy", errorCode(a.write(self)), "the account's own requests fault")
				assert.NoError(t, a.write(other), "another account's requests do not")
				_, err := a.clients[other].CreateTable(ctx, "Fresh", nil)
				assert.NoError(t, err)
				_, body = a.manage(t, other, "GET", "faults", "")
				assert.Contains(t, body, `"serverBusy":0,`)
				status, _ = a.manage(t, self, "DELETE", "faults", "")
				require.Equal(t, 200, status)
				assert.NoError(t, a.write(self))
			})
			t.Run("limits", func(t *testing.T) {
				status, body := a.manage(t, self, "PUT", "limits", `{"mode":"enforce","partitionRate":0.001,"partitionBurst":1,"accountRate":0.001,"accountBurst":1}`)
				require.Equal(t, 200, status, body)
				_ = a.write(self)
				assert.Equal(t, "ServerBusy", errorCode(a.write(self)), "the account's own requests are throttled")
				for range 5 {
					require.NoError(t, a.write(other), "another account's are not")
				}
				_, body = a.manage(t, other, "GET", "limits", "")
				assert.Contains(t, body, `"mode":"observe","partitionRate":0.001,`)
				status, _ = a.manage(t, self, "PUT", "limits", `{"mode":"off"}`)
				require.Equal(t, 200, status)
			})
			t.Run("queries", func(t *testing.T) {
				status, body := a.manage(t, self, "PUT", "queries", `{"forbidFullScans":true}`)
				require.Equal(t, 200, status, body)
				scan := func(i int) error {
					_, err := a.clients[i].NewClient(a.tables[i]).NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("N eq 1")}).NextPage(ctx)
					return err
				}
				assert.Error(t, scan(self), "the account's own full scans are refused")
				assert.NoError(t, scan(other), "another account's are not")
				_, body = a.manage(t, other, "GET", "queries", "")
				assert.Contains(t, body, `"forbidFullScans":false`)
			})
			t.Run("reset", func(t *testing.T) {
				offered := func(i int) float64 {
					_, body := a.manage(t, i, "GET", "report", "")
					var rep struct{ Offered float64 }
					require.NoError(t, json.Unmarshal([]byte(body), &rep))
					return rep.Offered
				}
				before := offered(other)
				require.NotZero(t, before)
				status, _ := a.manage(t, self, "POST", "reset", "")
				require.Equal(t, 204, status)
				assert.Zero(t, offered(self))
				assert.Equal(t, before, offered(other), "another account's counters stay")
			})
		})
	}
}
