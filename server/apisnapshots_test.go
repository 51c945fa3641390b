package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// The saved states' routes, as the administrator and as an account: status, body, and what
// each does to the data.
func TestServeSnapshots(t *testing.T) {
	ctx := context.Background()
	db, err := tabula.OpenInMemory(nil)
	require.NoError(t, err)
	defer db.Close()
	s, err := New(db, nil)
	require.NoError(t, err)
	movies, err := db.CreateTable(ctx, "Movies")
	require.NoError(t, err)

	do := func(admin bool, method, path string) (int, string) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(method, ReservedPrefix+"api/snapshots"+path, nil)
		s.serveSnapshots(w, r, admin, strings.TrimPrefix(path, "/"))
		return w.Code, w.Body.String()
	}
	code, body := do(false, http.MethodPost, "/fixture")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "administrator")

	code, body = do(true, http.MethodPost, "/fixture")
	require.Equal(t, http.StatusCreated, code, body)
	var info SnapshotInfo
	require.NoError(t, json.Unmarshal([]byte(body), &info))
	assert.Equal(t, "fixture", info.Name)
	assert.False(t, info.Saved.IsZero())

	_, err = movies.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"})
	require.NoError(t, err)
	code, body = do(true, http.MethodPost, "/fixture/restore")
	require.Equal(t, http.StatusNoContent, code, body)
	_, err = movies.Get(ctx, "p", "r")
	assert.ErrorIs(t, err, tabula.ErrResourceNotFound)

	code, body = do(true, http.MethodGet, "")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"name":"fixture"`)
	code, _ = do(true, http.MethodGet, "/fixture")
	assert.Equal(t, http.StatusOK, code)

	for _, c := range []struct {
		method, path string
		code         int
	}{
		{http.MethodGet, "/missing", http.StatusNotFound},
		{http.MethodPost, "/missing/restore", http.StatusNotFound},
		{http.MethodDelete, "/missing", http.StatusNotFound},
		{http.MethodGet, "/fixture/restore", http.StatusMethodNotAllowed},
		{http.MethodPost, "/fixture/other", http.StatusNotFound},
		{http.MethodPut, "/fixture", http.StatusMethodNotAllowed},
		{http.MethodPost, "", http.StatusMethodNotAllowed},
		{http.MethodPost, "/bad%20name", http.StatusBadRequest},
		{http.MethodPost, "/" + strings.Repeat("x", 64), http.StatusBadRequest},
		{http.MethodDelete, "/fixture", http.StatusNoContent},
		{http.MethodDelete, "/fixture", http.StatusNotFound},
	} {
		code, body := do(true, c.method, c.path)
		assert.Equal(t, c.code, code, "%s %s: %s", c.method, c.path, body)
	}

	for i := range MaxSnapshots {
		_, err := s.SaveSnapshot(ctx, "s"+strings.Repeat("x", i%50)+string(rune('a'+i/50)))
		require.NoError(t, err)
	}
	code, body = do(true, http.MethodPost, "/onetoomany")
	assert.Equal(t, http.StatusConflict, code, body)
	code, body = do(true, http.MethodPost, "/sa")
	assert.Equal(t, http.StatusCreated, code, "replacing one is not one too many: %s", body)
}

func TestServeSnapshotsOnDisk(t *testing.T) {
	db, err := tabula.Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	s, err := New(db, nil)
	require.NoError(t, err)
	w := httptest.NewRecorder()
	s.serveSnapshots(w, httptest.NewRequest(http.MethodPost, ReservedPrefix+"api/snapshots/fixture", nil), true, "fixture")
	assert.Equal(t, http.StatusConflict, w.Code)
	assert.Contains(t, w.Body.String(), "in-memory")
}
