package tabula_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/storage"
)

// The import crash test: `import --existing replace` into a table that exists, every other
// time exclusive (most of the file loaded directly, storage.Load), is killed with SIGKILL at
// a random moment (after a random number of its progress reports, or while it
// copies and publishes), again and again; after each kill the table must hold the old
// entities or the new ones, whole. CI runs cycles(t) of it; TABULA_CRASH_CYCLES runs more.

const (
	importCrashChildEnv = "TABULA_IMPORT_CRASH_CHILD"
	importCrashOld      = 1500 // entities of the table before the import
	importCrashNew      = 2250 // entities of the file: the old keys and more
)

func importCrashFile(t *testing.T, dir string) string {
	pad := strings.Repeat("y", 900)
	var b strings.Builder
	b.WriteString(`{"@tabula":"export","version":1}` + "\n" + `{"@tabula":"table","account":"","table":"Crash"}` + "\n")
	for i := range importCrashNew {
		fmt.Fprintf(&b, `{"PartitionKey":"p%02d","RowKey":"r%05d","Timestamp":"2024-01-02T03:04:05Z","Gen":1,"Pad":%q}`+"\n", i/100, i, pad)
	}
	fmt.Fprintf(&b, `{"@tabula":"end","account":"","table":"Crash","entities":%d}`+"\n"+`{"@tabula":"eof","tables":1,"entities":%d}`+"\n", importCrashNew, importCrashNew)
	file := filepath.Join(dir, "crash.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o600))
	return file
}

func TestImportCrash(t *testing.T) {
	if os.Getenv(importCrashChildEnv) != "" {
		t.Skip("the child's own run")
	}
	ctx := context.Background()
	dir := t.TempDir()
	file := importCrashFile(t, t.TempDir())
	reset := func() {
		require.NoError(t, os.RemoveAll(dir))
		db, err := tabula.Open(dir, nil)
		require.NoError(t, err)
		tbl, err := db.CreateTable(ctx, "Crash")
		require.NoError(t, err)
		for i := range importCrashOld {
			_, err := tbl.Insert(ctx, tabula.Entity{PartitionKey: fmt.Sprintf("p%02d", i/100), RowKey: fmt.Sprintf("r%05d", i),
				Properties: tabula.Properties{"Gen": tabula.Int32(0), "Pad": tabula.String(strings.Repeat("x", 900))}})
			require.NoError(t, err)
		}
		require.NoError(t, db.Close())
	}
	rng := rand.New(rand.NewPCG(3, 4))
	seen := map[int]int{}
	for cycle := range cycles(t) {
		reset()
		cmd := exec.Command(os.Args[0], "-test.run=^TestImportCrashChild$")
		// Every other cycle imports exclusively, loading most of the file directly.
		cmd.Env = append(os.Environ(), importCrashChildEnv+"="+dir, "TABULA_IMPORT_CRASH_FILE="+file,
			"TABULA_IMPORT_CRASH_EXCLUSIVE="+strconv.FormatBool(cycle%2 == 1))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		// The child reports every 250 entities and at the table's end: 10 reports, then it
		// copies the stored entities and publishes. Kill after 1 to 11 of them (11: after
		// the last, unless it is done).
		kill := 1 + rng.IntN(11)
		lines := bufio.NewScanner(out)
		for n := 0; n < kill && lines.Scan() && lines.Text() != "done"; {
			if strings.HasPrefix(lines.Text(), "progress ") {
				n++
			}
		}
		// Then a random moment more: the kill lands anywhere in the staging, the copy of the
		// stored entities or the publishing (this is where the crash is, not a wait for one).
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		gen := importCrashVerify(t, dir)
		seen[gen]++
	}
	t.Logf("import crash: %d cycles left the old table, %d the new one", seen[0], seen[1])
}

// importCrashVerify opens dir and checks the table is the old one or the new one, whole,
// returning which (0 or 1).
func importCrashVerify(t *testing.T, dir string) int {
	t.Helper()
	ctx := context.Background()
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	require.NoError(t, db.Check(ctx), "the database's invariants")
	gens := map[int32]int{}
	for e, err := range db.Table("Crash").QueryAll(ctx, tabula.Query{}) {
		require.NoError(t, err)
		gens[int32(e.Properties["Gen"].(tabula.Int32))]++
	}
	switch {
	case len(gens) == 1 && gens[0] == importCrashOld:
		return 0
	case len(gens) == 1 && gens[1] == importCrashNew:
		return 1
	}
	t.Fatalf("the table is neither the old one nor the new one: entities by generation %v", gens)
	return -1
}

// TestImportCrashChild is the child of TestImportCrash: it imports the file, replacing the
// entities that exist, printing "progress <entities>" at each report, until it is killed.
func TestImportCrashChild(t *testing.T) {
	dir := os.Getenv(importCrashChildEnv)
	if dir == "" {
		t.Skip("run by TestImportCrash")
	}
	// The smallest budget makes small transactions, so that every phase spans many.
	db, err := tabula.Open(dir, &tabula.Options{MemoryBudget: storage.MinMemoryBudget})
	require.NoError(t, err)
	f, err := os.Open(os.Getenv("TABULA_IMPORT_CRASH_FILE"))
	require.NoError(t, err)
	defer f.Close()
	exclusive := os.Getenv("TABULA_IMPORT_CRASH_EXCLUSIVE") == "true"
	if exclusive {
		defer tabula.SetImportLoadFrom(300)()
	}
	_, err = db.Import(context.Background(), f, &tabula.ImportOptions{Existing: tabula.ExistingReplace, ProgressEvery: 250, Exclusive: exclusive,
		Progress: func(p tabula.Progress) error {
			fmt.Fprintln(os.Stdout, "progress "+strconv.FormatInt(p.Entities, 10))
			return nil
		}})
	assert.NoError(t, err)
	fmt.Fprintln(os.Stdout, "done")
	select {} // until killed
}
