package tabulatest

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/wire"
)

// Fixture is a database state that tests start from: built once, on first use, then copied
// for each test in microseconds whatever it holds (tabula.Snapshot.Open), so that every test,
// parallel ones included, gets a copy of its own to write to. A Fixture is safe for
// concurrent use; declare one per package and share it:
//
//	var movies = tabulatest.Seed(func(ctx context.Context, db *tabula.DB) error { … })
//
//	func TestX(t *testing.T) {
//		t.Parallel()
//		srv := tabulatest.NewServer(t, nil, movies) // the seeded tables, for this test alone
//		…
//	}
type Fixture struct {
	build func(context.Context) (*tabula.Snapshot, error)
	once  sync.Once
	snap  *tabula.Snapshot
	err   error
}

// Seed returns a fixture of what seed leaves in a fresh in-memory database. seed runs once,
// when a test first uses the fixture (so a package whose tests do not run pays nothing);
// if it fails, every test using the fixture fails with its error.
func Seed(seed func(ctx context.Context, db *tabula.DB) error) *Fixture {
	return &Fixture{build: func(ctx context.Context) (*tabula.Snapshot, error) {
		db, err := tabula.OpenInMemory(nil)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		if err := seed(ctx, db); err != nil {
			return nil, fmt.Errorf("tabulatest: seeding a fixture: %w", err)
		}
		return db.Snapshot(ctx)
	}}
}

// Tables returns a fixture of tables in the root namespace (the development account's, on a
// server), each created and filled with its entities, in order. Entities of a table are
// written in transactions of up to 100 where they share a PartitionKey, so a large fixture
// is quick to build.
func Tables(tables map[string][]tabula.Entity) *Fixture {
	return Seed(func(ctx context.Context, db *tabula.DB) error {
		names := make([]string, 0, len(tables))
		for name := range tables {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			t, err := db.CreateTable(ctx, name)
			if err != nil {
				return err
			}
			if err := insertAll(ctx, t, tables[name]); err != nil {
				return fmt.Errorf("table %s: %w", name, err)
			}
		}
		return nil
	})
}

// insertAll inserts entities in order, in transactions of consecutive entities sharing a
// PartitionKey.
func insertAll(ctx context.Context, t *tabula.Table, entities []tabula.Entity) error {
	actions := make([]tabula.Action, 0, tabula.MaxTransactionActions)
	flush := func() error {
		if len(actions) == 0 {
			return nil
		}
		_, err := t.SubmitTransaction(ctx, actions)
		actions = actions[:0]
		return err
	}
	for _, e := range entities {
		if len(actions) == tabula.MaxTransactionActions || len(actions) > 0 && actions[0].Entity.PartitionKey != e.PartitionKey {
			if err := flush(); err != nil {
				return err
			}
		}
		actions = append(actions, tabula.Action{Kind: tabula.ActionInsert, Entity: e})
	}
	return flush()
}

// File returns a fixture of a file: an interchange file (tabula export's, gzip-compressed
// when its name ends in .gz) or a fixture a person writes, one JSON document mapping table
// names to arrays of entities (see tabula.DB.Import), imported with opts (nil for the
// defaults). The file's first account's tables go to the root namespace, which is the
// development account's on a server; the tables of every other account of a file exported
// from several go to the namespace of the account's name (Fixture.Open, then
// DB.Namespace), so that accounts holding tables of the same names load side by side.
// opts.Namespaces, when set, decides instead.
func File(path string, opts *tabula.ImportOptions) *Fixture {
	return Seed(func(ctx context.Context, db *tabula.DB) error {
		o := tabula.ImportOptions{}
		if opts != nil {
			o = *opts
		}
		if o.Namespaces == nil {
			first, err := readFile(path, firstAccount)
			if err != nil {
				return err
			}
			o.Namespaces = map[string]string{first: ""}
		}
		_, err := readFile(path, func(r io.Reader) (string, error) {
			_, err := db.Import(ctx, r, &o)
			return "", err
		})
		return err
	})
}

// readFile opens path, through gzip when its name ends in .gz, for read, and names path in
// read's error.
func readFile(path string, read func(io.Reader) (string, error)) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	out, err := read(r)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// firstAccount returns the account of the first table of a file ("" for a fixture's).
func firstAccount(r io.Reader) (string, error) {
	recs := wire.NewRecords(r)
	for {
		rec, err := recs.Next()
		if err == io.EOF {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if rec.Kind == wire.RecordTable {
			return rec.Account, nil
		}
	}
}

// FromSnapshot returns a fixture of an in-memory snapshot taken elsewhere; from a snapshot of
// a database on disk each copy costs a copy of the data.
func FromSnapshot(s *tabula.Snapshot) *Fixture {
	return &Fixture{build: func(context.Context) (*tabula.Snapshot, error) { return s, nil }}
}

// Snapshot returns the fixture's snapshot, building the fixture if no test has yet.
func (f *Fixture) Snapshot() (*tabula.Snapshot, error) {
	f.once.Do(func() {
		f.snap, f.err = f.build(context.Background())
		if f.err == nil && f.snap == nil {
			f.err = errors.New("tabulatest: the fixture has no snapshot")
		}
	})
	return f.snap, f.err
}

// open opens a copy of the fixture.
func (f *Fixture) open(opts *tabula.Options) (*tabula.DB, error) {
	s, err := f.Snapshot()
	if err != nil {
		return nil, err
	}
	return s.Open(opts)
}

// Open returns a database of t's own holding the fixture, opened with opts (nil for the
// defaults) and closed when the test ends: for tests that use the engine directly.
func (f *Fixture) Open(t testing.TB, opts *tabula.Options) *tabula.DB {
	t.Helper()
	db, err := f.open(opts)
	if err != nil {
		t.Fatalf("tabulatest: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("tabulatest: closing the database: %v", err)
		}
	})
	return db
}

// apply makes a fixture an Option: NewServer(t, opts, f) starts on a copy of f.
func (f *Fixture) apply(s *setup) { s.fixture = f }
