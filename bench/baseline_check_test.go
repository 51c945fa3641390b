package bench

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tabuladb/tabula"
)

// TestBaselineMatchesEngine writes entities through the engine, then reads its Badger
// directory raw: the baseline's key and record for the same entity and Timestamp must be
// the engine's bytes exactly, or the baseline would not be doing the engine's work.
func TestBaselineMatchesEngine(t *testing.T) {
	dir := t.TempDir()
	db, err := tabula.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := db.CreateTable(ctx, "Spread") // the first table: ID 1, as the fixtures assume
	if err != nil {
		t.Fatal(err)
	}
	payload, mixed := NewWorkload(ShapePayload, 1), NewWorkload(ShapeMixed, 1)
	all := tabula.Properties{
		"S": tabula.String("text\x00with nul"), "B": tabula.Binary{0, 1, 2}, "T": tabula.Boolean(true),
		"D": tabula.DateTime(time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC)), "F": tabula.Double(math.Inf(-1)),
		"G": tabula.Guid{15: 1}, "I": tabula.Int32(-7), "L": tabula.Int64(math.MaxInt64), "Empty": tabula.Binary{},
	}
	pk := payload.GUID()
	entities := []tabula.Entity{
		payload.Entity(pk, RowKey(payload.RowPrefix(1, 1), 0), 0),
		payload.Entity(pk, RowKey(payload.RowPrefix(1, 1), 1), 1),
		mixed.Entity(pk, RowKey(mixed.RowPrefix(1, 2), 5), 5),
		{PartitionKey: "k\ue000\U0001F600", RowKey: "", Properties: all},
	}
	var ticks []int64
	for _, e := range entities {
		out, err := tbl.Insert(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		ticks = append(ticks, ticksOf(out.Timestamp))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	raw, err := openRaw(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rw, rr := newRecordWriter(), newRecordReader()
	for i, e := range entities {
		key := entityKey(nil, spreadID, e.PartitionKey, e.RowKey)
		want := rw.appendRecord(nil, ticks[i], e.Properties)
		err := raw.View(func(txn *badger.Txn) error {
			item, err := txn.Get(key)
			if err != nil {
				return err
			}
			got, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, want) {
				t.Errorf("entity %d: engine wrote\n%x\nthe baseline writes\n%x", i, got, want)
			}
			var rec rawRecord
			if err := rr.decode(got, &rec); err != nil {
				t.Errorf("entity %d: baseline cannot decode the engine's record: %v", i, err)
			}
			if rec.ticks != ticks[i] || len(rec.props) != len(e.Properties) {
				t.Errorf("entity %d: decoded %d ticks and %d properties, want %d and %d",
					i, rec.ticks, len(rec.props), ticks[i], len(e.Properties))
			}
			if gotPK, gotRK, err := splitKey(key); err != nil || gotPK != e.PartitionKey || gotRK != e.RowKey {
				t.Errorf("entity %d: key decodes to %q, %q, %v", i, gotPK, gotRK, err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("entity %d (%q, %q): %v", i, e.PartitionKey, e.RowKey, err)
		}
	}
}

// TestWorkloadFilters checks that each shape's filter matches exactly the entities
// Shape.Matches says, through the engine and through the baseline's predicate.
func TestWorkloadFilters(t *testing.T) {
	for _, s := range []Shape{ShapePayload, ShapeMixed} {
		t.Run(s.String(), func(t *testing.T) {
			db, err := tabula.OpenInMemory(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			tbl, err := db.CreateTable(ctx, "Filters")
			if err != nil {
				t.Fatal(err)
			}
			w := NewWorkload(s, 2)
			pk, prefix := w.GUID(), w.RowPrefix(1, 1)
			const n = 2000
			want := 0
			rw, rr := newRecordWriter(), newRecordReader()
			for i := range n {
				e := w.Entity(pk, RowKey(prefix, i), i)
				if _, err := tbl.Insert(ctx, e); err != nil {
					t.Fatal(err)
				}
				var rec rawRecord
				if err := rr.decode(rw.appendRecord(nil, 1, e.Properties), &rec); err != nil {
					t.Fatal(err)
				}
				if rec.matches(s) != s.Matches(i) {
					t.Fatalf("entity %d: baseline predicate says %v", i, rec.matches(s))
				}
				if s.Matches(i) {
					want++
				}
			}
			got := 0
			for _, err := range tbl.QueryAll(ctx, tabula.Query{Filter: s.Filter()}) {
				if err != nil {
					t.Fatal(err)
				}
				got++
			}
			if got != want || want != n/100 {
				t.Errorf("filter %q matched %d entities, want %d (1%% of %d)", s.Filter(), got, want, n)
			}
		})
	}
}

func TestRowKey(t *testing.T) {
	if got := RowKey("Job0001_VM01_W001_", 42); got != "Job0001_VM01_W001_0000000042" {
		t.Errorf("RowKey = %q", got)
	}
	if RowKey("p", 9) >= RowKey("p", 10) {
		t.Error("RowKeys do not sort by index")
	}
}
