package tabula_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// The damage campaign: a database on disk is written and closed (with memtable logs still to
// replay, as after a crash), then copies of it have bits flipped at random offsets of one
// file each, as a failing disk, a bad cable or a stray write would, and each copy is opened
// and read back in full, by scans and by point reads.
const (
	damageTable     = "Damaged"
	damageTxns      = 24  // closed into tables
	damageLateTxns  = 2   // left in the memtable logs
	damageTxnSize   = 100 // entities per transaction
	damageBigEvery  = 40  // every so many entities has values large enough for the value log
	damageFlips     = 3
	damageSeedsEach = 2 // copies per file kind; TABULA_DAMAGE_SEEDS changes it (30 for a long run)
)

// damageKinds are the kinds of file a Badger directory holds.
var damageKinds = []string{".sst", ".vlog", ".mem", "MANIFEST", "KEYREGISTRY", "DISCARD"}

func damageEntity(n int) tabula.Entity {
	props := tabula.Properties{
		"N":   tabula.Int64(int64(n)),
		"Pad": tabula.String(strings.Repeat(strconv.Itoa(n%10), 1024)),
	}
	if n%damageBigEvery == 0 {
		props["Big"] = tabula.Binary(bytes.Repeat([]byte{byte(n)}, 60<<10))
		props["Big2"] = tabula.Binary(bytes.Repeat([]byte{byte(n + 1)}, 60<<10))
	}
	return tabula.Entity{PartitionKey: fmt.Sprintf("p%03d", n/damageTxnSize), RowKey: fmt.Sprintf("r%05d", n), Properties: props}
}

func writeDamageTxns(t *testing.T, db *tabula.DB, from, txns int) {
	ctx := context.Background()
	for txn := from; txn < from+txns; txn++ {
		actions := make([]tabula.Action, damageTxnSize)
		for i := range actions {
			actions[i] = tabula.InsertAction(damageEntity(txn*damageTxnSize + i))
		}
		_, err := db.Table(damageTable).SubmitTransaction(ctx, actions)
		require.NoError(t, err)
	}
}

// damageFile is one file of the undamaged database: its bytes up to the last one that is not
// zero (logs are preallocated), and its size.
type damageFile struct {
	data []byte
	size int64
}

// buildDamageBase writes the database and returns its files as a crash would leave them.
func buildDamageBase(t *testing.T) map[string]damageFile {
	dir := t.TempDir()
	db, err := tabula.Open(dir, nil)
	require.NoError(t, err)
	_, err = db.CreateTable(context.Background(), damageTable)
	require.NoError(t, err)
	writeDamageTxns(t, db, 0, damageTxns)
	require.NoError(t, db.Close())
	db, err = tabula.Open(dir, nil)
	require.NoError(t, err)
	writeDamageTxns(t, db, damageTxns, damageLateTxns)
	files := map[string]damageFile{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		end := len(data)
		for end > 0 && data[end-1] == 0 {
			end--
		}
		files[e.Name()] = damageFile{data: data[:end:end], size: int64(len(data))}
	}
	require.NoError(t, db.Close())
	return files
}

// damageOutcome is what reading one damaged copy back found.
type damageOutcome struct {
	openErr, readErr error
	wrong            []string
	seen             int
}

// touched says the damage was felt: the copy would not open, or a read failed.
func (o damageOutcome) touched() bool { return o.openErr != nil || o.readErr != nil }

// readDamaged opens dir and reads every entity back by a scan and by point reads,
// comparing each with what was written; then it runs Check.
func readDamaged(t *testing.T, dir string, total int) (damageOutcome, error) {
	ctx := context.Background()
	var o damageOutcome
	db, err := tabula.Open(dir, nil)
	if err != nil {
		o.openErr = err
		return o, nil
	}
	defer db.Close()
	tbl := db.Table(damageTable)
	compare := func(got tabula.Entity) {
		n, err := strconv.Atoi(strings.TrimPrefix(got.RowKey, "r"))
		want := damageEntity(n)
		if err != nil || got.PartitionKey != want.PartitionKey || !assert.ObjectsAreEqual(want.Properties, got.Properties) {
			o.wrong = append(o.wrong, got.PartitionKey+"/"+got.RowKey)
		}
	}
	for e, err := range tbl.QueryAll(ctx, tabula.Query{}) {
		if err != nil {
			o.readErr = err
			break
		}
		o.seen++
		compare(e)
	}
	if o.readErr == nil && o.seen != total {
		o.wrong = append(o.wrong, fmt.Sprintf("a scan without error returned %d of %d entities", o.seen, total))
	}
	for n := range total {
		want := damageEntity(n)
		got, err := tbl.Get(ctx, want.PartitionKey, want.RowKey)
		switch {
		case errors.Is(err, tabula.ErrDamaged):
			o.readErr = cmpOr(o.readErr, err)
		case err != nil:
			o.wrong = append(o.wrong, fmt.Sprintf("get %s: %v", want.RowKey, err))
		default:
			compare(got)
		}
	}
	return o, db.Check(ctx)
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func damageSeeds(t *testing.T) int {
	if s := os.Getenv("TABULA_DAMAGE_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "TABULA_DAMAGE_SEEDS")
		return n
	}
	return damageSeedsEach
}

// TestDamageIsNeverData flips bits in copies of a closed database and asserts that no read
// returns a wrong entity or silently leaves one out, nothing panics, damage that a read felt
// is an ErrDamaged naming the file, and Check reports every copy whose damage a read felt.
func TestDamageIsNeverData(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads back dozens of databases")
	}
	if os.Getenv("TABULA_TEST_STORE") == "disk" {
		t.Skip("on disk already: the run with databases in memory covers it")
	}
	base := buildDamageBase(t)
	total := (damageTxns + damageLateTxns) * damageTxnSize
	rng := rand.New(rand.NewPCG(32, 1))
	for _, kind := range damageKinds {
		var names []string
		for name := range base {
			if strings.HasSuffix(name, kind) && base[name].size > 0 {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		require.NotEmpty(t, names, "the database has no %s file to damage", kind)
		var felt, refused, caught, salvaged int
		for seed := range damageSeeds(t) {
			name := names[rng.IntN(len(names))]
			dir := t.TempDir()
			var flips []int
			for file, f := range base {
				data := slices.Clone(f.data)
				if file == name {
					// A file Badger maps ahead of its use (DISCARD) may hold only zeros.
					data = append(data, make([]byte, max(0, min(4096, int(f.size))-len(data)))...)
					for range damageFlips {
						at := rng.IntN(len(data))
						data[at] ^= 1 << rng.IntN(8)
						flips = append(flips, at)
					}
				}
				path := filepath.Join(dir, file)
				require.NoError(t, os.WriteFile(path, data, 0o644))
				require.NoError(t, os.Truncate(path, f.size))
			}
			o, checkErr := readDamaged(t, dir, total)
			what := fmt.Sprintf("seed %d: bits flipped in %s at %v", seed, name, flips)
			assert.Empty(t, o.wrong, "%s: wrong or missing entities served as data", what)
			for _, err := range []error{o.openErr, o.readErr} {
				if err != nil {
					assert.ErrorIs(t, err, tabula.ErrDamaged, what)
					assert.Contains(t, err.Error(), name, "%s: the error names the damaged file", what)
				}
			}
			if os.Getenv("TABULA_DAMAGE_VERBOSE") != "" {
				t.Logf("%s: open: %v; read: %v; check: %v", what, o.openErr, o.readErr, checkErr)
			}
			if o.touched() {
				salvaged += salvageDamaged(t, dir, total, what)
				felt++
				if o.openErr != nil {
					refused++
					caught++ // Open refusing is the report; tabula check opens the same way
				} else if assert.Error(t, checkErr, "%s: Check found nothing, though a read failed", what) {
					caught++
				}
			}
		}
		t.Logf("%-11s %d copies: damage felt by a read in %d (%d refused at Open), reported by Check in %d; salvage kept %d of %d entities",
			kind, damageSeeds(t), felt, refused, caught, salvaged, felt*total)
	}
}

// TestDamagedTableServesTheRest damages a table file that holds only entities, in a
// database of several: the database opens read-only, every entity outside the damaged file
// reads back exactly, every read that needs the file fails with ErrDamaged naming it, and
// writes are refused with ErrDamaged.
func TestDamagedTableServesTheRest(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a database of several table files")
	}
	ctx := context.Background()
	dir := t.TempDir()
	// The smallest budget has the smallest memtables, so that 14 MiB make several files.
	small := &tabula.Options{MemoryBudget: 256 << 20}
	db, err := tabula.Open(dir, small)
	require.NoError(t, err)
	_, err = db.CreateTable(ctx, damageTable)
	require.NoError(t, err)
	const txns = 140 // about 14 MiB: several memtables' worth, so several table files
	for txn := 0; txn < txns; txn += 10 {
		writeDamageTxns(t, db, txn, 10)
	}
	require.NoError(t, db.Close())
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	slices.Sort(ssts)
	require.GreaterOrEqual(t, len(ssts), 3, "the database needs table files holding only entities")
	// The first file holds the catalog, the last the clock saved at Close: one between
	// holds entities only.
	victim := ssts[len(ssts)/2]
	data, err := os.ReadFile(victim)
	require.NoError(t, err)
	data[len(data)/4] ^= 0x10
	require.NoError(t, os.WriteFile(victim, data, 0o644))

	db, err = tabula.Open(dir, small)
	require.NoError(t, err, "a damaged table of entities leaves the rest readable")
	defer db.Close()
	tbl := db.Table(damageTable)
	var good, refused int
	for n := range txns * damageTxnSize {
		want := damageEntity(n)
		got, err := tbl.Get(ctx, want.PartitionKey, want.RowKey)
		if err != nil {
			require.ErrorIs(t, err, tabula.ErrDamaged)
			require.Contains(t, err.Error(), filepath.Base(victim))
			refused++
			continue
		}
		require.Equal(t, want.Properties, got.Properties)
		good++
	}
	assert.NotZero(t, refused, "reads of the damaged file's entities fail")
	assert.NotZero(t, good, "reads of every other entity answer")
	_, err = tbl.Insert(ctx, damageEntity(txns*damageTxnSize))
	assert.ErrorIs(t, err, tabula.ErrDamaged, "writes are refused")
	checkErr := db.Check(ctx)
	require.ErrorIs(t, checkErr, tabula.ErrDamaged)
	assert.Contains(t, checkErr.Error(), filepath.Base(victim))
	assert.Contains(t, checkErr.Error(), "tabula salvage")
	t.Logf("%d entities read back, %d refused for %s", good, refused, filepath.Base(victim))
}

// salvageDamaged salvages the damaged copy in dir and checks that every entity in the new
// database is exactly what was written; it returns how many there are.
func salvageDamaged(t *testing.T, dir string, total int, what string) int {
	ctx := context.Background()
	to := filepath.Join(t.TempDir(), "salvaged")
	r, err := tabula.Salvage(ctx, dir, to)
	if !assert.NoError(t, err, "%s: salvage", what) {
		return 0
	}
	if r.Problems != nil {
		// What was lost can leave the rest inconsistent (entities whose table's catalog
		// entry was in an unreadable file): Check says so, and Lost says why.
		assert.NotEmpty(t, r.Lost, "%s: the salvaged database fails Check (%v), and nothing says what was lost", what, r.Problems)
	}
	db, err := tabula.Open(to, nil)
	require.NoError(t, err, what)
	defer db.Close()
	n := 0
	for e, err := range db.Table(damageTable).QueryAll(ctx, tabula.Query{}) {
		if errors.Is(err, tabula.ErrTableNotFound) && len(r.Lost) > 0 {
			break
		}
		require.NoError(t, err, what)
		i, err := strconv.Atoi(strings.TrimPrefix(e.RowKey, "r"))
		require.NoError(t, err, what)
		require.Equal(t, damageEntity(i).Properties, e.Properties, "%s: salvaged entity %s", what, e.RowKey)
		n++
	}
	if n < total {
		assert.NotEmpty(t, r.Lost, "%s: %d entities were not salvaged, and nothing says why", what, total-n)
	}
	assert.GreaterOrEqual(t, r.Entities, n, what)
	return n
}
