package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula/server"
)

// BenchmarkServeMixedLoad measures the memory of a `tabula serve` process under sustained
// mixed load: 64 clients of the official Go SDK, each with its own connection pool as 64
// processes would have, on 127.0.0.1, each in a partition of its own inserting new 1 KiB
// entities (4 in 10 requests), reading one it wrote at random (4 in 10), merging into one
// (1 in 10) and querying its partition's first 100 (1 in 10), so that the data grows all
// along. Every second it samples the server's anonymous memory (RssAnon) and resident set
// (RSS) from /proc, and reports them a quarter of the way through the run (anon-start-MB,
// RSS-start-MB), at its end (anon-end-MB, RSS-end-MB) and at their peaks, with the entities
// written and requests/s. TABULA_BENCH_MIXED_PRELOAD entities (default none) are loaded
// first, in transactions of 100 spread over the clients' partitions. "disk" serves a data directory with the default --memory; "memory"
// serves --in-memory, for comparison.
//
// Each run lasts TABULA_BENCH_MIXED (a Go duration; default 2s, what CI runs). The server
// is the tabula command built from ../cmd/tabula, or the binary TABULA_BENCH_SERVE_BIN
// names (to measure another version the same way):
//
//	TABULA_BENCH_MIXED=60s TABULA_BENCH_MIXED_PRELOAD=300000 go test ./bench -run '^$' -bench ServeMixedLoad -benchtime 1x
func BenchmarkServeMixedLoad(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("no /proc here")
	}
	d := envDuration(b, "TABULA_BENCH_MIXED", 2*time.Second)
	bin := os.Getenv("TABULA_BENCH_SERVE_BIN")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "tabula")
		build := exec.Command("go", "build", "-o", bin, "../cmd/tabula")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("building tabula: %v\n%s", err, out)
		}
	}
	for _, kind := range []string{"disk", "memory"} {
		b.Run(kind, func(b *testing.B) {
			for range b.N {
				args := []string{"--in-memory"}
				if kind == "disk" {
					args = []string{"--data", b.TempDir()}
				}
				runMixedLoad(b, bin, args, d)
			}
		})
	}
}

func runMixedLoad(b *testing.B, bin string, args []string, d time.Duration) {
	b.StopTimer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr, "--silent"}, args...)...)
	cmd.Stderr = os.Stderr // the banner goes to stdout, discarded; errors show
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	conn := server.DevelopmentAccount().ConnectionString("http://" + addr)
	clients := make([]*aztables.Client, loadClients)
	for i := range clients {
		transport := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}
		defer transport.CloseIdleConnections()
		svc, err := aztables.NewServiceClientFromConnectionString(conn, &aztables.ClientOptions{
			ClientOptions: azcore.ClientOptions{Transport: &http.Client{Transport: transport}}})
		if err != nil {
			b.Fatal(err)
		}
		clients[i] = svc.NewClient("Mixed")
	}
	waitServing(b, clients[0])
	preload := mixedPreload(b) / loadClients
	payload := strings.Repeat("x", 1024)
	entityOf := func(pk string, row int) []byte {
		e, _ := json.Marshal(map[string]any{"PartitionKey": pk, "RowKey": fmt.Sprintf("%08d", row),
			"Amount": row, "Payload": payload})
		return e
	}
	var loading sync.WaitGroup
	loadErrs := make(chan error, loadClients)
	for i, c := range clients {
		loading.Go(func() {
			pk := "c" + strconv.Itoa(i)
			for row := 0; row < preload; row += 100 {
				var actions []aztables.TransactionAction
				for r := row; r < min(row+100, preload); r++ {
					actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entityOf(pk, r)})
				}
				if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
					loadErrs <- err
					return
				}
			}
		})
	}
	loading.Wait()
	close(loadErrs)
	if err := <-loadErrs; err != nil {
		b.Fatal(err)
	}

	samples := make(chan map[string]int64, 1)
	sctx, stopSampling := context.WithCancel(context.Background())
	go func() {
		var all []map[string]int64
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if m, err := procStatus(strconv.Itoa(cmd.Process.Pid)); err == nil {
				all = append(all, m)
			}
			select {
			case <-sctx.Done():
				if m, err := procStatus(strconv.Itoa(cmd.Process.Pid)); err == nil {
					all = append(all, m)
				}
				samples <- summarizeMemory(all)
				return
			case <-tick.C:
			}
		}
	}()

	b.StartTimer()
	began := time.Now()
	deadline := began.Add(d)
	var requests, written, failed atomic.Int64
	var firstErr atomic.Value
	var working sync.WaitGroup
	for i, c := range clients {
		working.Go(func() {
			pk := "c" + strconv.Itoa(i)
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			rows := preload
			entity := func(row int) []byte { return entityOf(pk, row) }
			for time.Now().Before(deadline) {
				var err error
				switch op := rng.IntN(10); {
				case op < 4 || rows == 0:
					if _, err = c.AddEntity(ctx, entity(rows), nil); err == nil {
						rows++
						written.Add(1)
					}
				case op < 8:
					_, err = c.GetEntity(ctx, pk, fmt.Sprintf("%08d", rng.IntN(rows)), nil)
				case op < 9:
					_, err = c.UpsertEntity(ctx, entity(rng.IntN(rows)), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge})
				default:
					top := int32(100)
					pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: ptr("PartitionKey eq '" + pk + "'"), Top: &top})
					_, err = pager.NextPage(ctx)
				}
				requests.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	working.Wait()
	elapsed := time.Since(began)
	b.StopTimer()
	stopSampling()
	m := <-samples
	for _, k := range []string{"anon-start", "anon-end", "anon-peak", "RSS-start", "RSS-end", "RSS-peak"} {
		b.ReportMetric(float64(m[k])/(1<<20), k+"-MB")
	}
	b.ReportMetric(float64(requests.Load())/elapsed.Seconds(), "requests/s")
	b.ReportMetric(float64(written.Load()), "entities")
	if n := failed.Load(); n > 0 {
		b.Errorf("%d requests failed; the first: %v", n, firstErr.Load())
	}
}

func ptr[T any](v T) *T { return &v }

// mixedPreload reads TABULA_BENCH_MIXED_PRELOAD, the entities loaded (in transactions of 100,
// spread over the clients' partitions) before the load starts; default 0.
func mixedPreload(b *testing.B) int {
	s := os.Getenv("TABULA_BENCH_MIXED_PRELOAD")
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		b.Fatalf("TABULA_BENCH_MIXED_PRELOAD=%q: want a number of entities", s)
	}
	return n
}

// waitServing creates the table, retrying until the server answers (for at most 30 s).
func waitServing(b *testing.B, c *aztables.Client) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.CreateTable(ctx, nil)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the server answered nothing within 30 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// summarizeMemory reads samples taken once a second: a quarter of the way through, at the
// end, and the peak of RssAnon and VmRSS.
func summarizeMemory(all []map[string]int64) map[string]int64 {
	out := map[string]int64{}
	if len(all) == 0 {
		return out
	}
	start, end := all[len(all)/4], all[len(all)-1]
	out["anon-start"], out["RSS-start"] = start["RssAnon"], start["VmRSS"]
	out["anon-end"], out["RSS-end"] = end["RssAnon"], end["VmRSS"]
	for _, m := range all {
		out["anon-peak"] = max(out["anon-peak"], m["RssAnon"])
		out["RSS-peak"] = max(out["RSS-peak"], m["VmRSS"])
	}
	return out
}
