package tabula

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServicePropertiesPersist(t *testing.T) {
	bothStores(t, func(t *testing.T) {
		ctx := context.Background()
		db := openStore(t, nil)
		doc, err := db.Namespace("a").ServiceProperties(ctx)
		require.NoError(t, err)
		require.Nil(t, doc)
		require.NoError(t, db.Namespace("a").SetServiceProperties(ctx, []byte("<a/>")))
		require.NoError(t, db.Namespace("").SetServiceProperties(ctx, []byte("<root/>")))
		db = reopenStore(t, db)
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
