package tabula_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// The crash test: a process writing transactions is killed with SIGKILL at random moments,
// again and again on the same directory; after each kill the database is opened and must hold
// every write that was acknowledged, and every transaction whole or not at all. One process
// writes through the engine (this test binary, run again as a child); the other is
// `tabula serve`, built from cmd/tabula, written to over HTTP by the Go SDK.
//
// A cycle takes about a second; CI runs crashCycles (3) of each. Set TABULA_CRASH_CYCLES for
// a longer run, such as TABULA_CRASH_CYCLES=40 go test -run TestCrash -v.

const (
	crashCycles   = 3
	crashTable    = "Crash"
	crashPerTxn   = 5 // entities per transaction, one PartitionKey per transaction
	crashChildEnv = "TABULA_CRASH_CHILD"
)

func cycles(t *testing.T) int {
	if s := os.Getenv("TABULA_CRASH_CYCLES"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "TABULA_CRASH_CYCLES")
		return n
	}
	if testing.Short() {
		return 1
	}
	return crashCycles
}

// crashActions is transaction seq: crashPerTxn inserts under the PartitionKey of seq.
func crashActions(seq int) []tabula.Action {
	actions := make([]tabula.Action, crashPerTxn)
	for i := range actions {
		actions[i] = tabula.InsertAction(tabula.Entity{PartitionKey: fmt.Sprintf("w%08d", seq), RowKey: strconv.Itoa(i),
			Properties: tabula.Properties{"Seq": tabula.Int64(int64(seq)), "Pad": tabula.String(strings.Repeat("x", 200))}})
	}
	return actions
}

// crashFigures add up what the cycles saw.
type crashFigures struct {
	cycles, acknowledged, lost, partial int
}

// verify opens dir and checks every acknowledged transaction is there and every transaction
// present is whole; it returns the next sequence number to write.
func (f *crashFigures) verify(t *testing.T, dir string, acked []int) int {
	t.Helper()
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	rows, partial, next := crashRows(t, db)
	f.partial += partial
	for _, seq := range acked {
		if rows[fmt.Sprintf("w%08d", seq)] == 0 {
			f.lost++
			t.Errorf("acknowledged transaction %d is lost", seq)
		}
	}
	f.acknowledged += len(acked)
	f.cycles++
	return next
}

// TestCrashEngine kills a child process that writes transactions through the engine.
func TestCrashEngine(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("the child's own run")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	var figures crashFigures
	next := 0
	for range cycles(t) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, "TABULA_CRASH_FROM="+strconv.Itoa(next))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		acked := killAfterAcks(t, cmd, out, 1+rng.IntN(60))
		next = figures.verify(t, dir, acked)
	}
	t.Logf("engine: %d cycles, %d transactions acknowledged, %d lost, %d partial",
		figures.cycles, figures.acknowledged, figures.lost, figures.partial)
}

// killAfterAcks reads the child's acknowledgements ("ack <seq>" lines) and kills it with
// SIGKILL after n of them, while it goes on writing; it returns the sequence numbers
// acknowledged before the kill.
func killAfterAcks(t *testing.T, cmd *exec.Cmd, out io.Reader, n int) []int {
	t.Helper()
	var acked []int
	lines := bufio.NewScanner(out)
	for len(acked) < n && lines.Scan() {
		seq, ok := strings.CutPrefix(lines.Text(), "ack ")
		if !ok {
			continue
		}
		s, err := strconv.Atoi(seq)
		require.NoError(t, err)
		acked = append(acked, s)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.Len(t, acked, n, "the child stopped acknowledging before it was killed")
	return acked
}

// TestCrashChild is the child of TestCrashEngine: it writes transactions forever, printing
// "ack <seq>" once each is acknowledged, until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("run by TestCrashEngine")
	}
	seq, err := strconv.Atoi(os.Getenv("TABULA_CRASH_FROM"))
	require.NoError(t, err)
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, crashTable); err != nil && !errors.Is(err, tabula.ErrTableAlreadyExists) {
		t.Fatal(err)
	}
	tbl := db.Table(crashTable)
	for ; ; seq++ {
		if _, err := tbl.SubmitTransaction(ctx, crashActions(seq)); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stdout, "ack %d\n", seq)
	}
}

// TestCrashServe kills `tabula serve` while the Go SDK writes transactions to it.
func TestCrashServe(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("the child's own run")
	}
	bin := filepath.Join(t.TempDir(), "tabula")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tabula")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "building tabula serve")
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	var figures crashFigures
	next := 0
	for range cycles(t) {
		cmd, client := serveCrashTable(t, bin, "--data", dir)

		// The writer acknowledges on a channel; the kill comes while it goes on writing.
		acks := make(chan int)
		go func(seq int) {
			defer close(acks)
			for ; ; seq++ {
				if _, err := client.SubmitTransaction(context.Background(), sdkActions(t, seq), nil); err != nil {
					return // the server is gone
				}
				acks <- seq
			}
		}(next)
		n := 1 + rng.IntN(60)
		var acked []int
		for seq := range acks {
			if len(acked) < n {
				acked = append(acked, seq)
				if len(acked) == n {
					require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				}
			}
		}
		_ = cmd.Wait()
		require.Len(t, acked, n)
		next = figures.verify(t, dir, acked)
	}
	t.Logf("tabula serve: %d cycles, %d transactions acknowledged, %d lost, %d partial",
		figures.cycles, figures.acknowledged, figures.lost, figures.partial)
}

// connectionString reads the banner of tabula serve up to the first connection string.
func connectionString(t *testing.T, out io.Reader) string {
	t.Helper()
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err, "tabula serve printed no connection string")
		if i := strings.Index(line, "DefaultEndpointsProtocol="); i >= 0 {
			return strings.TrimSpace(line[i:])
		}
	}
}

func sdkActions(t *testing.T, seq int) []aztables.TransactionAction {
	var actions []aztables.TransactionAction
	for _, a := range crashActions(seq) {
		e := aztables.EDMEntity{Entity: aztables.Entity{PartitionKey: a.Entity.PartitionKey, RowKey: a.Entity.RowKey},
			Properties: map[string]any{"Seq": aztables.EDMInt64(seq), "Pad": string(a.Entity.Properties["Pad"].(tabula.String))}}
		b, err := json.Marshal(e)
		if err != nil {
			t.Errorf("encoding transaction %d: %v", seq, err) // from the writer's goroutine: no FailNow
		}
		actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: b})
	}
	return actions
}

// serveCrashTable starts bin as `tabula serve` on a loopback port with the extra arguments
// and returns the process and an SDK client of the crash table, created if missing, that
// retries nothing: a refusal is the writer's signal that the server is gone.
func serveCrashTable(t *testing.T, bin string, args ...string) (*exec.Cmd, *aztables.Client) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	conn := connectionString(t, out)
	go func() { _, _ = io.Copy(io.Discard, out) }()
	svc, err := aztables.NewServiceClientFromConnectionString(conn, &aztables.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	require.NoError(t, err)
	client := svc.NewClient(crashTable)
	if _, err := client.CreateTable(context.Background(), nil); err != nil {
		var re *azcore.ResponseError
		require.True(t, errors.As(err, &re) && re.ErrorCode == "TableAlreadyExists", "%v", err)
	}
	return cmd, client
}

// crashRows reads the crash table's transactions back after a kill or a power cut: how many
// entities each holds, by its PartitionKey; each partial one is a test error, and counted.
// next is the sequence number after the newest stored.
func crashRows(t *testing.T, db *tabula.DB) (rows map[string]int, partial, next int) {
	t.Helper()
	rows = map[string]int{}
	for e, err := range db.Table(crashTable).QueryAll(context.Background(), tabula.Query{}) {
		if errors.Is(err, tabula.ErrTableNotFound) {
			break // stopped before the table was durable
		}
		require.NoError(t, err)
		rows[e.PartitionKey]++
	}
	for pk, n := range rows {
		if n != crashPerTxn {
			partial++
			t.Errorf("transaction %s is partial: %d of %d entities", pk, n, crashPerTxn)
		}
		seq, err := strconv.Atoi(pk[1:])
		require.NoError(t, err)
		next = max(next, seq+1)
	}
	return rows, partial, next
}
