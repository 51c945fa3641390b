package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// syncBuffer is a bytes.Buffer safe to write from the server and read from the test, which
// can wait for the next write instead of polling.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // receives after a write; made by written
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote != nil {
		select {
		case s.wrote <- struct{}{}:
		default: // a signal is pending already
		}
	}
	return s.b.Write(p)
}

// written receives after every write that follows the first call (at least once per batch of
// writes), so that the test reads the buffer when there is something new in it.
func (s *syncBuffer) written() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote == nil {
		s.wrote = make(chan struct{}, 1)
	}
	return s.wrote
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// running is a `tabula serve` started in the test process.
type running struct {
	out, errs *syncBuffer
	stop      context.CancelFunc
	done      chan int
	connStr   string
}

var (
	connLine     = regexp.MustCompile(`DefaultEndpointsProtocol=\S+`)
	endpointLine = regexp.MustCompile(`TableEndpoint=([^;\s]+)`)
)

// start runs `tabula serve args…` and returns once it serves: everything it prints before
// serving (its banner on stdout, its warnings on stderr) is written by then. It reads stdout
// each time serve writes to it until the connection string is out, then asks the server
// itself (see serving), so a slow start on a busy machine is only slow.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	r := &running{out: &syncBuffer{}, errs: &syncBuffer{}, stop: stop, done: make(chan int, 1)}
	written := r.out.written()
	go func() { r.done <- run(ctx, append([]string{"serve"}, args...), r.out, r.errs) }()
	hang := time.NewTimer(2 * time.Minute) // a hang, not a wait for behaviour
	defer hang.Stop()
	for {
		if out := r.out.String(); strings.Contains(out, "Admin key") { // the banner's connection strings are out
			r.connStr = connLine.FindString(out)
			if r.connStr == "" {
				stop()
				t.Fatalf("no connection string printed; stdout %q, stderr %q", r.out, r.errs)
			}
			serving(t, r.connStr)
			return r
		}
		select {
		case <-written:
		case code := <-r.done:
			t.Fatalf("serve exited with %d: %s", code, r.errs)
		case <-hang.C:
			stop()
			t.Fatalf("no connection string printed; stdout %q, stderr %q", r.out, r.errs)
		}
	}
}

// serving returns once the server of the connection string answers. Its listener is open
// before the banner is printed but served only after everything serve prints, so the answer
// is the sign that serve has printed it all. The request is "OPTIONS *", which net/http
// answers itself: no handler, so nothing in the request log.
func serving(t *testing.T, connStr string) {
	t.Helper()
	m := endpointLine.FindStringSubmatch(connStr)
	if m == nil {
		t.Fatalf("no TableEndpoint in %q", connStr)
	}
	u, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute)) // a hang, not a wait for behaviour
	if u.Scheme == "https" {
		c = tls.Client(c, &tls.Config{InsecureSkipVerify: true}) // only to see it serve
	}
	if _, err := io.WriteString(c, "OPTIONS * HTTP/1.1\r\nHost: "+u.Host+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("serve does not answer: %v", err)
	}
	_ = resp.Body.Close()
}

// shutdown stops the server as SIGINT would and checks that it exits cleanly.
func (r *running) shutdown(t *testing.T) {
	t.Helper()
	r.stop()
	select {
	case code := <-r.done:
		if code != 0 {
			t.Fatalf("serve exited with %d: %s", code, r.errs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(r.out.String(), "Stopped; the database is closed.") {
		t.Fatalf("stdout %q", r.out)
	}
}

func TestServeInMemory(t *testing.T) {
	r := start(t, "--addr", "127.0.0.1:0", "--in-memory")
	if !strings.Contains(r.connStr, "AccountName=devstoreaccount1;") || !strings.Contains(r.connStr, "TableEndpoint=http://127.0.0.1:") {
		t.Fatalf("connection string %q", r.connStr)
	}
	svc, err := aztables.NewServiceClientFromConnectionString(r.connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := svc.NewClient("Served")
	if _, err := c.CreateTable(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	e, _ := json.Marshal(map[string]any{"PartitionKey": "p", "RowKey": "r", "V": 1})
	if _, err := c.AddEntity(context.Background(), e, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetEntity(context.Background(), "p", "r", nil); err != nil {
		t.Fatal(err)
	}
	r.shutdown(t)
}

// Data written through the server survives a restart on the same directory, under an
// account given by flag.
func TestServeOnDiskWithAccounts(t *testing.T) {
	dir := t.TempDir()
	const key = "c2VjcmV0LWtleS1mb3ItdGVzdHM=" // base64 of "secret-key-for-tests"
	args := []string{"--addr", "127.0.0.1:0", "--data", dir, "--accounts", "mine:" + key}
	r := start(t, args...)
	if !strings.Contains(r.connStr, "AccountName=mine;AccountKey="+key+";") {
		t.Fatalf("connection string %q", r.connStr)
	}
	svc, err := aztables.NewServiceClientFromConnectionString(r.connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := svc.NewClient("Kept")
	if _, err := c.CreateTable(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	e, _ := json.Marshal(map[string]any{"PartitionKey": "p", "RowKey": "r", "V": "kept"})
	if _, err := c.AddEntity(context.Background(), e, nil); err != nil {
		t.Fatal(err)
	}
	r.shutdown(t)

	r = start(t, args...)
	svc, err = aztables.NewServiceClientFromConnectionString(r.connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.NewClient("Kept").GetEntity(context.Background(), "p", "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got.Value), `"V":"kept"`) {
		t.Fatalf("after restart: %s", got.Value)
	}
	r.shutdown(t)
}
