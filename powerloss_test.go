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
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/lazyfs"
	"github.com/tabuladb/tabula/storage"
)

// The power-loss test: as the crash test (crash_test.go), a process writing transactions
// is killed at random moments, but its directory is on lazyfs (internal/lazyfs), a FUSE file
// system that, at each kill, also loses every write no fsync made durable, as a power cut or
// a kernel crash does (the kill -9 of the crash test leaves the page cache, and with it
// every acknowledged write, intact). After each cut the directory must open and pass
// DB.Check, hold every transaction whole or not at all, and, with SyncWrites, hold every
// write acknowledged before the cut. Without SyncWrites losses are expected and measured:
// the window is how long before the cut the oldest lost acknowledgement came.
//
// Without SyncWrites the engine's writer paces itself (a transaction every powerPace, up to
// powerPacedTxns before the cut), so that the window is measured across the store's
// background syncs (every second); otherwise writers write flat out.
//
// Each mode runs powerCuts cuts (3 by default, 1 with -short); CI sets TABULA_POWER_CUTS=20.
// The test needs FUSE (/dev/fuse, and fusermount3 when not root): without it, it skips,
// unless CI is set. TABULA_POWER_CUTS=200 go test -run TestPowerLoss -v for a longer run;
// TABULA_POWER_STRICT=1 for lazyfs's strict model of names (see internal/lazyfs).

const (
	powerChildEnv  = "TABULA_POWER_CHILD"
	powerPace      = 5 * time.Millisecond
	powerPacedTxns = 600
	powerFill      = 4000 // under the smallest budget's value threshold (storage.BadgerOptions)
)

// powerActions is transaction seq: crashActions, and every fourth one with an entity too
// large for the store's LSM tree, whose value goes to its value log. Every entity carries
// powerFill bytes more, still kept in the tree, so that Badger's memtables fill and are
// written out as tables while the test runs: a table pointing at value-log bytes that no
// fsync has made durable yet is what a power cut must not leave behind.
func powerActions(seq int) []tabula.Action {
	actions := crashActions(seq)
	for _, a := range actions {
		a.Entity.Properties["Fill"] = tabula.String(strings.Repeat("f", powerFill))
	}
	if seq%4 == 0 {
		props := actions[0].Entity.Properties
		for i := range 3 {
			props[fmt.Sprintf("Big%d", i)] = tabula.String(strings.Repeat(strconv.Itoa(i), 30000))
		}
	}
	return actions
}

// powerSDKActions is powerActions for the Go SDK.
func powerSDKActions(t *testing.T, seq int) []aztables.TransactionAction {
	var actions []aztables.TransactionAction
	for _, a := range powerActions(seq) {
		props := map[string]any{"Seq": aztables.EDMInt64(seq)}
		for k, v := range a.Entity.Properties {
			if s, ok := v.(tabula.String); ok {
				props[k] = string(s)
			}
		}
		b, err := json.Marshal(aztables.EDMEntity{
			Entity: aztables.Entity{PartitionKey: a.Entity.PartitionKey, RowKey: a.Entity.RowKey}, Properties: props})
		if err != nil {
			t.Errorf("encoding transaction %d: %v", seq, err) // from the writer's goroutine: no FailNow
		}
		actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: b})
	}
	return actions
}

// powerRun is how many acknowledgements a cut comes after, and how fast they come: paced
// when the loss window is to be measured (see powerPace), else flat out.
func powerRun(rng *rand.Rand, paced bool) (n int, pace time.Duration) {
	if !paced {
		return 1 + rng.IntN(60), 0
	}
	return 1 + rng.IntN(powerPacedTxns), powerPace
}

func powerCuts(t *testing.T) int {
	if s := os.Getenv("TABULA_POWER_CUTS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "TABULA_POWER_CUTS")
		return n
	}
	if testing.Short() {
		return 1
	}
	return 3
}

// powerDisk is a directory on lazyfs: mnt, passing through to backing.
type powerDisk struct {
	fs           *lazyfs.FS
	backing, mnt string
	cutAt        time.Time
	cuts         int
	droppedBytes int64
	droppedNames int
}

func newPowerDisk(t *testing.T) *powerDisk {
	t.Helper()
	if err := lazyfs.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %v (.ci/run installs fuse3)", err)
		}
		t.Skip(err)
	}
	base := t.TempDir()
	d := &powerDisk{backing: filepath.Join(base, "backing"), mnt: filepath.Join(base, "mnt")}
	require.NoError(t, os.Mkdir(d.backing, 0o755))
	require.NoError(t, os.Mkdir(d.mnt, 0o755))
	d.mount(t)
	t.Cleanup(func() {
		if d.fs != nil {
			_ = d.fs.Unmount()
		}
	})
	return d
}

func (d *powerDisk) mount(t *testing.T) {
	t.Helper()
	// TABULA_POWER_STRICT=1 keeps names only through an fsync of their directory, all
	// POSIX promises, rather than through any fsync, as file systems with a journal do.
	fsys, err := lazyfs.Mount(d.backing, d.mnt, &lazyfs.Options{Strict: os.Getenv("TABULA_POWER_STRICT") == "1"})
	require.NoError(t, err)
	d.fs = fsys
}

// cut cuts the power of the disk: what no fsync made durable is gone from now on.
func (d *powerDisk) cut() {
	d.cutAt = time.Now()
	d.fs.Cut()
}

// unmount, once every writer is dead, unmounts the disk, which leaves in the backing
// directory what the disk held durably at the cut. The test reads it there: a process that
// serves a FUSE file system must not map the files on it into its own memory (as Badger
// does), or a page fault there can deadlock it with its own garbage collector.
func (d *powerDisk) unmount(t *testing.T) {
	t.Helper()
	require.NoError(t, d.fs.Unmount())
	st := d.fs.Stats()
	d.cuts++
	d.droppedBytes += st.DroppedBytes
	d.droppedNames += st.DroppedNames
	d.fs = nil
}

// ack is an acknowledged transaction and when its acknowledgement arrived.
type ack struct {
	seq int
	at  time.Time
}

// powerFigures add up what the cuts saw.
type powerFigures struct {
	cuts, acknowledged, lost, partial int
	window                            time.Duration // the longest loss window of a cut
}

func (f *powerFigures) String() string {
	return fmt.Sprintf("%d cuts, %d transactions acknowledged, %d lost, %d partial, loss window up to %v",
		f.cuts, f.acknowledged, f.lost, f.partial, f.window.Round(time.Millisecond))
}

// verify opens the disk's directory after a cut, checks it and every transaction on it; acknowledged
// transactions lost are errors when mustKeep is set, and measured either way. It returns
// the next sequence number to write.
func (f *powerFigures) verify(t *testing.T, d *powerDisk, acked []ack, mustKeep bool) int {
	t.Helper()
	db, err := tabula.Open(d.backing, nil)
	require.NoError(t, err, "the directory must open after a power cut")
	defer func() { require.NoError(t, db.Close()) }()
	require.NoError(t, db.Check(context.Background()), "the directory must be whole after a power cut")
	rows, partial, next := crashRows(t, db)
	f.partial += partial
	for _, a := range acked {
		if rows[fmt.Sprintf("w%08d", a.seq)] == 0 {
			f.lost++
			f.window = max(f.window, d.cutAt.Sub(a.at))
			if mustKeep {
				t.Errorf("acknowledged transaction %d is lost", a.seq)
			}
		}
	}
	f.acknowledged += len(acked)
	f.cuts++
	return next
}

// readAcks reads the "ack <seq>" lines of a child until it is gone, sending each on acks,
// and closes acks.
func readAcks(out io.Reader, acks chan<- ack) {
	defer close(acks)
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if s, ok := strings.CutPrefix(lines.Text(), "ack "); ok {
			if seq, err := strconv.Atoi(s); err == nil {
				acks <- ack{seq, time.Now()}
			}
		}
	}
}

// collect takes acknowledgements until there are n, then kills the writer (kill), cuts
// the power and takes the rest: every acknowledgement the writer made before it died counts.
func collect(t *testing.T, d *powerDisk, acks <-chan ack, n int, kill func()) []ack {
	t.Helper()
	var acked []ack
	for a := range acks {
		acked = append(acked, a)
		if len(acked) == n {
			kill()
			d.cut()
		}
	}
	require.GreaterOrEqual(t, len(acked), n, "the writer stopped acknowledging before the cut")
	return acked
}

func TestPowerLossEngine(t *testing.T) {
	if os.Getenv(powerChildEnv) != "" {
		t.Skip("the child's own run")
	}
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprintf("SyncWrites=%v", sync), func(t *testing.T) {
			d := newPowerDisk(t)
			rng := rand.New(rand.NewPCG(5, 6))
			var figures powerFigures
			next := 0
			for range powerCuts(t) {
				n, pace := powerRun(rng, !sync)
				cmd := exec.Command(os.Args[0], "-test.run=^TestPowerLossChild$")
				cmd.Env = append(os.Environ(), powerChildEnv+"="+d.mnt, "TABULA_POWER_FROM="+strconv.Itoa(next),
					"TABULA_POWER_SYNC="+strconv.FormatBool(sync), "TABULA_POWER_PACE="+pace.String())
				cmd.Stderr = os.Stderr
				out, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				acks := make(chan ack)
				go readAcks(out, acks)
				acked := collect(t, d, acks, n, func() {
					require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				})
				_ = cmd.Wait()
				d.unmount(t)
				next = figures.verify(t, d, acked, sync)
				d.mount(t)
			}
			t.Logf("engine, SyncWrites=%v: %s; lazyfs undid %d bytes of unsynced writes and %d names",
				sync, &figures, d.droppedBytes, d.droppedNames)
		})
	}
}

// TestPowerLossChild is the child of TestPowerLossEngine: it writes transactions forever,
// printing "ack <seq>" once each is acknowledged, until it is killed.
func TestPowerLossChild(t *testing.T) {
	dir := os.Getenv(powerChildEnv)
	if dir == "" {
		t.Skip("run by TestPowerLossEngine")
	}
	seq, err := strconv.Atoi(os.Getenv("TABULA_POWER_FROM"))
	require.NoError(t, err)
	pace, err := time.ParseDuration(os.Getenv("TABULA_POWER_PACE"))
	require.NoError(t, err)
	// The smallest budget's memtables, which the writes fill and Badger writes out as tables.
	db, err := tabula.Open(dir, &tabula.Options{SyncWrites: os.Getenv("TABULA_POWER_SYNC") == "true",
		MemoryBudget: storage.MinMemoryBudget})
	require.NoError(t, err)
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, crashTable); err != nil && !errors.Is(err, tabula.ErrTableAlreadyExists) {
		t.Fatal(err)
	}
	tbl := db.Table(crashTable)
	for ; ; seq++ {
		if _, err := tbl.SubmitTransaction(ctx, powerActions(seq)); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stdout, "ack %d\n", seq)
		time.Sleep(pace) // the writer's pace, not a wait for behaviour
	}
}

func TestPowerLossServe(t *testing.T) {
	if os.Getenv(powerChildEnv) != "" {
		t.Skip("the child's own run")
	}
	bin := filepath.Join(t.TempDir(), "tabula")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tabula")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "building tabula serve")
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync-writes=%v", sync), func(t *testing.T) {
			d := newPowerDisk(t)
			rng := rand.New(rand.NewPCG(7, 8))
			var figures powerFigures
			next := 0
			for range powerCuts(t) {
				n, pace := powerRun(rng, false)
				args := []string{"--data", d.mnt}
				if sync {
					args = append(args, "--sync-writes")
				}
				cmd, client := serveCrashTable(t, bin, args...)
				acks := make(chan ack)
				go func(seq int) {
					defer close(acks)
					for ; ; seq++ {
						if _, err := client.SubmitTransaction(context.Background(), powerSDKActions(t, seq), nil); err != nil {
							return // the server is gone
						}
						acks <- ack{seq, time.Now()}
						time.Sleep(pace) // the writer's pace, not a wait for behaviour
					}
				}(next)
				acked := collect(t, d, acks, n, func() {
					require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				})
				_ = cmd.Wait()
				d.unmount(t)
				next = figures.verify(t, d, acked, sync)
				d.mount(t)
			}
			t.Logf("tabula serve, sync-writes=%v: %s; lazyfs undid %d bytes of unsynced writes and %d names",
				sync, &figures, d.droppedBytes, d.droppedNames)
		})
	}
}
