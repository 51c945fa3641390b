package tabula

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAccessPolicies(t *testing.T) {
	bothStores(t, func(t *testing.T) {
		ctx := context.Background()
		db := openStore(t, nil)
		tbl, err := db.Namespace("acct").CreateTable(ctx, "Acl")
		require.NoError(t, err)
		start := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
		want := []AccessPolicy{
			{ID: "reader", Start: start, Expiry: start.Add(time.Hour), Permission: "r"},
			{ID: "open-ended"},
		}
		require.NoError(t, tbl.SetAccessPolicies(ctx, want))
		db = reopenStore(t, db)
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
