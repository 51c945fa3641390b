package bench

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// BenchmarkColdStart is what a test suite in another language waits for when it starts
// its own server: from exec of `tabula serve --in-memory` (a binary built once, as the
// release tool builds it) to the answer of its first request, through the banner's port.
// The process is then stopped (SIGKILL, outside the timing). It is reported beside the cost
// of exec'ing the same binary for `tabula version`, which has no server at all, so the ratio
// (x-exec) is what serving adds to starting a process: runtime start-up, opening the store,
// the listener, the banner and one HTTP request.
func BenchmarkColdStart(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "tabula")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "../cmd/tabula")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building tabula: %v\n%s", err, out)
	}
	endpoint := regexp.MustCompile(`TableEndpoint=(http://[^/;]+)/`)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

	var exec0 time.Duration
	const execRuns = 20
	for range execRuns {
		start := time.Now()
		if err := exec.Command(bin, "version").Run(); err != nil {
			b.Fatal(err)
		}
		exec0 += time.Since(start)
	}
	exec0 /= execRuns

	var total time.Duration
	for b.Loop() {
		start := time.Now()
		cmd := exec.Command(bin, "serve", "--in-memory", "--addr", "127.0.0.1:0", "--silent")
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		url := ""
		for url == "" && sc.Scan() {
			if m := endpoint.FindStringSubmatch(sc.Text()); m != nil {
				url = m[1]
			}
		}
		if url == "" {
			b.Fatalf("no endpoint in the banner: %v", sc.Err())
		}
		resp, err := client.Get(url + "/devstoreaccount1/Tables") // unsigned: 403, answered
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		total += time.Since(start)
		b.StopTimer()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.StartTimer()
	}
	perStart := total / time.Duration(b.N)
	b.ReportMetric(float64(perStart.Microseconds())/1000, "ms/start")
	b.ReportMetric(float64(exec0.Microseconds())/1000, "ms/exec")
	b.ReportMetric(float64(perStart)/float64(exec0), "x-exec")
}
