package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

const testAdminKey = "admin-secret"

// otherAccount is a second configured account for the tests of scoping.
var otherAccount = server.Account{Name: "otheracct", Keys: []string{"b3RoZXJrZXk="}}

// adminServer is a running server with the development account and otherAccount, and
// testAdminKey as its admin key.
type adminServer struct {
	t   *testing.T
	s   *server.Server
	db  *tabula.DB
	url string
}

func newAdminServer(t *testing.T) *adminServer {
	t.Helper()
	db, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	s, err := server.New(db, &server.Options{Accounts: []server.Account{server.DevelopmentAccount(), otherAccount}, AdminKey: testAdminKey})
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return &adminServer{t: t, s: s, db: db, url: hs.URL}
}

// call sends a management API request as user with password ("" user: no credential) and
// returns the status and body.
func (a *adminServer) call(user, password, method, resource, body string) (int, string) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.url+server.ReservedPrefix+"api/"+resource, strings.NewReader(body))
	require.NoError(a.t, err)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return resp.StatusCode, string(b)
}

func (a *adminServer) admin(method, resource, body string) (int, string) {
	a.t.Helper()
	return a.call(server.AdminUser, testAdminKey, method, resource, body)
}

type createdAccount struct {
	Name             string `json:"name"`
	Key              string `json:"key"`
	ConnectionString string `json:"connectionString"`
}

func (a *adminServer) create(body string) createdAccount {
	a.t.Helper()
	status, resp := a.admin("POST", "accounts", body)
	require.Equal(a.t, http.StatusCreated, status, resp)
	var c createdAccount
	require.NoError(a.t, json.Unmarshal([]byte(resp), &c))
	return c
}

// client is an SDK client on a connection string, retrying nothing.
func sdkClient(t *testing.T, connStr string) *aztables.ServiceClient {
	t.Helper()
	svc, err := aztables.NewServiceClientFromConnectionString(connStr, &aztables.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	require.NoError(t, err)
	return svc
}

func tableNames(t *testing.T, svc *aztables.ServiceClient) []string {
	t.Helper()
	names := []string{}
	pager := svc.NewListTablesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		for _, tb := range page.Tables {
			names = append(names, *tb.Name)
		}
	}
	return names
}

func errorCode(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}

// A created account is fresh, empty and isolated: its connection string works with an SDK,
// it sees no other account's tables, and none sees its.
func TestCreatedAccountIsFreshAndIsolated(t *testing.T) {
	a := newAdminServer(t)
	dev := sdkClient(t, server.DevelopmentAccount().ConnectionString(a.url))
	_, err := dev.CreateTable(ctx, "DevOnly", nil)
	require.NoError(t, err)

	one := a.create("")
	assert.Regexp(t, `^[a-z0-9]{3,24}$`, one.Name)
	assert.Equal(t, server.Account{Name: one.Name, Keys: []string{one.Key}}.ConnectionString(a.url), one.ConnectionString)
	assert.Contains(t, one.ConnectionString, "TableEndpoint="+a.url+"/"+one.Name+"/;")
	two := a.create(`{"name":"second2"}`)
	assert.Equal(t, "second2", two.Name)
	assert.NotEqual(t, one.Key, two.Key)

	c1, c2 := sdkClient(t, one.ConnectionString), sdkClient(t, two.ConnectionString)
	assert.Empty(t, tableNames(t, c1))
	_, err = c1.CreateTable(ctx, "Orders", nil)
	require.NoError(t, err)
	_, err = c1.NewClient("Orders").AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r","Secret":"one's"}`), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"Orders"}, tableNames(t, c1))
	assert.Empty(t, tableNames(t, c2))
	assert.Equal(t, []string{"DevOnly"}, tableNames(t, dev))
	_, err = c2.NewClient("Orders").GetEntity(ctx, "p", "r", nil)
	assert.Equal(t, "TableNotFound", errorCode(err))

	// One account's key does not sign for another.
	forged := sdkClient(t, server.Account{Name: two.Name, Keys: []string{one.Key}}.ConnectionString(a.url))
	_, err = forged.CreateTable(ctx, "Nope", nil)
	assert.Equal(t, "AuthenticationFailed", errorCode(err))
}

func TestCreateAccountRefusals(t *testing.T) {
	a := newAdminServer(t)
	a.create(`{"name":"taken1"}`)
	for _, tc := range []struct {
		name, user, password, body string
		status                     int
		message                    string
	}{
		{"no credential", "", "", ``, 401, "sign in"},
		{"wrong admin key", server.AdminUser, "guess", ``, 401, "sign in"},
		{"an account's key", server.DevelopmentAccountName, server.DevelopmentAccountKey, ``, 403, "only the administrator"},
		{"another account's key", otherAccount.Name, otherAccount.Keys[0], `{"name":"mine1"}`, 403, "only the administrator"},
		{"taken", server.AdminUser, testAdminKey, `{"name":"taken1"}`, 409, "exists"},
		{"configured name", server.AdminUser, testAdminKey, `{"name":"otheracct"}`, 409, "exists"},
		{"too short", server.AdminUser, testAdminKey, `{"name":"ab"}`, 400, "3 to 24 lowercase letters and digits"},
		{"too long", server.AdminUser, testAdminKey, `{"name":"` + strings.Repeat("a", 25) + `"}`, 400, "3 to 24"},
		{"upper case", server.AdminUser, testAdminKey, `{"name":"Abc"}`, 400, "3 to 24"},
		{"underscore", server.AdminUser, testAdminKey, `{"name":"_tabula"}`, 400, "3 to 24"},
		{"hyphen", server.AdminUser, testAdminKey, `{"name":"a-secondary"}`, 400, "3 to 24"},
		{"name not a string", server.AdminUser, testAdminKey, `{"name":12345}`, 400, "must be a string"},
		{"unknown field", server.AdminUser, testAdminKey, `{"nom":"abc"}`, 400, "is not a field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := a.s.Accounts()
			status, body := a.call(tc.user, tc.password, "POST", "accounts", tc.body)
			assert.Equal(t, tc.status, status, body)
			assert.Contains(t, body, tc.message)
			assert.Equal(t, before, a.s.Accounts(), "a refused create changes nothing")
		})
	}
}

// GET api/accounts lists names, never keys, and only to the administrator.
func TestListAccounts(t *testing.T) {
	a := newAdminServer(t)
	c := a.create(`{"name":"listed1"}`)
	status, body := a.admin("GET", "accounts", "")
	require.Equal(t, 200, status, body)
	assert.JSONEq(t, `{"accounts":[{"name":"devstoreaccount1"},{"name":"otheracct"},{"name":"listed1"}]}`, body)
	assert.NotContains(t, body, c.Key)
	status, _ = a.call(otherAccount.Name, otherAccount.Keys[0], "GET", "accounts", "")
	assert.Equal(t, 403, status)
	status, _ = a.admin("PUT", "accounts", "{}")
	assert.Equal(t, 405, status)
}

// DELETE api/accounts/{name} drops the account and its data: tables, entities, ACLs and
// service properties; its key stops working, and an account created again under the name
// starts empty.
func TestDeleteAccountDropsItsData(t *testing.T) {
	a := newAdminServer(t)
	for _, by := range []string{"admin", "itself"} {
		t.Run(by, func(t *testing.T) {
			c := a.create(`{"name":"gone` + by + `"}`)
			svc := sdkClient(t, c.ConnectionString)
			_, err := svc.CreateTable(ctx, "Orders", nil)
			require.NoError(t, err)
			orders := svc.NewClient("Orders")
			_, err = orders.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil)
			require.NoError(t, err)
			id, start := "policy1", "2026-01-01T00:00:00Z"
			_, err = orders.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{TableACL: []*aztables.SignedIdentifier{{ID: &id,
				AccessPolicy: &aztables.AccessPolicy{Start: mustTime(t, start), Expiry: mustTime(t, "2027-01-01T00:00:00Z"), Permission: ptr("r")}}}})
			require.NoError(t, err)
			_, err = svc.SetProperties(ctx, aztables.ServiceProperties{Cors: []*aztables.CorsRule{{AllowedOrigins: ptr("https://example.com"),
				AllowedMethods: ptr("GET"), AllowedHeaders: ptr("*"), ExposedHeaders: ptr("*"), MaxAgeInSeconds: ptr(int32(60))}}}, nil)
			require.NoError(t, err)

			user, password := server.AdminUser, testAdminKey
			if by == "itself" {
				user, password = c.Name, c.Key
			}
			status, body := a.call(user, password, "DELETE", "accounts/"+c.Name, "")
			require.Equal(t, 204, status, body)
			assert.Empty(t, body)

			_, err = svc.CreateTable(ctx, "Again", nil)
			assert.Equal(t, "AuthenticationFailed", errorCode(err), "the deleted account's key no longer works")
			status, _ = a.call(c.Name, c.Key, "GET", "report", "")
			assert.Equal(t, 401, status)

			again := a.create(`{"name":"` + c.Name + `"}`)
			svc2 := sdkClient(t, again.ConnectionString)
			assert.Empty(t, tableNames(t, svc2), "an account created again under the name starts empty")
			props, err := svc2.GetProperties(ctx, nil)
			require.NoError(t, err)
			assert.Empty(t, props.Cors)
			_, err = svc2.CreateTable(ctx, "Orders", nil)
			require.NoError(t, err)
			acl, err := svc2.NewClient("Orders").GetAccessPolicy(ctx, nil)
			require.NoError(t, err)
			assert.Empty(t, acl.SignedIdentifiers)
			_, err = svc2.NewClient("Orders").GetEntity(ctx, "p", "r", nil)
			assert.Equal(t, "ResourceNotFound", errorCode(err))
		})
	}
}

func TestDeleteAccountRefusals(t *testing.T) {
	a := newAdminServer(t)
	c := a.create(`{"name":"victim1"}`)
	other := a.create(`{"name":"attacker1"}`)
	for _, tc := range []struct {
		name, user, password, method, resource string
		status                                 int
	}{
		{"no credential", "", "", "DELETE", "accounts/victim1", 401},
		{"another created account", other.Name, other.Key, "DELETE", "accounts/victim1", 403},
		{"a configured account", server.DevelopmentAccountName, server.DevelopmentAccountKey, "DELETE", "accounts/victim1", 403},
		{"unknown, as another account", other.Name, other.Key, "DELETE", "accounts/nobody1", 403},
		{"unknown", server.AdminUser, testAdminKey, "DELETE", "accounts/nobody1", 404},
		{"a configured account by the admin", server.AdminUser, testAdminKey, "DELETE", "accounts/otheracct", 403},
		{"a configured account by itself", otherAccount.Name, otherAccount.Keys[0], "DELETE", "accounts/otheracct", 403},
		{"GET one", server.AdminUser, testAdminKey, "GET", "accounts/victim1", 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := a.call(tc.user, tc.password, tc.method, tc.resource, "")
			assert.Equal(t, tc.status, status, body)
			assert.Len(t, a.s.Accounts(), 4, "nothing was deleted")
		})
	}
	_, err := sdkClient(t, c.ConnectionString).CreateTable(ctx, "Still", nil)
	assert.NoError(t, err)
}

// Accounts created and deleted while other accounts' requests run: no race (go test -race),
// no request of one account sees another's tables, and every account ends as it should.
func TestAccountsChangeWhileServing(t *testing.T) {
	a := newAdminServer(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Go(func() {
			for i := range 10 {
				name := fmt.Sprintf("w%dn%d", w, i)
				status, body := a.admin("POST", "accounts", `{"name":"`+name+`"}`)
				if status != 201 {
					errs <- fmt.Errorf("create %s: %d %s", name, status, body)
					return
				}
				var c createdAccount
				_ = json.Unmarshal([]byte(body), &c)
				svc := sdkClient(t, c.ConnectionString)
				if _, err := svc.CreateTable(ctx, "T"+name, nil); err != nil {
					errs <- err
					return
				}
				pager := svc.NewListTablesPager(nil)
				page, err := pager.NextPage(ctx)
				if err != nil || len(page.Tables) != 1 || *page.Tables[0].Name != "T"+name {
					errs <- fmt.Errorf("account %s sees %v tables (%v)", name, len(page.Tables), err)
					return
				}
				if i%2 == 0 {
					if status, body := a.call(c.Name, c.Key, "DELETE", "accounts/"+c.Name, ""); status != 204 {
						errs <- fmt.Errorf("delete %s: %d %s", name, status, body)
						return
					}
				}
				_, _ = a.admin("GET", "accounts", "")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Len(t, a.s.Accounts(), 2+4*5)
}

// Accounts created through the API live as long as the server: what they left in an on-disk
// directory when the server stopped without deleting them is dropped by the next server.
func TestCreatedAccountsLeftoversDroppedAtStart(t *testing.T) {
	dir := t.TempDir()
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	s, err := server.New(db, &server.Options{AdminKey: testAdminKey})
	require.NoError(t, err)
	c, err := s.CreateAccount("leftover1")
	require.NoError(t, err)
	_, err = s.Namespace(c.Name).CreateTable(ctx, "Orders")
	require.NoError(t, err)
	_, err = db.CreateTable(ctx, "Kept")
	require.NoError(t, err)
	names, err := db.Namespaces(ctx)
	require.NoError(t, err)
	require.Len(t, names, 1)
	require.NoError(t, db.Close())

	db, err = tabula.Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	s, err = server.New(db, &server.Options{AdminKey: testAdminKey})
	require.NoError(t, err)
	assert.Len(t, s.Accounts(), 1)
	names, err = db.Namespaces(ctx)
	require.NoError(t, err)
	assert.Empty(t, names)
	tables, err := db.ListTables(ctx, tabula.TableQuery{})
	require.NoError(t, err)
	require.Len(t, tables.Tables, 1)
}

func ptr[T any](v T) *T { return &v }

func mustTime(t *testing.T, s string) *time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return &v
}

// The administrator steers and reads every account at once, or one with ?account=NAME; an
// account cannot name another.
func TestAdminSteersEveryAccount(t *testing.T) {
	a := newAdminServer(t)
	dev := sdkClient(t, server.DevelopmentAccount().ConnectionString(a.url))
	other := sdkClient(t, otherAccount.ConnectionString(a.url))
	for svc, table := range map[*aztables.ServiceClient]string{dev: "DevTable", other: "OtherTable"} {
		_, err := svc.CreateTable(ctx, table, nil)
		require.NoError(t, err)
	}
	write := func(svc *aztables.ServiceClient, table string) error {
		_, err := svc.NewClient(table).UpsertEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil)
		return err
	}

	status, body := a.admin("GET", "report", "")
	require.Equal(t, 200, status, body)
	assert.Contains(t, body, `"name":"devstoreaccount1/DevTable"`)
	assert.Contains(t, body, `"name":"otheracct/OtherTable"`)
	status, body = a.admin("GET", "report?format=svg", "")
	require.Equal(t, 200, status, body)
	assert.Contains(t, body, "otheracct/OtherTable")
	status, body = a.admin("GET", "report?account=otheracct", "")
	require.Equal(t, 200, status, body)
	assert.Contains(t, body, `"name":"OtherTable"`)
	assert.NotContains(t, body, "DevTable")

	status, body = a.admin("PUT", "faults", `{"serverBusy":1}`)
	require.Equal(t, 200, status, body)
	assert.Equal(t, "ServerBusy", errorCode(write(dev, "DevTable")))
	assert.Equal(t, "ServerBusy", errorCode(write(other, "OtherTable")))
	status, _ = a.admin("DELETE", "faults", "")
	require.Equal(t, 200, status)
	assert.NoError(t, write(dev, "DevTable"))

	status, body = a.admin("PUT", "faults?account=otheracct", `{"serverBusy":1}`)
	require.Equal(t, 200, status, body)
	assert.NoError(t, write(dev, "DevTable"))
	assert.Equal(t, "ServerBusy", errorCode(write(other, "OtherTable")))
	status, body = a.call(otherAccount.Name, otherAccount.Keys[0], "GET", "faults", "")
	require.Equal(t, 200, status)
	assert.Contains(t, body, `"serverBusy":1,`)
	status, _ = a.admin("PUT", "faults?account=otheracct", `{"serverBusy":0}`)
	require.Equal(t, 200, status)

	status, body = a.admin("GET", "explain?table=otheracct/OtherTable&filter=PartitionKey%20eq%20'p'", "")
	assert.Equal(t, 200, status, body)
	status, body = a.admin("GET", "explain?table=OtherTable&account=otheracct", "")
	assert.Equal(t, 200, status, body)
	status, body = a.admin("GET", "explain?table=OtherTable", "")
	assert.Equal(t, 400, status, body)

	for _, tc := range []struct {
		user, password, resource string
		status                   int
	}{
		{otherAccount.Name, otherAccount.Keys[0], "limits?account=devstoreaccount1", 403},
		{otherAccount.Name, otherAccount.Keys[0], "report?account=devstoreaccount1", 403},
		{otherAccount.Name, otherAccount.Keys[0], "explain?account=devstoreaccount1&table=DevTable", 403},
		{otherAccount.Name, otherAccount.Keys[0], "limits?account=otheracct", 200},
		{server.AdminUser, testAdminKey, "limits?account=nobody", 404},
		{server.AdminUser, otherAccount.Keys[0], "limits", 401},
		{server.DevelopmentAccountName, testAdminKey, "limits", 401},
	} {
		status, body := a.call(tc.user, tc.password, "GET", tc.resource, "")
		assert.Equal(t, tc.status, status, "%s as %s: %s", tc.resource, tc.user, body)
	}
	for _, user := range []string{server.AdminUser, otherAccount.Name} {
		password := testAdminKey
		if user != server.AdminUser {
			password = otherAccount.Keys[0]
		}
		req, err := http.NewRequest("GET", a.url+server.ReservedPrefix+"console/", nil)
		require.NoError(t, err)
		req.SetBasicAuth(user, password)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode, "the console for %s", user)
	}
}

// A second Server on a DB another serves (as NewConsoleHandler makes) leaves the first's
// created accounts alone.
func TestSecondServerKeepsLiveCreatedAccounts(t *testing.T) {
	a := newAdminServer(t)
	c := a.create(`{"name":"alive1"}`)
	_, err := sdkClient(t, c.ConnectionString).CreateTable(ctx, "Orders", nil)
	require.NoError(t, err)
	_, err = server.NewConsoleHandler(a.db, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"Orders"}, tableNames(t, sdkClient(t, c.ConnectionString)))
}
