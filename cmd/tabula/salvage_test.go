package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// A database whose MANIFEST is damaged does not open; tabula check says which file and
// what to do, tabula salvage copies everything into a new directory without touching the
// old one, and the new database passes tabula check.
func TestSalvageCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	tbl, err := db.CreateTable(ctx, "Movies")
	require.NoError(t, err)
	for _, rk := range []string{"a", "b", "c"} {
		_, err = tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: rk, Properties: tabula.Properties{"Title": tabula.String("t" + rk)}})
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())
	manifest := filepath.Join(dir, "MANIFEST")
	data, err := os.ReadFile(manifest)
	require.NoError(t, err)
	data[12] ^= 0x40 // in the first change set's checksum
	require.NoError(t, os.WriteFile(manifest, data, 0o644))
	before := treeHash(t, dir)

	cmd := func(args ...string) (int, string, string) {
		var out, errs bytes.Buffer
		code := run(ctx, args, &out, &errs)
		return code, out.String(), errs.String()
	}
	code, out, _ := cmd("check", "--data", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "MANIFEST is damaged")
	assert.Contains(t, out, "tabula salvage --data "+dir)

	to := filepath.Join(t.TempDir(), "new")
	code, out, errs := cmd("salvage", "--data", dir, "--to", to)
	require.Equal(t, 0, code, out+errs)
	assert.Contains(t, out, "3 entities copied")
	assert.Equal(t, before, treeHash(t, dir), "salvage wrote to the damaged directory")

	code, out, _ = cmd("check", "--data", to)
	assert.Equal(t, 0, code, out)
	code, _, errs = cmd("salvage", "--data", dir, "--to", to)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "not empty")

	db, err = tabula.Open(to, nil)
	require.NoError(t, err)
	defer db.Close()
	e, err := db.Table("Movies").Get(ctx, "p", "b")
	require.NoError(t, err)
	assert.Equal(t, tabula.String("tb"), e.Properties["Title"])
}

func treeHash(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		sums[e.Name()] = sha256.Sum256(data)
	}
	return sums
}
