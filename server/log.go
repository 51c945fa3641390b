package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// LogOptions configure RequestLog.
type LogOptions struct {
	// Logger gets one record per request: method, path (with any SAS signature redacted),
	// status, the service's error code, duration, entities and Tabula's error detail. Nil
	// logs no lines. The level is Info, Warn for 4xx (and a failed batch, whose status is
	// 202) and Error for 5xx; a browser's request of /favicon.ico is Debug, and the console's
	// successful polls of its report (consolePollHeader) log no line.
	Logger *slog.Logger

	// Debug gets every request and response in full, headers and bodies, with credentials
	// redacted: the signature in Authorization, Basic passwords, sig= in query strings and
	// AccountKey= in bodies. Nil dumps nothing.
	Debug io.Writer

	// MaxDebugBody is how many bytes of each body Debug shows. Default 64 KiB.
	MaxDebugBody int

	// Clock measures durations. Default time.Now.
	Clock func() time.Time
}

// RequestLog wraps a handler (a Server, usually) in the request log of o.
func RequestLog(next http.Handler, o LogOptions) http.Handler {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxDebugBody <= 0 {
		o.MaxDebugBody = 64 << 10
	}
	return &requestLog{next: next, o: o}
}

type requestLog struct {
	next    http.Handler
	o       LogOptions
	debugMu sync.Mutex // one dump at a time, whole
}

func (l *requestLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := l.o.Clock()
	lw := &logWriter{ResponseWriter: w, entities: -1}
	var reqBody *cappedBuffer
	if l.o.Debug != nil {
		lw.body = &cappedBuffer{max: l.o.MaxDebugBody}
		if r.Body != nil && r.Body != http.NoBody {
			reqBody = &cappedBuffer{max: l.o.MaxDebugBody}
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(r.Body, reqBody), r.Body}
		}
	}
	l.next.ServeHTTP(lw, r)
	if !lw.wroteHeader {
		lw.status = http.StatusOK
	}
	elapsed := l.o.Clock().Sub(start)
	if l.o.Logger != nil {
		l.line(r, lw, elapsed)
	}
	if l.o.Debug != nil {
		l.dump(r, reqBody, lw, start, elapsed)
	}
}

// line logs the request's one line.
func (l *requestLog) line(r *http.Request, lw *logWriter, elapsed time.Duration) {
	if lw.status < 400 && r.Header.Get(consolePollHeader) != "" {
		return // an open console's poll, every 2 s: no news
	}
	level := slog.LevelInfo
	switch {
	case r.URL.Path == "/favicon.ico" && lw.status < 500:
		// A browser asks every server for its icon; it is not a client's mistake.
		level = slog.LevelDebug
	case lw.status >= 500:
		level = slog.LevelError
	case lw.status >= 400 || lw.code != "": // a failed batch answers 202
		level = slog.LevelWarn
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("method", r.Method), slog.String("path", loggedTarget(r)),
		slog.Int("status", lw.status))
	if lw.code != "" {
		attrs = append(attrs, slog.String("code", lw.code))
	}
	attrs = append(attrs, slog.Duration("duration", elapsed))
	if lw.entities >= 0 {
		attrs = append(attrs, slog.Int("entities", lw.entities))
	}
	if d := lw.Header().Get("X-Tabula-Error-Detail"); d != "" {
		attrs = append(attrs, slog.String("detail", d))
	}
	l.o.Logger.LogAttrs(context.Background(), level, "request", attrs...)
}

// dump writes the request and its response to Debug.
func (l *requestLog) dump(r *http.Request, reqBody *cappedBuffer, lw *logWriter, start time.Time, elapsed time.Duration) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "=== %s %s\n", start.UTC().Format(time.RFC3339Nano), r.RemoteAddr)
	fmt.Fprintf(&b, "%s %s %s\n", r.Method, loggedTarget(r), r.Proto)
	fmt.Fprintf(&b, "Host: %s\n", r.Host)
	writeHeaders(&b, r.Header)
	writeBody(&b, reqBody)
	fmt.Fprintf(&b, "--- %d %s in %s\n", lw.status, http.StatusText(lw.status), elapsed)
	writeHeaders(&b, lw.Header())
	writeBody(&b, lw.body)
	l.debugMu.Lock()
	_, _ = l.o.Debug.Write(b.Bytes())
	l.debugMu.Unlock()
}

func writeHeaders(b *bytes.Buffer, h http.Header) {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range h[name] {
			fmt.Fprintf(b, "%s: %s\n", name, redactHeader(name, v))
		}
	}
}

func writeBody(b *bytes.Buffer, c *cappedBuffer) {
	b.WriteString("\n")
	if c == nil || c.buf.Len() == 0 && c.dropped == 0 {
		return
	}
	b.Write(redactBody(c.buf.Bytes()))
	if c.dropped > 0 {
		fmt.Fprintf(b, "\n[%d more bytes]", c.dropped)
	}
	b.WriteString("\n")
}

// loggedTarget is the request's path and query as sent, with SAS signatures redacted.
func loggedTarget(r *http.Request) string {
	path, query := requestTarget(r)
	if query == "" {
		return path
	}
	return path + "?" + redactQuery(query)
}

// redactQuery replaces the value of sig (a SAS signature, which works as a password until
// it expires) with REDACTED.
func redactQuery(query string) string {
	parts := strings.Split(query, "&")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok && strings.EqualFold(k, "sig") {
			parts[i] = k + "=REDACTED"
		}
	}
	return strings.Join(parts, "&")
}

// redactHeader hides credentials in a header value, keeping what identifies them: the
// scheme and, for Shared Key, the account.
func redactHeader(name, value string) string {
	switch strings.ToLower(name) {
	case "authorization", "proxy-authorization":
		scheme, cred, _ := strings.Cut(value, " ")
		if account, _, ok := strings.Cut(cred, ":"); ok && strings.HasPrefix(scheme, "SharedKey") {
			return scheme + " " + account + ":REDACTED"
		}
		return scheme + " REDACTED"
	case "cookie", "set-cookie":
		return "REDACTED"
	}
	return value
}

// secretInBody matches the credentials a body may carry: account keys in connection
// strings and SAS signatures in URLs (a batch's sub-requests carry URLs).
var secretInBody = regexp.MustCompile(`(?i)(AccountKey=|[?&]sig=)[^;&\s"]*`)

func redactBody(b []byte) []byte {
	return secretInBody.ReplaceAll(b, []byte("${1}REDACTED"))
}

// cappedBuffer keeps the first max bytes written to it and counts the rest.
type cappedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
	} else {
		c.buf.Write(p[:max(room, 0)])
		c.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

// logWriter records what the request log reports about a response: its status, the
// body for --debug, and what the handler noted (see noteError, noteEntities).
type logWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	code        string
	entities    int // -1: not an entity operation
	body        *cappedBuffer
}

func (w *logWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *logWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.body != nil {
		_, _ = w.body.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noteError tells the request log, if w is its writer, the service error code the response
// carries; the operation then touched no entities.
func noteError(w http.ResponseWriter, code string) {
	if lw, ok := w.(*logWriter); ok {
		lw.code, lw.entities = code, 0
	}
}

// noteEntities tells the request log, if w is its writer, how many entities the request
// returned or wrote.
func noteEntities(w http.ResponseWriter, n int) {
	if lw, ok := w.(*logWriter); ok {
		lw.entities = n
	}
}
