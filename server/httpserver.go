package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// HTTPLimits bound how long a connection may take over each part of a request and how many
// connections may be open at once, so that a client that stalls cannot hold the server.
type HTTPLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of a request's headers to the end of its
	// response.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next request.
	IdleTimeout time.Duration
	// MaxConnections caps the connections open at once; zero or less means no cap.
	MaxConnections int
}

// DefaultHTTPLimits returns limits generous for any honest client of the Table service: a
// 4 MiB body and a 5 s query page fit them many times over.
func DefaultHTTPLimits() HTTPLimits {
	return HTTPLimits{
		ReadHeaderTimeout: 30 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxConnections:    4096,
	}
}

// NewHTTPServer returns an http.Server for h with the timeouts of l. The connection cap is
// the listener's job: see LimitListener.
func NewHTTPServer(h http.Handler, l HTTPLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
	}
}

// LimitListener returns a listener that holds at most max connections open at once: Accept
// waits while max are open. A max of zero or less returns ln unchanged.
func LimitListener(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, sem: make(chan struct{}, max)}
}

type limitListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
