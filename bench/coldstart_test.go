package bench

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkColdStart is what a test suite in another language waits for when it starts a
// server of its own: from exec of `tabula serve --in-memory` (a binary built once, as the
// release tool builds it) to the answer of its first request (unsigned, so a 403), polled
// every 200 µs on a port chosen beforehand. The process is then killed, outside the timing.
//
// Beside it, in the same run: exec'ing the same binary for `tabula version` (no server at
// all: ms/exec, and x-exec, what serving adds to starting a process), and, when
// $TABULA_BENCH_AZURITE_TABLE names Azurite's azurite-table command, Azurite started the
// same way with --inMemoryPersistence (ms/azurite, and x-azurite, Azurite's time over
// Tabula's):
//
//	npm install azurite@3.37.0   # in a directory of its own
//	TABULA_BENCH_AZURITE_TABLE=$PWD/node_modules/.bin/azurite-table \
//	    go test ./bench -run '^$' -bench ColdStart -benchtime 20x
func BenchmarkColdStart(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "tabula")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "../cmd/tabula")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building tabula: %v\n%s", err, out)
	}
	tabula := func(port int) *exec.Cmd {
		return exec.Command(bin, "serve", "--in-memory", "--addr", "127.0.0.1:"+strconv.Itoa(port), "--silent")
	}

	const execRuns = 20
	start := time.Now()
	for range execRuns {
		if err := exec.Command(bin, "version").Run(); err != nil {
			b.Fatal(err)
		}
	}
	perExec := time.Since(start) / execRuns

	var total time.Duration
	for b.Loop() {
		d, stop := coldStart(b, tabula)
		total += d
		b.StopTimer()
		stop()
		b.StartTimer()
	}
	b.StopTimer()
	perStart := total / time.Duration(b.N)
	b.ReportMetric(ms(perStart), "ms/start")
	b.ReportMetric(ms(perExec), "ms/exec")
	b.ReportMetric(float64(perStart)/float64(perExec), "x-exec")

	if azurite := os.Getenv("TABULA_BENCH_AZURITE_TABLE"); azurite != "" {
		var az time.Duration
		for range b.N {
			d, stop := coldStart(b, func(port int) *exec.Cmd {
				return exec.Command(azurite, "--inMemoryPersistence", "--silent", "--disableTelemetry",
					"--tableHost", "127.0.0.1", "--tablePort", strconv.Itoa(port))
			})
			az += d
			stop()
		}
		perAzurite := az / time.Duration(b.N)
		b.ReportMetric(ms(perAzurite), "ms/azurite")
		b.ReportMetric(float64(perAzurite)/float64(perStart), "x-azurite")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// coldStart starts the server command on a free port and returns the time from its start
// to its first answered request, and a function that kills the process.
func coldStart(b *testing.B, command func(port int) *exec.Cmd) (time.Duration, func()) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/devstoreaccount1/Tables"
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}

	cmd := command(port)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	deadline := start.Add(30 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			return time.Since(start), stop
		}
		if time.Now().After(deadline) {
			stop()
			b.Fatalf("%s answered nothing within 30 s: %v", cmd.Path, err)
		}
		time.Sleep(200 * time.Microsecond)
	}
}
