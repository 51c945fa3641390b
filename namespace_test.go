package tabula

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Namespaces are separate sets of tables: what one creates, lists, writes or deletes, no other
// (and not the root) sees, and everything survives a reopen.
func TestNamespacesAreIsolated(t *testing.T) {
	bothStores(t, func(t *testing.T) {
		ctx := context.Background()
		db := openStore(t, nil)
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

		db = reopenStore(t, db)
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

// Drop empties a namespace (tables, entities, access policies, service properties) and
// touches no other; Namespaces lists the namespaces that hold anything.
func TestNamespaceDrop(t *testing.T) {
	bothStores(t, func(t *testing.T) {
		ctx := context.Background()
		db := openStore(t, nil)
		a, b := db.Namespace("alice"), db.Namespace("bob")
		for _, ns := range []*Namespace{a, b, db.Namespace("")} {
			for i := range dropBatch + 2 { // more than one of Drop's transactions
				if ns != a && i > 1 {
					break
				}
				name := fmt.Sprintf("Tab%d", i)
				_, err := ns.CreateTable(ctx, name)
				require.NoError(t, err)
				_, err = ns.Table(name).Insert(ctx, Entity{PartitionKey: "p", RowKey: "r"})
				require.NoError(t, err)
			}
			require.NoError(t, ns.Table("Tab1").SetAccessPolicies(ctx, []AccessPolicy{{ID: "p1", Permission: "r"}}))
			require.NoError(t, ns.SetServiceProperties(ctx, []byte("<props/>")))
		}
		_, err := db.Namespace("carol").CreateTable(ctx, "Only")
		require.NoError(t, err)
		names, err := db.Namespaces(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"alice", "bob", "carol"}, names)

		require.NoError(t, a.Drop(ctx))
		page, err := a.ListTables(ctx, TableQuery{})
		require.NoError(t, err)
		require.Empty(t, page.Tables)
		props, err := a.ServiceProperties(ctx)
		require.NoError(t, err)
		require.Nil(t, props)
		_, err = a.CreateTable(ctx, "Tab1")
		require.NoError(t, err)
		_, err = a.Table("Tab1").Get(ctx, "p", "r")
		require.ErrorIs(t, err, ErrResourceNotFound)
		policies, err := a.Table("Tab1").AccessPolicies(ctx)
		require.NoError(t, err)
		require.Empty(t, policies)
		require.NoError(t, a.Drop(ctx))

		for _, ns := range []*Namespace{b, db.Namespace("")} {
			page, err := ns.ListTables(ctx, TableQuery{})
			require.NoError(t, err)
			require.Len(t, page.Tables, 2)
			_, err = ns.Table("Tab1").Get(ctx, "p", "r")
			require.NoError(t, err)
			policies, err := ns.Table("Tab1").AccessPolicies(ctx)
			require.NoError(t, err)
			require.Len(t, policies, 1)
			props, err := ns.ServiceProperties(ctx)
			require.NoError(t, err)
			require.Equal(t, "<props/>", string(props))
		}
		names, err = db.Namespaces(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"bob", "carol"}, names)
	})
}
