package tabula

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Owners keep their namespaces across reopens whatever order they are named in; a DB that
// recorded none assigns the first owner the root namespace, and says whether it held data.
func TestAccountNamespaces(t *testing.T) {
	bothStores(t, func(t *testing.T) {
		ctx := context.Background()
		db := openStore(t, nil)
		_, err := db.CreateTable(ctx, "Before")
		require.NoError(t, err)
		names := func(m map[string]*Namespace) map[string]string {
			out := map[string]string{}
			for owner, ns := range m {
				out[owner] = ns.Name()
			}
			return out
		}
		got, legacy, err := db.AccountNamespaces(ctx, []string{"b", "a"})
		require.NoError(t, err)
		assert.True(t, legacy, "the DB held a table and recorded no owner")
		assert.Equal(t, map[string]string{"b": "", "a": "a"}, names(got))

		db = reopenStore(t, db)
		for _, owners := range [][]string{{"a", "b"}, {"a"}, {"c", "b"}} {
			got, legacy, err = db.AccountNamespaces(ctx, owners)
			require.NoError(t, err)
			assert.False(t, legacy)
			want := map[string]string{}
			for _, o := range owners {
				want[o] = map[string]string{"a": "a", "b": "", "c": "c"}[o]
			}
			assert.Equal(t, want, names(got), "%v", owners)
		}

		fresh := openStore(t, nil)
		got, legacy, err = fresh.AccountNamespaces(ctx, []string{"x", "y"})
		require.NoError(t, err)
		assert.False(t, legacy, "an empty DB has nothing to assign")
		assert.Equal(t, map[string]string{"x": "", "y": "y"}, names(got))
	})
}

// A new database on a disk below the reserve serves every owner it is given, and records
// them, as it served them, at the first start that may write. (Nothing was written in
// between: the order of the owners decides nothing until one holds data.)
func TestAccountNamespacesOnAFullDisk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	full := func() (uint64, error) { return 1 << 20, nil }
	db, err := Open(dir, &Options{freeSpace: full})
	require.NoError(t, err)
	got, _, err := db.AccountNamespaces(ctx, []string{"first", "second"})
	require.NoError(t, err, "a full disk is a reason to refuse writes, not to refuse to serve")
	assert.Equal(t, "", got["first"].Name())
	assert.Equal(t, "second", got["second"].Name())
	_, err = db.CreateTable(ctx, "Movies")
	require.ErrorIs(t, err, ErrDiskFull)
	require.NoError(t, db.Close())

	db, err = Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	got, _, err = db.AccountNamespaces(ctx, []string{"first", "second"})
	require.NoError(t, err)
	assert.Equal(t, "", got["first"].Name(), "recorded now as it was served then")
	assert.Equal(t, "second", got["second"].Name())
	got, _, err = db.AccountNamespaces(ctx, []string{"second", "first"})
	require.NoError(t, err)
	assert.Equal(t, "", got["first"].Name(), "recorded: the order no longer matters")
}
