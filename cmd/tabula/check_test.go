package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dgraph-io/badger/v4"

	"github.com/tabuladb/tabula"
)

// tabula check passes a healthy directory, fails a damaged one and names the damage, and
// refuses a directory that does not exist rather than creating it.
func TestCheckCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	tbl, err := db.CreateTable(ctx, "Movies")
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, tabula.Entity{PartitionKey: "p", RowKey: "r"})
	require.NoError(t, err)
	require.NoError(t, db.Close())

	check := func(args ...string) (int, string, string) {
		var out, errs bytes.Buffer
		code := run(ctx, append([]string{"check"}, args...), &out, &errs)
		return code, out.String(), errs.String()
	}
	code, out, _ := check("--data", dir)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "no problem found")

	missing := filepath.Join(t.TempDir(), "missing")
	code, _, errs := check("--data", missing)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "no such file or directory")
	_, err = os.Stat(missing)
	assert.True(t, os.IsNotExist(err), "check created the directory")

	code, _, _ = check()
	assert.Equal(t, 2, code, "no --data")

	// Damage the engine's own data, not Badger's files: the table-ID counter rewound below
	// the table's ID, so the next table would reuse it.
	require.NoError(t, rewindTableIDCounter(dir))
	code, out, _ = check("--data", dir)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "problem: table-ID counter")
}

// rewindTableIDCounter sets the table-ID counter (the metadata key "m" "nextTableID") of the
// database in dir to 0, with Badger directly.
func rewindTableIDCounter(dir string) error {
	bdb, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		return err
	}
	err = bdb.Update(func(tx *badger.Txn) error {
		return tx.Set([]byte("mnextTableID"), make([]byte, 8))
	})
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	return err
}
