package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/tabulatest"
)

// The walk-through must keep running as the engine changes, in memory and on disk (twice,
// so the reopen path is exercised too).
func TestWalkThrough(t *testing.T) {
	require.NoError(t, run(context.Background(), ""))
	dir := t.TempDir()
	require.NoError(t, run(context.Background(), dir))
	require.NoError(t, run(context.Background(), dir))
}

var etags = regexp.MustCompile(`W/"datetime'[^']*'"`)

// With -remote, the same code prints the same lines against tabula serve, ETags aside.
func TestWalkThroughRemote(t *testing.T) {
	ctx := context.Background()
	var embedded, served bytes.Buffer
	require.NoError(t, runEmbedded(ctx, &embedded, ""))

	srv := tabulatest.NewInProcess(t, nil)
	opts := &remote.Options{ClientOptions: azcore.ClientOptions{Transport: srv.Transport()}}
	require.NoError(t, runRemote(ctx, &served, srv.ConnectionString(), opts))
	assert.Contains(t, embedded.String(), "412 UpdateConditionNotSatisfied")
	assert.Equal(t, etags.ReplaceAllString(embedded.String(), "ETAG"), etags.ReplaceAllString(served.String(), "ETAG"))

	// Run again on the same service: the table exists and is started over, as on disk.
	served.Reset()
	require.NoError(t, runRemote(ctx, &served, srv.ConnectionString(), opts))
	assert.Contains(t, served.String(), "table Movies already exists")
}
