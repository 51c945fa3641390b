package server_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/server"
	"github.com/tabuladb/tabula/tabulatest"
)

// entityKeys lists a table's entities as "PartitionKey/RowKey" through the SDK.
func entityKeys(t *testing.T, c *aztables.Client) []string {
	t.Helper()
	var out []string
	keys := "PartitionKey,RowKey"
	pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: &keys})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		for _, e := range page.Entities {
			var v struct{ PartitionKey, RowKey string }
			require.NoError(t, json.Unmarshal(e, &v))
			out = append(out, v.PartitionKey+"/"+v.RowKey)
		}
	}
	return out
}

// A client writes, the server's state is saved, the client writes more, and the restore
// brings back exactly the saved state, as often as asked.
func TestSnapshotsSaveRestore(t *testing.T) {
	srv := tabulatest.NewInProcess(t, nil)
	h := srv.Handler
	svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(),
		&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.Transport()}})
	require.NoError(t, err)
	movies := svc.NewClient("Movies")
	_, err = movies.CreateTable(ctx, nil)
	require.NoError(t, err)
	_, err = movies.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"fixture"}`), nil)
	require.NoError(t, err)

	info, err := h.SaveSnapshot(ctx, "fixture")
	require.NoError(t, err)
	assert.Equal(t, "fixture", info.Name)

	_, err = movies.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"test"}`), nil)
	require.NoError(t, err)
	_, err = movies.DeleteEntity(ctx, "p", "fixture", nil)
	require.NoError(t, err)
	_, err = svc.CreateTable(ctx, "Scratch", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"p/test"}, entityKeys(t, movies))

	for range 2 {
		require.NoError(t, h.RestoreSnapshot(ctx, "fixture"))
		assert.Equal(t, []string{"p/fixture"}, entityKeys(t, movies))
		_, err = svc.NewClient("Scratch").GetEntity(ctx, "p", "r", nil)
		wantCode(t, err, 404, "TableNotFound")
		_, err = movies.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"again"}`), nil)
		require.NoError(t, err)
	}
	require.NoError(t, srv.DB.Check(ctx))

	_, err = h.SaveSnapshot(ctx, "other")
	require.NoError(t, err)
	var names []string
	for _, s := range h.Snapshots() {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"fixture", "other"}, names)
	require.NoError(t, h.DeleteSnapshot("other"))
	assert.ErrorIs(t, h.DeleteSnapshot("other"), server.ErrSnapshotNotFound)
	assert.ErrorIs(t, h.RestoreSnapshot(ctx, "other"), server.ErrSnapshotNotFound)
	for _, bad := range []string{"", "a/b", "with space", string(make([]byte, 64))} {
		_, err := h.SaveSnapshot(ctx, bad)
		assert.Error(t, err, "%q", bad)
	}
}

// On disk the server refuses to save a state, which it could not restore at once.
func TestSnapshotsOnDiskRefused(t *testing.T) {
	srv := onDiskServer(t, nil)
	_, err := srv.Handler.SaveSnapshot(ctx, "fixture")
	assert.True(t, errors.Is(err, server.ErrSnapshotsOnDisk), "%v", err)
	assert.Empty(t, srv.Handler.Snapshots())
}

// Over HTTP with the administrator's credential, as a suite in any language resets its
// server: an SDK client writes, the state is saved, the client writes more (and an account
// is created, another deleted), and the restore brings back the saved state, accounts
// included. An account's credential is refused.
func TestSnapshotsOverHTTP(t *testing.T) {
	a := newAdminServer(t)
	dev := server.DevelopmentAccount()
	svc := sdkClient(t, dev.ConnectionString(a.url))
	movies := svc.NewClient("Movies")
	_, err := movies.CreateTable(ctx, nil)
	require.NoError(t, err)
	_, err = movies.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"fixture"}`), nil)
	require.NoError(t, err)
	kept := a.create(`{"name":"keptacct"}`)
	_, err = sdkClient(t, kept.ConnectionString).CreateTable(ctx, "Kept", nil)
	require.NoError(t, err)

	status, body := a.call(dev.Name, dev.Keys[0], "POST", "snapshots/fixture", "")
	assert.Equal(t, 403, status, body)
	status, body = a.admin("POST", "snapshots/fixture", "")
	require.Equal(t, 201, status, body)
	assert.Contains(t, body, `"name":"fixture"`)

	_, err = movies.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"test"}`), nil)
	require.NoError(t, err)
	_, err = movies.DeleteEntity(ctx, "p", "fixture", nil)
	require.NoError(t, err)
	later := a.create(`{"name":"lateracct"}`)
	status, body = a.admin("DELETE", "accounts/keptacct", "")
	require.Equal(t, 204, status, body)

	status, body = a.admin("POST", "snapshots/fixture/restore", "")
	require.Equal(t, 204, status, body)
	assert.Equal(t, []string{"p/fixture"}, entityKeys(t, movies))
	assert.Equal(t, []string{"Kept"}, tableNames(t, sdkClient(t, kept.ConnectionString)), "a deleted account comes back, with its key and data")
	_, err = sdkClient(t, later.ConnectionString).CreateTable(ctx, "Later", nil)
	assert.Error(t, err, "an account created since is gone")
	status, body = a.admin("GET", "accounts", "")
	require.Equal(t, 200, status)
	assert.Contains(t, body, "keptacct")
	assert.NotContains(t, body, "lateracct")
	require.NoError(t, a.db.Check(ctx))

	status, body = a.admin("GET", "snapshots", "")
	assert.Equal(t, 200, status)
	assert.Contains(t, body, `"name":"fixture"`)
	status, _ = a.admin("DELETE", "snapshots/fixture", "")
	assert.Equal(t, 204, status)
	status, _ = a.admin("POST", "snapshots/fixture/restore", "")
	assert.Equal(t, 404, status)
}
