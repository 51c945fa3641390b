package remote_test

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/server"
	"github.com/tabuladb/tabula/tabulatest"
)

// countingTransport counts the requests sent, passing each to the real transport (or to an
// in-process server).
type countingTransport struct {
	n    atomic.Int32
	next policy.Transporter
}

func (c *countingTransport) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.Do(r)
}

// UseDevelopmentStorage=true names the development account at 127.0.0.1:10002, as the other
// SDKs take it.
func TestDialDevelopmentStorage(t *testing.T) {
	srv := tabulatest.NewInProcess(t, nil)
	for _, cs := range []string{"UseDevelopmentStorage=true", "UseDevelopmentStorage=true;", " UseDevelopmentStorage=TRUE "} {
		seen := &countingTransport{next: inProcess(t, srv).ClientOptions.Transport}
		opts := &remote.Options{}
		opts.ClientOptions.Transport = policy.Transporter(transportFunc(func(r *http.Request) (*http.Response, error) {
			assert.Equal(t, "127.0.0.1:10002", r.URL.Host, cs)
			assert.Contains(t, r.URL.Path, "/"+server.DevelopmentAccountName, cs)
			return seen.Do(r)
		}))
		c, err := remote.Dial(cs, opts)
		require.NoError(t, err, cs)
		_, err = c.CreateTable(context.Background(), "DevStorage")
		if err != nil {
			assert.ErrorContains(t, err, "TableAlreadyExists", "signed with the development key: %s", cs)
		}
		assert.Equal(t, int32(1), seen.n.Load())
	}
	_, err := remote.Dial("UseDevelopmentStorage=false", nil)
	assert.Error(t, err, "only true stands for the development account")
}

type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// A server that refuses the connection is reported at once, not after the SDK's retries.
func TestDialRefusedIsNotRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	sent := &countingTransport{next: http.DefaultClient}
	opts := &remote.Options{}
	opts.ClientOptions.Transport = sent
	c, err := remote.Dial("DefaultEndpointsProtocol=http;AccountName="+tabulatest.AccountName+";AccountKey="+tabulatest.AccountKey+
		";TableEndpoint=http://"+addr+"/"+tabulatest.AccountName+";", opts)
	require.NoError(t, err)
	_, err = c.CreateTable(context.Background(), "Nowhere")
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Equal(t, int32(1), sent.n.Load(), "one attempt, no retries")
}
