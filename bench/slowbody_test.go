package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

// BenchmarkSlowBodyAttack is the load test of the HTTP limits: 64 clients of the official Go
// SDK, each with its own connection pool as 64 processes would have, write and read entities
// against a server built as `tabula serve` builds it (server.NewHTTPServer with the default
// limits, server.LimitListener) on 127.0.0.1, for a bounded time; beside them, in the runs
// with attackers, attackers open connections, declare a 4 KiB body, send one byte of it and
// stall, and open another when the server closes one (half a second later if it was closed
// unanswered or refused): half as many attackers as the connection cap, and more than it. It reports the latency of the normal requests (p50-ms, p99-ms) with and without the
// attackers, the connections the clients had to open again (redials), and what became of the
// attackers' connections.
//
// Each run lasts TABULA_BENCH_LOAD (a Go duration; default 500ms, what CI runs), per b.N:
//
//	TABULA_BENCH_LOAD=1m go test ./bench -run '^$' -bench SlowBodyAttack -benchtime 1x
func BenchmarkSlowBodyAttack(b *testing.B) {
	d := envDuration(b, "TABULA_BENCH_LOAD", 500*time.Millisecond)
	for _, attackers := range []int{0, server.DefaultMaxConnections / 2, slowBodyAttackers} {
		b.Run("attackers="+strconv.Itoa(attackers), func(b *testing.B) {
			for range b.N {
				runSlowBodyLoad(b, d, attackers)
			}
		})
	}
}

const (
	loadClients = 64
	// slowBodyAttackers is more than the server's default connection cap, so that the cap,
	// not the file descriptor limit, is what the attack meets.
	slowBodyAttackers = server.DefaultMaxConnections + 256
)

func runSlowBodyLoad(b *testing.B, d time.Duration, attackers int) {
	b.StopTimer()
	db, err := tabula.OpenInMemory(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	h, err := server.New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	limits := server.DefaultHTTPLimits()
	srv := server.NewHTTPServer(h, limits)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(server.LimitListener(ln, limits.MaxConnections))
	}()
	defer func() {
		_ = srv.Close()
		<-served
	}()
	addr := ln.Addr().String()
	conn := server.DevelopmentAccount().ConnectionString("http://" + addr)

	// The clients connect and create what they work on before any attacker arrives.
	clients := make([]*aztables.Client, loadClients)
	var dials atomic.Int64 // connections the clients opened
	for i := range clients {
		transport := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}}
		defer transport.CloseIdleConnections()
		svc, err := aztables.NewServiceClientFromConnectionString(conn, &aztables.ClientOptions{
			ClientOptions: azcore.ClientOptions{Transport: &http.Client{Transport: transport}}})
		if err != nil {
			b.Fatal(err)
		}
		clients[i] = svc.NewClient("Load")
		if i == 0 {
			if _, err := clients[0].CreateTable(ctx, nil); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := clients[i].UpsertEntity(ctx, loadEntity(i, 0), nil); err != nil {
			b.Fatal(err)
		}
	}

	actx, stopAttack := context.WithCancel(context.Background())
	var att attackStats
	var attacking, started sync.WaitGroup
	for range attackers {
		attacking.Add(1)
		started.Add(1)
		go func() {
			defer attacking.Done()
			slowBodyAttacker(actx, addr, &att, started.Done)
		}()
	}
	started.Wait() // every attacker has sent its first request

	b.StartTimer()
	began := time.Now()
	deadline := began.Add(d)
	lat := make([][]time.Duration, loadClients)
	var failed atomic.Int64
	var firstErr atomic.Value
	var working sync.WaitGroup
	for i, c := range clients {
		working.Add(1)
		go func() {
			defer working.Done()
			for n := 1; time.Now().Before(deadline); n++ {
				start := time.Now()
				var err error
				if n%2 == 0 {
					_, err = c.UpsertEntity(ctx, loadEntity(i, n%100), nil)
				} else {
					_, err = c.GetEntity(ctx, "c"+strconv.Itoa(i), "0", nil)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				lat[i] = append(lat[i], time.Since(start))
			}
		}()
	}
	working.Wait()
	elapsed := time.Since(began)
	b.StopTimer()
	stopAttack()
	attacking.Wait()

	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		b.Fatalf("no request succeeded; first error: %v", firstErr.Load())
	}
	ms := func(q float64) float64 { return float64(all[int(q*float64(len(all)-1))]) / 1e6 }
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "requests/s")
	b.ReportMetric(float64(failed.Load()), "failed")
	b.ReportMetric(float64(dials.Load()-loadClients), "redials")
	if attackers > 0 {
		b.ReportMetric(float64(att.refused.Load()), "attacks-refused")
		b.ReportMetric(float64(att.closed.Load()), "attacks-closed")
		b.ReportMetric(float64(att.cut.Load()), "attacks-cut-off")
		b.ReportMetric(float64(att.dialFailed.Load()), "attacks-undialled")
	}
	if n := failed.Load(); n > 0 {
		b.Errorf("%d normal requests failed; the first: %v", n, firstErr.Load())
	}
}

func loadEntity(client, row int) []byte {
	e, _ := json.Marshal(map[string]any{"PartitionKey": "c" + strconv.Itoa(client), "RowKey": strconv.Itoa(row),
		"Amount": row, "Note": "a small entity of a few properties"})
	return e
}

type attackStats struct {
	refused    atomic.Int64 // connections answered 503 ServerBusy at once (over the cap)
	closed     atomic.Int64 // connections closed without an answer: to make room for a newcomer, or over the refusal budget
	cut        atomic.Int64 // connections the server answered and closed when the body stalled
	dialFailed atomic.Int64 // connections that could not be opened
}

// attackerPause is how long an attacker whose connection was refused waits before the next:
// the load under test is connections held open, not the rate of new ones, which on this
// 2-core machine would mostly measure the attackers' own CPU.
const attackerPause = 500 * time.Millisecond

// slowBodyAttacker opens a connection, sends a request that declares a body and one byte of
// it, and waits for the server to answer or close; then does it again, until ctx ends.
// started is called once the first request is sent (or could not be).
func slowBodyAttacker(ctx context.Context, addr string, st *attackStats, started func()) {
	var once sync.Once
	defer once.Do(started)
	pause := func() {
		select {
		case <-ctx.Done():
		case <-time.After(attackerPause):
		}
	}
	for ctx.Err() == nil {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			if ctx.Err() == nil {
				st.dialFailed.Add(1)
			}
			once.Do(started)
			pause()
			continue
		}
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		_, err = fmt.Fprintf(c, "POST /devstoreaccount1/Tables HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
			"Content-Length: 4096\r\n\r\n{", addr)
		once.Do(started)
		var head []byte
		if err == nil {
			head = make([]byte, 12)
			n, _ := io.ReadFull(c, head)
			head = head[:n]
			_, _ = io.Copy(io.Discard, c)
		}
		stop()
		_ = c.Close()
		if ctx.Err() != nil {
			return
		}
		switch {
		case string(head) == "HTTP/1.1 503":
			st.refused.Add(1)
			pause()
		case len(head) == 0:
			st.closed.Add(1)
			pause()
		default:
			st.cut.Add(1)
		}
	}
}

// envDuration is the positive Go duration (such as 1m) in the environment variable name, or
// def when it is unset.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive Go duration such as 1m", name, v)
	}
	return d
}
