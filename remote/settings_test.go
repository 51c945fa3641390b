package remote_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/tabulatest"
)

// A table's access policies go to the service and come back as the engine holds them:
// times to 100 ns, a policy with nothing but its ID, and none at all.
func TestAccessPolicies(t *testing.T) {
	ctx := context.Background()
	srv := tabulatest.NewInProcess(t, nil)
	c, err := remote.Dial(srv.ConnectionString(), inProcess(t, srv))
	require.NoError(t, err)
	_, err = c.CreateTable(ctx, "Guarded")
	require.NoError(t, err)
	tbl := c.Table("Guarded").(tabula.AccessPoliciesAPI)

	got, err := tbl.AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Empty(t, got)

	want := []tabula.AccessPolicy{
		{ID: "readers", Permission: "r", Expiry: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "all", Permission: "raud", Start: time.Date(2024, 1, 1, 0, 0, 0, 1200, time.UTC),
			Expiry: time.Date(2031, 2, 3, 4, 5, 6, 7_654_300, time.UTC)},
		{ID: "bare"},
	}
	require.NoError(t, tbl.SetAccessPolicies(ctx, want))
	got, err = tbl.AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	stored, err := srv.DB.Table("Guarded").AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, stored, "the engine behind the server holds what was sent")

	require.NoError(t, tbl.SetAccessPolicies(ctx, nil))
	got, err = tbl.AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Empty(t, got, "none removes them all")

	// The service's refusals, with its codes.
	six := make([]tabula.AccessPolicy, 6)
	for i := range six {
		six[i].ID = string(rune('a' + i))
	}
	err = tbl.SetAccessPolicies(ctx, six)
	var te *tabula.Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "InvalidXmlDocument", te.Code)
	assert.Equal(t, http.StatusBadRequest, te.StatusCode)
	assert.Equal(t, "XML specified is not syntactically valid.", te.Message, "read from the service's XML error body")
	_, err = c.Table("Missing").(tabula.AccessPoliciesAPI).AccessPolicies(ctx)
	assert.ErrorIs(t, err, tabula.ErrTableNotFound)

	// Only the account's key may read or set a table's ACL, not a shared access signature.
	sas, err := remote.DialSAS(srv.URL+"?"+accountSAS(t, srv, aztables.AccountSASPermissions{Read: true, Write: true, List: true}), inProcess(t, srv))
	require.NoError(t, err)
	_, err = sas.Table("Guarded").(tabula.AccessPoliciesAPI).AccessPolicies(ctx)
	require.ErrorAs(t, err, &te)
	assert.Equal(t, http.StatusForbidden, te.StatusCode)
}

// The service-properties document travels raw: what Get returns is the stored document,
// without the XML declaration the service puts before it, and what Set sends is the
// caller's bytes.
func TestServiceProperties(t *testing.T) {
	ctx := context.Background()
	srv := tabulatest.NewInProcess(t, nil)
	c, err := remote.Dial(srv.ConnectionString(), inProcess(t, srv))
	require.NoError(t, err)

	// Never set: the service answers its defaults; the engine holds nothing.
	doc, err := c.ServiceProperties(ctx)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(doc, []byte("<StorageServiceProperties>")), "%s", doc)
	assert.Contains(t, string(doc), "<Cors />")

	set := `<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Cors><CorsRule>` +
		`<AllowedOrigins>https://a.example</AllowedOrigins><AllowedMethods>get</AllowedMethods><MaxAgeInSeconds>5</MaxAgeInSeconds>` +
		`<ExposedHeaders></ExposedHeaders><AllowedHeaders></AllowedHeaders></CorsRule></Cors></StorageServiceProperties>`
	require.NoError(t, c.SetServiceProperties(ctx, []byte(set)))
	doc, err = c.ServiceProperties(ctx)
	require.NoError(t, err)
	stored, err := srv.DB.Namespace("").ServiceProperties(ctx)
	require.NoError(t, err)
	assert.Equal(t, string(stored), string(doc), "bit for bit the engine's document")
	assert.Contains(t, string(doc), "<AllowedMethods>GET</AllowedMethods>", "the service's own form of the rule")

	// An element left out keeps its value.
	require.NoError(t, c.SetServiceProperties(ctx, []byte(`<StorageServiceProperties><Logging><Version>1.0</Version>`+
		`<Delete>true</Delete><Read>false</Read><Write>false</Write><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>`+
		`</Logging></StorageServiceProperties>`)))
	doc, err = c.ServiceProperties(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(doc), "<Delete>true</Delete>")
	assert.Contains(t, string(doc), "https://a.example")

	// A document the service refuses, with its code.
	err = c.SetServiceProperties(ctx, []byte(`<StorageServiceProperties><Logging><Version>2.0</Version></Logging></StorageServiceProperties>`))
	var te *tabula.Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "InvalidXmlDocument", te.Code)
	assert.True(t, strings.Contains(te.Detail, "Version"), te.Detail)
}
