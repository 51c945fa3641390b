package tabula

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// permutedFile is bulkFile's table of n entities with entity at(i) on the file's i-th
// entity line (line 3+i).
func permutedFile(n int, at func(i int) int) string {
	lines := strings.SplitAfter(bulkFile(n, inOrder), "\n")
	out := append([]string(nil), lines[:2]...)
	for i := range n {
		out = append(out, lines[2+at(i)])
	}
	return strings.Join(append(out, lines[2+n:]...), "")
}

// shuffled puts a table of n entities out of key order throughout.
func shuffled(n int) func(i int) int { return func(i int) int { return i * 7919 % n } }

// sortFiles lists the sorter's files in dir.
func sortFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, sortFilePattern))
	require.NoError(t, err)
	return names
}

// setSortRun makes the sorter's runs size bytes; it returns the undo.
func setSortRun(size int) func() {
	old := sortRunBytes
	sortRunBytes = size
	return func() { sortRunBytes = old }
}

// tableRows lists a table's entities as PartitionKey, RowKey and Payload.
func tableRows(t *testing.T, db *DB, name string) []string {
	t.Helper()
	var rows []string
	for e, err := range db.Table(name).QueryAll(context.Background(), Query{}) {
		require.NoError(t, err)
		rows = append(rows, fmt.Sprint(e.PartitionKey, e.RowKey, e.Properties["Payload"]))
	}
	return rows
}

// An exclusive import of a table out of key order sorts it, in runs written to the
// database's directory, and loads it directly: the table is what the ordinary way makes of
// the file, the database checks out, and the sorter's files are gone.
func TestImportExclusiveSortsUnsorted(t *testing.T) {
	defer SetImportLoadFrom(500)()
	defer setSortRun(64 << 10)() // about 60 entities a run
	loads := countLoads(t)
	ctx := context.Background()
	const n = 2400
	file := permutedFile(n, shuffled(n))
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	runs := 0
	p, err := db.Import(ctx, strings.NewReader(file), &ImportOptions{Exclusive: true, ProgressEvery: 1000, Progress: func(Progress) error {
		runs = max(runs, len(sortFiles(t, dir)))
		return nil
	}})
	require.NoError(t, err)
	assert.Equal(t, int64(n), p.Entities)
	assert.Equal(t, int64(1), loads.Load())
	assert.Greater(t, runs, 10)
	assert.Empty(t, sortFiles(t, dir))

	ordinary := openStore(t, nil)
	_, err = ordinary.Import(ctx, strings.NewReader(file), nil)
	require.NoError(t, err)
	want := tableRows(t, ordinary, "Bulk")
	require.Len(t, want, n)
	assert.Equal(t, want, tableRows(t, db, "Bulk"))

	require.NoError(t, db.Close())
	db, err = Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Check(ctx))
	assert.Equal(t, want, tableRows(t, db, "Bulk"))
}

// A key twice in a table being sorted is refused with the error the ordinary way gives
// (the repeat first in the file, though another comes first in key order), leaving no
// table and none of the sorter's files; under BestEffort the repeat is skipped, as the
// ordinary way skips it. A cancelled sort leaves no file either.
func TestImportExclusiveSortRefusesRepeats(t *testing.T) {
	defer SetImportLoadFrom(500)()
	defer setSortRun(64 << 10)()
	ctx := context.Background()
	const n = 2400
	perm := shuffled(n)
	file := permutedFile(n, func(i int) int {
		switch i {
		case n - 5:
			return perm(2) // a repeat of line 5's entity, the first in the file
		case n - 1:
			return perm(n - 300) // a repeat of an entity before line 5's in key order
		}
		return perm(i)
	})
	ordinary := openStore(t, nil)
	_, wantErr := ordinary.Import(ctx, strings.NewReader(file), nil)
	var ie *ImportError
	require.ErrorAs(t, wantErr, &ie)
	require.Equal(t, 3+n-5, ie.Line)
	assert.Contains(t, wantErr.Error(), "is in the table twice")

	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Import(ctx, strings.NewReader(file), &ImportOptions{Exclusive: true})
	require.Error(t, err)
	assert.Equal(t, wantErr.Error(), err.Error())
	assert.ErrorIs(t, err, ErrInvalidInput)
	assert.Empty(t, sortFiles(t, dir))
	assert.Equal(t, 0, entityKeys(t, db))

	want, err := ordinary.Import(ctx, strings.NewReader(file), &ImportOptions{BestEffort: true})
	require.NoError(t, err)
	got, err := db.Import(ctx, strings.NewReader(file), &ImportOptions{Exclusive: true, BestEffort: true})
	require.NoError(t, err)
	assert.Equal(t, int64(2), got.Skipped)
	assert.Equal(t, want.Skipped, got.Skipped)
	assert.Equal(t, want.Entities, got.Entities)
	assert.Equal(t, tableRows(t, ordinary, "Bulk"), tableRows(t, db, "Bulk"))
	assert.Empty(t, sortFiles(t, dir))

	cctx, cancel := context.WithCancel(ctx)
	_, err = db.Import(cctx, strings.NewReader(strings.ReplaceAll(permutedFile(n, perm), `"Bulk"`, `"Other"`)), &ImportOptions{Exclusive: true, ProgressEvery: 1500,
		Progress: func(Progress) error {
			assert.NotEmpty(t, sortFiles(t, dir))
			cancel()
			return nil
		}})
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, sortFiles(t, dir))
}

// The sorter hands back every entity in key order, those of one key in the order they came
// in, from runs that span several chunks, hold an entity larger than a chunk, and are
// written out or kept in memory.
func TestTableSorter(t *testing.T) {
	dir := t.TempDir()
	s := newTableSorter(dir, 9<<20)
	defer s.close()
	const n = 200
	big := strings.Repeat("b", sortChunk+1)
	var want []string
	for i := range n {
		k := fmt.Sprintf("k%03d", i*7%n)
		record := strings.Repeat("r", 100_000)
		if i == 50 {
			record = big
		}
		require.NoError(t, s.add([]byte(k), []byte(record), i+1, "p"+k))
		want = append(want, k)
	}
	require.NoError(t, s.add([]byte("k005"), []byte("again"), n+1, ""))
	assert.NotEmpty(t, sortFiles(t, dir))
	var got []string
	lines := map[string][]int{}
	require.NoError(t, s.merge(func(e *sortedEntity) error {
		got = append(got, string(e.key))
		lines[string(e.key)] = append(lines[string(e.key)], e.line)
		if e.line == 51 {
			assert.Equal(t, big, string(e.record))
		}
		if e.line <= n {
			assert.Equal(t, "p"+string(e.key), e.path)
		}
		return nil
	}))
	want = append(want, "k005")
	slices.Sort(want)
	assert.Equal(t, want, got)
	require.Len(t, lines["k005"], 2)
	assert.Equal(t, n+1, lines["k005"][1], "the later entity of a key comes after")
	s.close()
	assert.Empty(t, sortFiles(t, dir))
}

// A table whose load has begun and that then leaves key order ends that load and has its
// rest sorted and loaded too: the table is what the ordinary way makes of the file. A
// repeat in the rest, of an entity loaded or of one in the rest, is refused with the
// ordinary way's error (the repeat first in the file), leaving nothing.
func TestImportExclusiveSortsAfterLoad(t *testing.T) {
	defer SetImportLoadFrom(500)()
	defer setSortRun(256 << 10)()
	loads := countLoads(t)
	ctx := context.Background()
	const n = 6000 // the load begins with the first batch, of 2,000 entities
	half := n / 2
	order := func(i int) int {
		if i < half {
			return 2 * i // the even entities in key order
		}
		return 2*((i-half)*7919%half) + 1 // then the odd ones, scattered
	}
	file := permutedFile(n, order)
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	p, err := db.Import(ctx, strings.NewReader(file), &ImportOptions{Exclusive: true})
	require.NoError(t, err)
	assert.Equal(t, int64(n), p.Entities)
	assert.Equal(t, int64(2), loads.Load())
	ordinary := openStore(t, nil)
	_, err = ordinary.Import(ctx, strings.NewReader(file), nil)
	require.NoError(t, err)
	assert.Equal(t, tableRows(t, ordinary, "Bulk"), tableRows(t, db, "Bulk"))
	assert.Empty(t, sortFiles(t, dir))

	for _, c := range []struct {
		name             string
		stored, repeated int // the lines' indexes (i) that repeat a loaded entity and one of the rest
	}{
		{"a loaded entity's repeat first", half + 10, half + 20},
		{"a repeat within the rest first", half + 20, half + 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := permutedFile(n, func(i int) int {
				switch i {
				case c.stored:
					return 2 * 7 // loaded, at i 7
				case c.repeated:
					return order(half + 1)
				}
				return order(i)
			})
			_, wantErr := ordinary.Import(ctx, strings.NewReader(strings.ReplaceAll(file, `"Bulk"`, `"Other"`)), nil)
			var ie *ImportError
			require.ErrorAs(t, wantErr, &ie)
			require.Equal(t, 3+min(c.stored, c.repeated), ie.Line)
			_, err := db.Import(ctx, strings.NewReader(strings.ReplaceAll(file, `"Bulk"`, `"Other"`)), &ImportOptions{Exclusive: true})
			require.Error(t, err)
			assert.Equal(t, wantErr.Error(), err.Error())
			assert.Empty(t, sortFiles(t, dir))
			_, err = db.Table("Other").Get(ctx, "p000", inOrder(0))
			assert.ErrorIs(t, err, ErrTableNotFound)
		})
	}
	assert.Equal(t, n, entityKeys(t, db))
}

// A sorter that cannot write its files fails with an error naming the directory, which
// the import gives the line it was at.
func TestTableSorterFileError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	s := newTableSorter(dir, 1<<10)
	defer s.close()
	var err error
	for i := 0; err == nil && i < 10; i++ {
		err = s.add(fmt.Appendf(nil, "k%d", i), make([]byte, 600), i+1, "")
	}
	require.Error(t, err)
	err = atLine(err, 7)
	assert.Contains(t, err.Error(), "line 7: sorting the table out of key order in the database's directory "+dir+": ")
	assert.ErrorIs(t, err, os.ErrNotExist)
}
