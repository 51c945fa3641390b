package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guard bounds how long a test waits for the server to act, so that a server that never
// acts fails the test instead of hanging it. Every limit under test is far shorter, and every
// other limit far longer, so only the limit under test can close a connection in time.
const guard = 20 * time.Second

// serveLimited serves h with limits on a loopback port and returns its address; the server
// is closed when the test ends.
func serveLimited(t *testing.T, h http.Handler, l HTTPLimits, ln net.Listener) string {
	t.Helper()
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
	}
	srv := NewHTTPServer(h, l)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// dial opens a raw connection with the guard as its deadline.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(guard)))
	return c
}

// readUntilClosed reads from c until the server closes it and returns what it sent. It fails
// the test if the guard runs out first: the server held the connection open.
func readUntilClosed(t *testing.T, c io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server still held the connection open after %v; it had sent %q", guard, b)
	}
	return string(b)
}

// slowLimits are limits where everything but the limit under test is far longer than guard.
func slowLimits() HTTPLimits {
	return HTTPLimits{ReadHeaderTimeout: time.Hour, ReadTimeout: time.Hour, WriteTimeout: time.Hour,
		IdleTimeout: time.Hour, BodyStallTimeout: time.Hour, MaxConnections: -1}
}

// readAll is a handler that reads the whole body, as every write operation does, and says
// how much it got.
var readAll = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	_, _ = io.WriteString(w, "got "+strconv.Itoa(len(b))+" bytes")
})

// A request that declares a body and never sends it is cut off, whether the handler reads it
// (an authenticated write) or refuses the request without reading it (a request that fails
// authentication, whose body net/http then discards), even though ReadTimeout is an hour.
func TestStalledBodyIsCutOff(t *testing.T) {
	h := newHarness(t, nil)
	for _, tc := range []struct {
		name    string
		handler http.Handler
		want    string
	}{
		{"read by the handler", readAll, "reading the body"},
		{"refused unread", h.s, "403"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := slowLimits()
			l.BodyStallTimeout = 100 * time.Millisecond
			addr := serveLimited(t, tc.handler, l, nil)
			c := dial(t, addr)
			_, err := io.WriteString(c, "POST /devstoreaccount1/Tables HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
				"Content-Length: 100\r\n\r\n{\"TableName\":")
			require.NoError(t, err)
			got := readUntilClosed(t, c)
			assert.Contains(t, got, tc.want)
		})
	}
}

// deadlineRecorder is a ResponseWriter whose connection deadlines are recorded, as
// http.ResponseController sets them.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	reads, writes []time.Time
}

func (d *deadlineRecorder) SetReadDeadline(t time.Time) error {
	d.reads = append(d.reads, t)
	return nil
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.writes = append(d.writes, t)
	return nil
}

// tickingBody delivers its bytes one a read, each arriving a step after the last on clock.
type tickingBody struct {
	left  int
	clock *time.Time
	step  time.Duration
}

func (b *tickingBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	*b.clock = b.clock.Add(b.step)
	b.left--
	p[0] = 'a'
	return 1, nil
}

func (b *tickingBody) Close() error { return nil }

// A body that keeps arriving is not cut off, though it takes far longer than the stall limit:
// before every read the guard moves the read deadline to the stall limit from now, never past
// the whole request's ReadTimeout, and once the body is in it gives the response its
// WriteTimeout. (The clock is the guard's; the connection's deadlines are recorded.)
func TestSlowBodyThatKeepsArrivingIsServed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		whole time.Duration // ReadTimeout
		cap   bool          // whether the whole request's deadline caps the last reads
	}{
		{"no whole-request limit", 0, false},
		{"within ReadTimeout", time.Hour, false},
		{"capped by ReadTimeout", 1200 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testNow
			l := HTTPLimits{BodyStallTimeout: time.Second, ReadTimeout: tc.whole, WriteTimeout: time.Minute}
			g := &stallGuard{limits: l, now: func() time.Time { return clock }}
			var got int
			g.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, err := io.ReadAll(r.Body)
				assert.NoError(t, err)
				got = len(b)
			})
			const chunks = 15 // 4.5 s in all, the stall limit is 1 s
			r := httptest.NewRequest(http.MethodPost, "/x", nil)
			r.Body = &tickingBody{left: chunks, clock: &clock, step: 300 * time.Millisecond}
			w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			g.ServeHTTP(w, r)

			assert.Equal(t, chunks, got, "the whole body was read")
			require.Len(t, w.reads, 1+chunks+1, "armed before the handler and before every read")
			for i, d := range w.reads {
				want := testNow.Add(time.Duration(i) * 300 * time.Millisecond).Add(time.Second)
				if i > 0 {
					want = want.Add(-300 * time.Millisecond) // armed before the read that moves the clock
				}
				if tc.whole > 0 && want.After(testNow.Add(tc.whole)) {
					want = testNow.Add(tc.whole)
				}
				assert.Equal(t, want, d, "read deadline %d", i)
			}
			last := w.reads[len(w.reads)-1]
			if tc.cap {
				assert.Equal(t, testNow.Add(tc.whole), last)
			} else {
				assert.True(t, last.After(testNow.Add(3*time.Second)), "the deadline moved on with the body: %v", last.Sub(testNow))
			}
			assert.Equal(t, []time.Time{clock.Add(time.Minute)}, w.writes, "the response's WriteTimeout starts when the body is in")
		})
	}
}

// Once the body is in, the stall limit no longer applies: a handler that works longer than it
// keeps its request's context. (net/http cancels the context when its watch for the client
// going away fails, and that watch reads the connection under whatever read deadline the
// guard leaves once the body has ended.)
func TestWorkAfterTheBodyOutlastsTheStallLimit(t *testing.T) {
	l := slowLimits()
	l.BodyStallTimeout = 50 * time.Millisecond
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			_, _ = io.WriteString(w, "canceled")
		case <-time.After(6 * l.BodyStallTimeout): // the work
			_, _ = io.WriteString(w, "finished")
		}
	})
	addr := serveLimited(t, h, l, nil)
	c := dial(t, addr)
	_, err := io.WriteString(c, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "finished", string(b))
}

// An idle keep-alive connection is closed after IdleTimeout, though ReadTimeout is an hour.
func TestIdleKeepAliveIsClosed(t *testing.T) {
	l := slowLimits()
	l.IdleTimeout = 100 * time.Millisecond
	addr := serveLimited(t, readAll, l, nil)
	c := dial(t, addr)
	br := bufio.NewReader(c)
	// Both requests are sent at once, so the second is there when the first is answered
	// however slowly the test runs: the connection is kept alive between them and goes idle
	// only after the second.
	_, err := io.WriteString(c, strings.Repeat("GET /x HTTP/1.1\r\nHost: x\r\n\r\n", 2))
	require.NoError(t, err)
	for range 2 {
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.False(t, resp.Close, "kept alive")
	}
	assert.Empty(t, readUntilClosed(t, br), "closed without a word")
}

// The cap refuses the connection past MaxConnections with 503 ServerBusy at once when none of
// the open ones may be closed for it, and admits one again when a connection closes.
func TestConnectionCapRefusesClearly(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := newLimitListener(raw, 2)
	ln.now = func() time.Time { return testNow } // no connection ever waits long enough to be closed for another
	released := make(chan struct{}, 8)
	ln.released = func() { released <- struct{}{} }
	addr := serveLimited(t, readAll, slowLimits(), ln)

	get := func(c net.Conn, br *bufio.Reader) *http.Response {
		t.Helper()
		_, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		return resp
	}
	var held []net.Conn
	for range 2 {
		c := dial(t, addr)
		resp := get(c, bufio.NewReader(c))
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		held = append(held, c)
	}

	third := dial(t, addr)
	br := bufio.NewReader(third)
	resp := get(third, br)
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, 503, resp.StatusCode)
	assert.True(t, resp.Close, "Connection: close")
	assert.Contains(t, string(body), `"code":"ServerBusy"`)
	assert.Contains(t, resp.Header.Get("X-Tabula-Error-Detail"), "2 connections open, its limit (MaxConnections), all of them busy")
	assert.Empty(t, readUntilClosed(t, br), "then closed")

	require.NoError(t, held[0].Close())
	select {
	case <-released:
	case <-time.After(guard):
		t.Fatal("the server never closed its side of a connection the client closed")
	}
	fourth := dial(t, addr)
	resp = get(fourth, bufio.NewReader(fourth))
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, "a slot is free again")
}

// At the cap, the connection that has waited longest on its client, here a stalled body, is
// closed to make room for a new one; one whose request the server is working on is not.
func TestConnectionCapMakesRoomFromStalledConnections(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := newLimitListener(raw, 2)
	var clock atomic.Int64
	clock.Store(testNow.UnixNano())
	ln.now = func() time.Time { return time.Unix(0, clock.Load()) }

	working, release, stalled := make(chan struct{}), make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/work":
			close(working)
			<-release
		case "/stall":
			_, _ = r.Body.Read(make([]byte, 1))
			close(stalled)
			_, _ = io.ReadAll(r.Body)
		}
		_, _ = io.WriteString(w, "done "+r.URL.Path)
	})
	addr := serveLimited(t, h, slowLimits(), ln)

	busy := dial(t, addr)
	_, err = io.WriteString(busy, "GET /work HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	<-working
	slow := dial(t, addr)
	_, err = io.WriteString(slow, "POST /stall HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	<-stalled

	clock.Add(int64(2 * evictAfter))
	third := dial(t, addr)
	_, err = io.WriteString(third, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, string(b))
	assert.NotContains(t, readUntilClosed(t, slow), "done", "the stalled connection was closed for the new one")

	close(release)
	resp, err = http.ReadResponse(bufio.NewReader(busy), nil)
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "done /work", string(b), "the connection the server was working on is untouched")
}

// Over TLS the refusal is spoken in TLS, so that an HTTPS client reads it.
func TestConnectionCapRefusesOverTLS(t *testing.T) {
	ts := httptest.NewUnstartedServer(readAll)
	ts.StartTLS() // only for its certificate and client
	cfg := ts.TLS.Clone()
	client := ts.Client()
	ts.Close()

	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l, ln := newLimitTLSListener(raw, 1, cfg)
	l.now = func() time.Time { return testNow }
	addr := serveLimited(t, readAll, slowLimits(), ln)

	held, err := tls.Dial("tcp", addr, client.Transport.(*http.Transport).TLSClientConfig)
	require.NoError(t, err)
	defer held.Close()
	require.NoError(t, held.Handshake())
	_, err = io.WriteString(held, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(held), nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "the first connection is served")

	client.Timeout = guard
	client.Transport.(*http.Transport).DisableKeepAlives = true
	resp, err = client.Get("https://" + addr + "/x")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 503, resp.StatusCode)
	assert.Contains(t, string(body), "ServerBusy")
}

func TestHTTPLimitsDefaults(t *testing.T) {
	srv := NewHTTPServer(http.NotFoundHandler(), HTTPLimits{})
	assert.Equal(t, DefaultReadHeaderTimeout, srv.ReadHeaderTimeout)
	assert.Equal(t, DefaultReadTimeout, srv.ReadTimeout)
	assert.Equal(t, DefaultWriteTimeout, srv.WriteTimeout)
	assert.Equal(t, DefaultIdleTimeout, srv.IdleTimeout)
	assert.IsType(t, &stallGuard{}, srv.Handler)
	assert.Equal(t, DefaultHTTPLimits(), HTTPLimits{}.resolve())

	off := NewHTTPServer(http.NotFoundHandler(), HTTPLimits{ReadHeaderTimeout: -1, ReadTimeout: -1, WriteTimeout: -1,
		IdleTimeout: -1, BodyStallTimeout: -1})
	assert.Zero(t, off.ReadHeaderTimeout+off.ReadTimeout+off.WriteTimeout+off.IdleTimeout)
	_, guarded := off.Handler.(*stallGuard)
	assert.False(t, guarded, "no stall guard when it is off")

	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer raw.Close()
	assert.Same(t, raw, LimitListener(raw, -1), "a negative cap is no cap")
	assert.Equal(t, int64(DefaultMaxConnections), LimitListener(raw, 0).(*limitListener).max)
}
