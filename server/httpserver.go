package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPLimits bound what one connection or request may hold of a server, so that no client,
// slow or hostile, can hang it: every phase of a request has a deadline, and connections
// beyond a cap are refused with an answer rather than left to queue.
//
// In NewHTTPServer and LimitListener a zero field takes its default (DefaultHTTPLimits) and a
// negative one turns that limit off.
type HTTPLimits struct {
	// ReadHeaderTimeout is how long a client has to send a request's headers, from the moment
	// the server starts reading them.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long a client has to send a whole request, body included. It is
	// generous, because a legitimate 4 MiB batch on a slow link takes a while; a body that
	// stops arriving is cut off much sooner, by BodyStallTimeout.
	ReadTimeout time.Duration
	// WriteTimeout is how long the server has to produce and send a response once the request
	// is in: from the end of the headers for a request without a body, from the end of the
	// body otherwise.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next request. Turned
	// off (negative), net/http falls back to ReadTimeout.
	IdleTimeout time.Duration
	// MaxConnections caps the connections open at once (see LimitListener). At the cap, the
	// connection that has waited longest on its client is closed to make room for a new one;
	// if none has waited, the new one is answered 503 ServerBusy, which the SDKs retry.
	MaxConnections int
	// BodyStallTimeout is the longest a request body may go without delivering a byte; a
	// body that stalls longer is cut off and its connection closed, whatever ReadTimeout
	// still allows.
	BodyStallTimeout time.Duration
}

// The defaults of HTTPLimits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 2 * time.Minute
	DefaultWriteTimeout      = 2 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute // longer than the 90 s the Go and .NET clients keep idle connections
	DefaultBodyStallTimeout  = 15 * time.Second
	DefaultMaxConnections    = 1024
)

// DefaultHTTPLimits returns the limits `tabula serve` uses unless told otherwise.
func DefaultHTTPLimits() HTTPLimits {
	return HTTPLimits{
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxConnections:    DefaultMaxConnections,
		BodyStallTimeout:  DefaultBodyStallTimeout,
	}
}

// resolve applies the defaults to zero fields and turns negative ones into 0 (off).
func (l HTTPLimits) resolve() HTTPLimits {
	d := DefaultHTTPLimits()
	pick := func(v, def time.Duration) time.Duration {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	l.ReadHeaderTimeout = pick(l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	l.ReadTimeout = pick(l.ReadTimeout, d.ReadTimeout)
	l.WriteTimeout = pick(l.WriteTimeout, d.WriteTimeout)
	l.IdleTimeout = pick(l.IdleTimeout, d.IdleTimeout)
	l.BodyStallTimeout = pick(l.BodyStallTimeout, d.BodyStallTimeout)
	switch {
	case l.MaxConnections == 0:
		l.MaxConnections = d.MaxConnections
	case l.MaxConnections < 0:
		l.MaxConnections = 0
	}
	return l
}

// NewHTTPServer returns an http.Server for h with the timeouts of l. Serve it on a listener
// wrapped by LimitListener to cap connections too:
//
//	srv := server.NewHTTPServer(h, limits)
//	err := srv.Serve(server.LimitListener(ln, limits.MaxConnections))
func NewHTTPServer(h http.Handler, l HTTPLimits) *http.Server {
	l = l.resolve()
	if l.BodyStallTimeout > 0 {
		h = &stallGuard{h: h, limits: l, now: time.Now}
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		// What a capped listener needs to know of its connections (see limitedConn.waiting).
		ConnState: func(c net.Conn, s http.ConnState) {
			if lc := asLimited(c); lc != nil {
				switch s {
				case http.StateNew, http.StateIdle:
					lc.wait()
				case http.StateActive:
					lc.work()
				}
			}
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if lc := asLimited(c); lc != nil {
				return context.WithValue(ctx, limitedConnKey{}, lc)
			}
			return ctx
		},
	}
}

// stallGuard cuts off request bodies that stall. net/http has one read deadline for the whole
// request; the guard moves the connection's deadline forward before each read of the body,
// to BodyStallTimeout from now (never past the whole request's ReadTimeout), so a body that
// keeps arriving may take as long as ReadTimeout allows and one that stops is cut off soon.
type stallGuard struct {
	h      http.Handler
	limits HTTPLimits
	now    func() time.Time
}

func (g *stallGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		g.h.ServeHTTP(w, r)
		return
	}
	b := &stallReader{body: r.Body, rc: http.NewResponseController(w), g: g}
	b.conn, _ = r.Context().Value(limitedConnKey{}).(*limitedConn)
	if g.limits.ReadTimeout > 0 {
		b.whole = g.now().Add(g.limits.ReadTimeout)
	}
	if !b.arm() {
		g.h.ServeHTTP(w, r) // the connection has no deadlines to move (HTTP/2 without support)
		return
	}
	// A shallow copy, so that net/http still sees its own body on its request and discards
	// what the handler leaves unread as it always does; under the stall deadline armed below.
	r2 := *r
	r2.Body = b
	if b.conn != nil {
		b.conn.wait() // for the body
	}
	defer b.leave()
	g.h.ServeHTTP(w, &r2)
}

// stallReader is a request body whose every read must make progress within BodyStallTimeout.
type stallReader struct {
	body  io.ReadCloser
	rc    *http.ResponseController
	g     *stallGuard
	whole time.Time    // the whole request's deadline; zero: none
	conn  *limitedConn // the capped connection the body arrives on, if any
	mu    sync.Mutex
	ended bool // the body was read to its end (or failed)
}

// arm sets the read deadline BodyStallTimeout ahead. It reports false if the connection does
// not support deadlines.
func (b *stallReader) arm() bool {
	d := b.g.now().Add(b.g.limits.BodyStallTimeout)
	if !b.whole.IsZero() && b.whole.Before(d) {
		d = b.whole
	}
	return !errors.Is(b.rc.SetReadDeadline(d), http.ErrNotSupported)
}

func (b *stallReader) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended {
		b.arm()
	}
	n, err := b.body.Read(p)
	if n > 0 && b.conn != nil {
		b.conn.wait() // progress: waiting on the client afresh
	}
	if err != nil && !b.ended {
		b.ended = true
		if err == io.EOF {
			if b.conn != nil {
				b.conn.work()
			}
			// The request is in: net/http has cleared the read deadline for its watch for the
			// client going away, which must not time out while the handler works (that would
			// cancel the request's context). The response gets its WriteTimeout from here.
			if wt := b.g.limits.WriteTimeout; wt > 0 {
				_ = b.rc.SetWriteDeadline(b.g.now().Add(wt))
			}
		}
	}
	return n, err
}

func (b *stallReader) Close() error { return b.body.Close() }

// leave runs when the handler returns: a body left unread is discarded by net/http after the
// handler, and that too must not wait on a client that sends nothing.
func (b *stallReader) leave() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended {
		b.arm()
		if b.conn != nil {
			b.conn.wait()
		}
	}
}

// refusalsInFlight bounds the refusals being written at once; past it, connections over the
// cap are closed without a word, so that a flood cannot make the refusals themselves a load.
const refusalsInFlight = 256

// refusalDeadline bounds how long writing one refusal (and reading what the client sent
// before it) may take.
const refusalDeadline = 2 * time.Second

// LimitListener caps the connections a listener hands out at max (0: DefaultMaxConnections;
// negative: no cap, ln itself). A connection is not queued when the cap is reached. If some
// open connection has been waiting on its client for a while (idle between requests, not yet
// sending one, or stalled in the middle of a body), the one waiting longest is closed to make
// room: so slow or idle clients cannot keep out one that has a request to make, and active
// ones are never cut. Otherwise the newcomer is answered at once with 503 ServerBusy and
// "Connection: close", the service's answer when it is too busy, which the Azure SDKs retry
// with backoff, and closed. A connection counts until it is closed. Only a server made by
// NewHTTPServer tells the listener which connections wait; under any other, connections over
// the cap are refused.
//
// ln must hand out the raw connections (for HTTPS use LimitTLSListener): net/http recognises
// a TLS connection by its type, which a wrapper would hide.
func LimitListener(ln net.Listener, max int) net.Listener {
	switch {
	case max == 0:
		max = DefaultMaxConnections
	case max < 0:
		return ln
	}
	return newLimitListener(ln, max)
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, max: int64(max), refusals: make(chan struct{}, refusalsInFlight),
		conns: make(map[*limitedConn]struct{}), now: time.Now}
}

// LimitTLSListener is LimitListener for HTTPS: it caps the TCP connections of ln and serves
// TLS with cfg on top, the refusals included (over HTTP/1.1 whatever cfg offers).
func LimitTLSListener(ln net.Listener, max int, cfg *tls.Config) net.Listener {
	switch {
	case max == 0:
		max = DefaultMaxConnections
	case max < 0:
		return tls.NewListener(ln, cfg)
	}
	_, tl := newLimitTLSListener(ln, max, cfg)
	return tl
}

func newLimitTLSListener(ln net.Listener, max int, cfg *tls.Config) (*limitListener, net.Listener) {
	l := newLimitListener(ln, max)
	l.tls = cfg.Clone()
	l.tls.NextProtos = []string{"http/1.1"}
	return l, tls.NewListener(l, cfg)
}

// evictAfter is how long a connection must have been waiting on its client before it may be
// closed to make room for a new one.
const evictAfter = time.Second

type limitListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	refusals chan struct{}
	tls      *tls.Config // refusals are spoken in TLS with it, when set
	now      func() time.Time

	mu    sync.Mutex
	conns map[*limitedConn]struct{}

	released func() // called when a connection's slot is freed; tests wait on it
	refused  func() // called when a refusal is done; tests wait on it
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		// Only this goroutine adds connections, so the count can only fall in between.
		if l.open.Load() >= l.max {
			l.evict()
		}
		if l.open.Load() < l.max {
			lc := &limitedConn{Conn: c, l: l}
			l.open.Add(1)
			l.mu.Lock()
			l.conns[lc] = struct{}{}
			l.mu.Unlock()
			return lc, nil
		}
		select {
		case l.refusals <- struct{}{}:
			go func() {
				l.refuse(c)
				<-l.refusals
				if l.refused != nil {
					l.refused()
				}
			}()
		default:
			_ = c.Close()
		}
	}
}

// evict closes the connection that has waited longest on its client, if one has waited at
// least evictAfter.
func (l *limitListener) evict() {
	cutoff := l.now().Add(-evictAfter).UnixNano()
	var victim *limitedConn
	l.mu.Lock()
	for c := range l.conns {
		if w := c.waiting.Load(); w != 0 && w <= cutoff {
			victim, cutoff = c, w
		}
	}
	l.mu.Unlock()
	if victim != nil {
		_ = victim.Close()
	}
}

// refuse answers a connection over the cap with 503 ServerBusy and closes it. It waits for
// the request's headers before answering, since an HTTP client that reads an answer before it
// has sent its request discards it as unsolicited; and it reads what else the client sent
// before closing, since closing a socket with unread data resets it and the client could
// then lose the answer.
func (l *limitListener) refuse(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refusalDeadline))
	if l.tls != nil {
		c = tls.Server(c, l.tls)
	}
	br := bufio.NewReaderSize(c, 4096)
	for n := 0; ; n++ {
		line, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return // the client sent no request in time, or went away
		}
		if n > 256 || len(bytes.TrimRight(line, "\r\n")) == 0 && err == nil {
			break
		}
	}
	id := newRequestID()
	body := appendErrorJSON(nil, "ServerBusy", "The server is busy.", id, time.Now())
	detail := "the server has " + strconv.FormatInt(l.max, 10) + " connections open, its limit (MaxConnections), all of them busy; retry"
	head := "HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: " + levelMinimal.contentType() + "\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"Connection: close\r\n" +
		"Retry-After: 1\r\n" +
		"Server: Tabula\r\n" +
		"x-ms-request-id: " + id + "\r\n" +
		"X-Tabula-Error-Detail: " + detail + "\r\n\r\n"
	if _, err := c.Write(append([]byte(head), body...)); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(br, 1<<20))
}

// limitedConn is a connection holding one of the listener's slots until it is closed.
type limitedConn struct {
	net.Conn
	l *limitListener
	// waiting is when the connection began waiting on its client (Unix ns): for its first or
	// next request, or for more of a body that has stalled; 0 while the server works on a
	// request or never said. The server made by NewHTTPServer keeps it.
	waiting atomic.Int64
	once    sync.Once
}

// limitedConnKey is the request context key of the capped connection a request came on.
type limitedConnKey struct{}

func asLimited(c net.Conn) *limitedConn {
	switch c := c.(type) {
	case *limitedConn:
		return c
	case *tls.Conn:
		lc, _ := c.NetConn().(*limitedConn)
		return lc
	}
	return nil
}

// wait records that the connection waits on its client from now on.
func (c *limitedConn) wait() { c.waiting.Store(c.l.now().UnixNano()) }

// work records that the server is working on the connection's request.
func (c *limitedConn) work() { c.waiting.Store(0) }

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.open.Add(-1)
		if c.l.released != nil {
			c.l.released()
		}
	})
	return err
}
