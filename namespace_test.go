package tabula

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Namespaces are separate sets of tables: what one creates, lists, writes or deletes, no other
// (and not the root) sees, and everything survives a reopen.
func TestNamespacesAreIsolated(t *testing.T) {
	storageKinds(t, func(t *testing.T, open func(*Options) *DB, reopen func(*DB) *DB) {
		ctx := context.Background()
		db := open(nil)
		a, b := db.Namespace("alice"), db.Namespace("bob")
		_, err := a.CreateTable(ctx, "Shared")
		require.NoError(t, err)
		_, err = a.Table("Shared").Insert(ctx, Entity{PartitionKey: "p", RowKey: "a"})
		require.NoError(t, err)

		// bob and the root see no table called Shared, and may create their own.
		for _, other := range []*Namespace{b, db.Namespace("")} {
			_, err := other.Table("Shared").Get(ctx, "p", "a")
			require.ErrorIs(t, err, ErrTableNotFound)
			_, err = other.Table("shared").Insert(ctx, Entity{PartitionKey: "p", RowKey: "x"})
			require.ErrorIs(t, err, ErrTableNotFound)
			require.ErrorIs(t, other.DeleteTable(ctx, "Shared"), ErrResourceNotFound)
			page, err := other.ListTables(ctx, TableQuery{})
			require.NoError(t, err)
			require.Empty(t, page.Tables)
		}
		_, err = b.CreateTable(ctx, "SHARED")
		require.NoError(t, err)
		_, err = db.CreateTable(ctx, "Shared")
		require.NoError(t, err)
		_, err = a.CreateTable(ctx, "shared")
		require.ErrorIs(t, err, ErrTableAlreadyExists)
		// A namespace whose name is a prefix of another's shares nothing with it.
		_, err = db.Namespace("ali").CreateTable(ctx, "Other")
		require.NoError(t, err)

		db = reopen(db)
		a, b = db.Namespace("alice"), db.Namespace("bob")
		names := func(n *Namespace) []string {
			var out []string
			for ti, err := range n.Tables(ctx, "") {
				require.NoError(t, err)
				out = append(out, ti.Name)
			}
			return out
		}
		require.Equal(t, []string{"Shared"}, names(a))
		require.Equal(t, []string{"SHARED"}, names(b))
		require.Equal(t, []string{"Shared"}, names(db.Namespace("")))
		require.Equal(t, []string{"Other"}, names(db.Namespace("ali")))
		e, err := a.Table("shared").Get(ctx, "p", "a")
		require.NoError(t, err)
		require.Equal(t, "a", e.RowKey)
		_, err = b.Table("Shared").Get(ctx, "p", "a")
		require.ErrorIs(t, err, ErrResourceNotFound)

		// Deleting bob's table leaves alice's.
		require.NoError(t, b.DeleteTable(ctx, "Shared"))
		_, err = a.Table("Shared").Get(ctx, "p", "a")
		require.NoError(t, err)
	})
}

func TestServicePropertiesPersist(t *testing.T) {
	storageKinds(t, func(t *testing.T, open func(*Options) *DB, reopen func(*DB) *DB) {
		ctx := context.Background()
		db := open(nil)
		doc, err := db.Namespace("a").ServiceProperties(ctx)
		require.NoError(t, err)
		require.Nil(t, doc)
		require.NoError(t, db.Namespace("a").SetServiceProperties(ctx, []byte("<a/>")))
		require.NoError(t, db.Namespace("").SetServiceProperties(ctx, []byte("<root/>")))
		db = reopen(db)
		doc, err = db.Namespace("a").ServiceProperties(ctx)
		require.NoError(t, err)
		require.Equal(t, "<a/>", string(doc))
		doc, err = db.Namespace("").ServiceProperties(ctx)
		require.NoError(t, err)
		require.Equal(t, "<root/>", string(doc))
		doc, err = db.Namespace("b").ServiceProperties(ctx)
		require.NoError(t, err)
		require.Nil(t, doc)
		err = db.Namespace("a").SetServiceProperties(ctx, make([]byte, maxPropertiesSize+1))
		require.ErrorIs(t, err, ErrInvalidInput)
	})
}

func TestAccessPolicies(t *testing.T) {
	storageKinds(t, func(t *testing.T, open func(*Options) *DB, reopen func(*DB) *DB) {
		ctx := context.Background()
		db := open(nil)
		tbl, err := db.Namespace("acct").CreateTable(ctx, "Acl")
		require.NoError(t, err)
		start := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
		want := []AccessPolicy{
			{ID: "reader", Start: start, Expiry: start.Add(time.Hour), Permission: "r"},
			{ID: "open-ended"},
		}
		require.NoError(t, tbl.SetAccessPolicies(ctx, want))
		db = reopen(db)
		tbl = db.Namespace("acct").Table("acl")
		got, err := tbl.AccessPolicies(ctx)
		require.NoError(t, err)
		require.Equal(t, len(want), len(got))
		for i := range want {
			require.Equal(t, want[i].ID, got[i].ID)
			require.Equal(t, want[i].Permission, got[i].Permission)
			require.True(t, want[i].Start.Equal(got[i].Start))
			require.True(t, want[i].Expiry.Equal(got[i].Expiry))
		}

		for _, bad := range [][]AccessPolicy{
			make([]AccessPolicy, MaxAccessPolicies+1),
			{{ID: ""}},
			{{ID: string(make([]byte, MaxAccessPolicyID+1))}},
			{{ID: "x"}, {ID: "x"}},
			{{ID: "x", Permission: "w"}},
		} {
			require.ErrorIs(t, tbl.SetAccessPolicies(ctx, bad), ErrInvalidInput)
		}
		got, err = tbl.AccessPolicies(ctx)
		require.NoError(t, err)
		require.Len(t, got, 2, "a refused set changes nothing")

		require.NoError(t, tbl.SetAccessPolicies(ctx, nil))
		got, err = tbl.AccessPolicies(ctx)
		require.NoError(t, err)
		require.Empty(t, got)

		// A re-created table starts without the old table's policies.
		require.NoError(t, tbl.SetAccessPolicies(ctx, want))
		require.NoError(t, db.Namespace("acct").DeleteTable(ctx, "Acl"))
		_, err = tbl.AccessPolicies(ctx)
		require.True(t, errors.Is(err, ErrTableNotFound))
		_, err = db.Namespace("acct").CreateTable(ctx, "Acl")
		require.NoError(t, err)
		got, err = tbl.AccessPolicies(ctx)
		require.NoError(t, err)
		require.Empty(t, got)
	})
}
