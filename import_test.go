package tabula

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/storage"
)

// The import's bulk path (storage.Bulk) commits a staged table in many transactions, sent
// while the file is still being read. These tests make files large enough for several of
// them (bulkFile's entities take about 1 KiB each; at the smallest memory budget, which
// smallBudget sets, a transaction holds about 600 KiB) and check that whatever stops an
// import midway leaves nothing visible, and, once the drops of what was staged are done,
// nothing in the key space either.

// bulkFile is an interchange file of one table, Bulk, with n entities of about 1 KiB whose
// row keys are rows(i).
func bulkFile(n int, rows func(i int) string) string {
	pad := strings.Repeat("x", 1000)
	var b strings.Builder
	b.WriteString(`{"@tabula":"export","version":1}` + "\n" + `{"@tabula":"table","account":"","table":"Bulk"}` + "\n")
	for i := range n {
		fmt.Fprintf(&b, `{"PartitionKey":"p%03d","RowKey":%q,"Timestamp":"2024-01-02T03:04:05Z","Payload":%q}`+"\n", i/100, rows(i), pad)
	}
	fmt.Fprintf(&b, `{"@tabula":"end","account":"","table":"Bulk","entities":%d}`+"\n"+`{"@tabula":"eof","tables":1,"entities":%d}`+"\n", n, n)
	return b.String()
}

func inOrder(i int) string { return fmt.Sprintf("r%06d", i) }

// entityKeys counts the keys of every table's entities in db's store, after the drops of
// failed imports are done.
func entityKeys(t *testing.T, db *DB) int {
	t.Helper()
	db.background.Wait()
	n := 0
	require.NoError(t, db.store.View(func(tx *storage.Txn) error {
		it := tx.Scan([]byte{prefixEntity}, []byte{prefixEntity + 1})
		defer it.Close()
		for it.Next() {
			n++
		}
		return nil
	}))
	return n
}

// A file cut short and a file with a bad line, each after several bulk commits, change
// nothing: no table, and no staged entity left behind.
func TestImportBulkFailureLeavesNothing(t *testing.T) {
	if bothStores(t, TestImportBulkFailureLeavesNothing) {
		return
	}
	ctx := context.Background()
	db := openStore(t, smallBudget())
	other := createTable(t, db, "Other")
	_, err := other.Insert(ctx, Entity{PartitionKey: "p", RowKey: "r"})
	require.NoError(t, err)

	const n = 2400
	file := bulkFile(n, inOrder)
	lines := strings.SplitAfter(file, "\n")
	cut := strings.Join(lines[:2+n*3/4], "")
	_, err = db.Import(ctx, strings.NewReader(cut), nil)
	var ie *ImportError
	require.ErrorAs(t, err, &ie)
	assert.True(t, ie.Truncated, "%v", err)

	bad := append([]string(nil), lines...)
	bad[2+n*3/4] = strings.Replace(bad[2+n*3/4], `"RowKey"`, `"Bad@odata.type":"Edm.Int64","Bad":"x","RowKey"`, 1)
	_, err = db.Import(ctx, strings.NewReader(strings.Join(bad, "")), nil)
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 3+n*3/4, ie.Line)
	assert.ErrorIs(t, err, ErrInvalidInput)

	_, err = db.Table("Bulk").Get(ctx, "p000", inOrder(0))
	assert.ErrorIs(t, err, ErrTableNotFound)
	assert.Equal(t, 1, entityKeys(t, db), "only Other's entity")

	// The same file, whole, goes in.
	p, err := db.Import(ctx, strings.NewReader(file), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(n), p.Entities)
	assert.Equal(t, 1+n, entityKeys(t, db))
}

// A bulk commit refused for lack of disk space (the space runs out midway through the
// file) fails the import with ErrDiskFull, and nothing becomes visible; once there is space
// again, what was staged is dropped.
func TestImportBulkDiskFull(t *testing.T) {
	if bothStores(t, TestImportBulkDiskFull) {
		return
	}
	if onDisk, _ := storeMode(t); !onDisk {
		t.Skip("the disk reserve is a store on disk's")
	}
	ctx := context.Background()
	var full atomic.Bool
	db := openStore(t, &Options{MemoryBudget: storage.MinMemoryBudget, freeSpace: func() (uint64, error) {
		if full.Load() {
			return 0, nil
		}
		return 1 << 40, nil
	}})
	const n = 2400
	_, err := db.Import(ctx, strings.NewReader(bulkFile(n, inOrder)), &ImportOptions{ProgressEvery: n / 2,
		Progress: func(p Progress) error {
			full.Store(true)
			return nil
		}})
	require.ErrorIs(t, err, ErrDiskFull)
	_, err = db.Table("Bulk").Get(ctx, "p000", inOrder(0))
	assert.ErrorIs(t, err, ErrTableNotFound)
	full.Store(false)
	db = reopenStore(t, db) // the drops refused for lack of space run again
	assert.Equal(t, 0, entityKeys(t, db))
}

// An entity that comes again after the bulk writer has committed its first copy (far
// apart, out of order) is found: the look-up sees what was staged before it.
func TestImportBulkRepeatAcrossCommits(t *testing.T) {
	if bothStores(t, TestImportBulkRepeatAcrossCommits) {
		return
	}
	ctx := context.Background()
	db := openStore(t, smallBudget())
	const n = 2400
	lines := strings.SplitAfter(bulkFile(n, inOrder), "\n")
	lines[2+n-1] = lines[2+10] // the last entity is the eleventh again
	file := strings.Join(lines, "")
	_, err := db.Import(ctx, strings.NewReader(file), nil)
	var ie *ImportError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 2+n, ie.Line)
	assert.Contains(t, err.Error(), "is in the table twice")
	assert.Equal(t, 0, entityKeys(t, db))

	// Best effort leaves the repeat out.
	p, err := db.Import(ctx, strings.NewReader(file), &ImportOptions{BestEffort: true})
	require.NoError(t, err)
	assert.Equal(t, int64(1), p.Skipped)
	assert.Equal(t, int64(n-1), p.Entities)
	assert.Equal(t, n-1, entityKeys(t, db))
}

// Writers to other tables go on while an import runs, and neither gets in the other's
// way (run it with -race).
func TestImportBulkConcurrentWriters(t *testing.T) {
	if bothStores(t, TestImportBulkConcurrentWriters) {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := openStore(t, smallBudget())
	const writers = 4
	tables := make([]*Table, writers)
	for i := range tables {
		tables[i] = createTable(t, db, fmt.Sprintf("Other%d", i))
	}
	var (
		wg       sync.WaitGroup
		inserted [writers]int
		errs     = make(chan error, writers)
		started  = make(chan struct{}, writers)
	)
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				_, err := tables[w].Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprintf("r%06d", i),
					Properties: Properties{"N": Int64(int64(i))}})
				if errors.Is(err, context.Canceled) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				if inserted[w] = i + 1; i == 0 {
					started <- struct{}{}
				}
			}
		})
	}
	for range writers {
		<-started
	}
	const n = 2400
	p, err := db.Import(context.Background(), strings.NewReader(bulkFile(n, inOrder)), nil)
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, err)
	assert.Equal(t, int64(n), p.Entities)
	back := context.Background()
	for w, tb := range tables {
		require.Positive(t, inserted[w])
		count := 0
		for _, err := range tb.QueryAll(back, Query{}) {
			require.NoError(t, err)
			count++
		}
		assert.Equal(t, inserted[w], count, "table %d", w)
	}
	e, err := db.Table("Bulk").Get(back, fmt.Sprintf("p%03d", (n-1)/100), inOrder(n-1))
	require.NoError(t, err)
	assert.Equal(t, String(strings.Repeat("x", 1000)), e.Properties["Payload"])
}

// smallBudget are options with the smallest memory budget, whose small memtables take
// small transactions: a test's import commits many of them without a large file.
func smallBudget() *Options { return &Options{MemoryBudget: storage.MinMemoryBudget} }

// An import into a table that exists copies the staged entities into it in transactions the
// store takes: at the smallest budget a transaction holds about 600 KiB, and each policy
// writes more than that here.
func TestImportIntoExistingTableSpansTransactions(t *testing.T) {
	if bothStores(t, TestImportIntoExistingTableSpansTransactions) {
		return
	}
	ctx := context.Background()
	const n = 1500
	for _, policy := range []Existing{ExistingReplace, ExistingMerge, ExistingSkip} {
		db := openStore(t, smallBudget())
		tbl, err := db.CreateTable(ctx, "Bulk")
		require.NoError(t, err)
		_, err = tbl.Insert(ctx, Entity{PartitionKey: "p000", RowKey: inOrder(0), Properties: Properties{"Old": Int32(1)}})
		require.NoError(t, err)
		p, err := db.Import(ctx, strings.NewReader(bulkFile(n, inOrder)), &ImportOptions{Existing: policy})
		require.NoError(t, err, "policy %v", policy)
		// The entity ExistingSkip keeps as stored is skipped, not imported.
		skipped := int64(0)
		if policy == ExistingSkip {
			skipped = 1
		}
		assert.Equal(t, int64(n)-skipped, p.Entities, "policy %v", policy)
		assert.Equal(t, skipped, p.Skipped, "policy %v", policy)
		assert.Equal(t, n, entityKeys(t, db), "policy %v", policy)
		first, err := tbl.Get(ctx, "p000", inOrder(0))
		require.NoError(t, err)
		_, replaced := first.Properties["Payload"]
		_, kept := first.Properties["Old"]
		assert.Equal(t, policy != ExistingSkip, replaced, "policy %v", policy)
		assert.Equal(t, policy != ExistingReplace, kept, "policy %v", policy)
	}
}

// A merge that would push an entity past the service's 252 properties, two thirds into a
// file, fails the import naming the line, and the table that existed is as it was: the
// import into a table that exists is all or nothing, as into a new one.
func TestImportIntoExistingFailureHalfwayChangesNothing(t *testing.T) {
	if bothStores(t, TestImportIntoExistingFailureHalfwayChangesNothing) {
		return
	}
	ctx := context.Background()
	const n = 3000
	db := openStore(t, smallBudget())
	tbl := createTable(t, db, "Bulk")
	wide := Properties{}
	for i := range 200 {
		wide[fmt.Sprintf("Old%03d", i)] = Int32(int32(i))
	}
	for i := range n {
		props := Properties{"Gen": Int32(0)}
		if i == 2000 {
			props = wide
		}
		_, err := tbl.Insert(ctx, Entity{PartitionKey: fmt.Sprintf("p%03d", i/100), RowKey: inOrder(i), Properties: props})
		require.NoError(t, err)
	}
	var b strings.Builder
	b.WriteString(`{"@tabula":"export","version":1}` + "\n" + `{"@tabula":"table","account":"","table":"Bulk"}` + "\n")
	for i := range n {
		fmt.Fprintf(&b, `{"PartitionKey":"p%03d","RowKey":%q,"Timestamp":"2024-01-02T03:04:05Z","Gen":1`, i/100, inOrder(i))
		if i == 2000 {
			for j := range 60 {
				fmt.Fprintf(&b, `,"New%03d":%d`, j, j)
			}
		}
		b.WriteString("}\n")
	}
	fmt.Fprintf(&b, `{"@tabula":"end","account":"","table":"Bulk","entities":%d}`+"\n"+`{"@tabula":"eof","tables":1,"entities":%d}`+"\n", n, n)

	_, err := db.Import(ctx, strings.NewReader(b.String()), &ImportOptions{Existing: ExistingMerge})
	var ie *ImportError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 2+2000+1, ie.Line, "%v", err)
	assert.Contains(t, err.Error(), "252")
	for e, err := range tbl.QueryAll(ctx, Query{}) {
		require.NoError(t, err)
		if e.RowKey != inOrder(2000) {
			require.Equal(t, Int32(0), e.Properties["Gen"], "%s: the import changed it", e.RowKey)
		}
	}
	assert.Equal(t, n, entityKeys(t, db), "nothing staged is left")

	// The same file replacing: the whole table is the file's, in one step.
	p, err := db.Import(ctx, strings.NewReader(b.String()), &ImportOptions{Existing: ExistingReplace})
	require.NoError(t, err)
	assert.Equal(t, int64(n), p.Entities)
	for e, err := range tbl.QueryAll(ctx, Query{}) {
		require.NoError(t, err)
		require.Equal(t, Int32(1), e.Properties["Gen"], e.RowKey)
	}
	assert.Equal(t, n, entityKeys(t, db), "the replaced data is dropped")
}

// An import replacing a table that exists keeps its access policies, its creation time and
// the writes of handles resolved before it; a file's policies replace the table's.
func TestImportIntoExistingKeepsTheTable(t *testing.T) {
	ctx := context.Background()
	db := openStore(t, nil)
	tbl := createTable(t, db, "Bulk")
	before, err := db.ListTables(ctx, TableQuery{})
	require.NoError(t, err)
	require.NoError(t, tbl.SetAccessPolicies(ctx, []AccessPolicy{{ID: "readers", Permission: "r"}}))
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "stored"})
	require.NoError(t, err)

	_, err = db.Import(ctx, strings.NewReader(bulkFile(3, inOrder)), &ImportOptions{Existing: ExistingFail})
	require.NoError(t, err)
	ps, err := tbl.AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Equal(t, []AccessPolicy{{ID: "readers", Permission: "r"}}, ps)
	after, err := db.ListTables(ctx, TableQuery{})
	require.NoError(t, err)
	assert.Equal(t, before, after)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "later"}) // through the handle resolved before
	require.NoError(t, err)
	n := 0
	for _, err := range tbl.QueryAll(ctx, Query{}) {
		require.NoError(t, err)
		n++
	}
	assert.Equal(t, 5, n)

	withACL := strings.Replace(bulkFile(1, inOrder), `"table":"Bulk"}`, `"table":"Bulk","accessPolicies":[]}`, 1)
	_, err = db.Import(ctx, strings.NewReader(withACL), &ImportOptions{Existing: ExistingReplace})
	require.NoError(t, err)
	ps, err = tbl.AccessPolicies(ctx)
	require.NoError(t, err)
	assert.Empty(t, ps, "the file's policies, none, replace the table's")
}
