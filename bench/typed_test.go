package bench

import (
	"bytes"
	"cmp"
	"fmt"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/tabuladb/tabula"
	twire "github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
)

// Typed entities (tabula.GetAs, tabula.QueryAs) against the same work on the raw store: the
// record read and decoded with msgpack straight into the same struct, its keys, Timestamp
// and ETag set. Sub-benchmarks: engine (the typed call), and badger (and btree in memory). The map-based
// calls the typed ones replace are BenchmarkPointGet/engine and BenchmarkPartitionScan/engine,
// run in the same command (BENCHMARKS.md).

// payloadRow is the payload shape's entity as a struct.
type payloadRow struct {
	PartitionKey string
	RowKey       string
	Timestamp    time.Time
	ETag         tabula.ETag
	Payload      string
}

// mixedRow is the mixed shape's entity as a struct.
type mixedRow struct {
	PartitionKey string
	RowKey       string
	Timestamp    time.Time
	ETag         tabula.ETag
	Name         string
	Count        int32
	Score        float64
	Created      time.Time
	ID           tabula.Guid `tabula:"Id"`
}

// rawRow is what the baseline decodes a record into: one of the two structs.
type rawRow interface {
	// version sets the keys, Timestamp and ETag.
	version(pk, rk string, ticks int64)
	// property decodes the value of the named property of type code from d.
	property(d *msgpack.Decoder, name string, code uint8) error
}

func (r *payloadRow) version(pk, rk string, ticks int64) {
	r.PartitionKey, r.RowKey, r.Timestamp, r.ETag = pk, rk, odata.TimeFromTicks(ticks), etagOf(ticks)
}

func (r *mixedRow) version(pk, rk string, ticks int64) {
	r.PartitionKey, r.RowKey, r.Timestamp, r.ETag = pk, rk, odata.TimeFromTicks(ticks), etagOf(ticks)
}

func etagOf(ticks int64) tabula.ETag {
	var buf [64]byte
	return tabula.ETag(twire.AppendETag(buf[:0], ticks))
}

func (r *payloadRow) property(d *msgpack.Decoder, name string, code uint8) (err error) {
	if name == "Payload" && code == codeString {
		r.Payload, err = d.DecodeString()
		return err
	}
	return d.Skip()
}

func (r *mixedRow) property(d *msgpack.Decoder, name string, code uint8) (err error) {
	switch {
	case name == "Name" && code == codeString:
		r.Name, err = d.DecodeString()
	case name == "Count" && code == codeInt32:
		r.Count, err = d.DecodeInt32()
	case name == "Score" && code == codeDouble:
		r.Score, err = d.DecodeFloat64()
	case name == "Created" && code == codeDateTime:
		var ticks int64
		ticks, err = d.DecodeInt64()
		r.Created = odata.TimeFromTicks(ticks)
	case name == "Id" && code == codeGuid:
		var g []byte
		if g, err = d.DecodeBytes(); err == nil && len(g) != 16 {
			err = errBadRecord
		}
		r.ID = tabula.Guid(g)
	default:
		err = d.Skip()
	}
	return err
}

// decodeRow decodes a record straight into dst, as the engine's typed read does: every
// property, its value into the field of its name.
func decodeRow[R rawRow](rr *recordReader, v []byte, pk, rk string, dst R) error {
	ticks, err := rr.ticks(v)
	if err != nil {
		return err
	}
	d := rr.dec
	n, err := d.DecodeArrayLen()
	if err != nil || n < 0 || n > tabula.MaxProperties {
		return errBadRecord
	}
	for range n {
		name, err := d.DecodeString()
		if err != nil {
			return err
		}
		code, err := d.DecodeUint8()
		if err != nil {
			return err
		}
		if err := dst.property(d, name, code); err != nil {
			return err
		}
	}
	if rr.r.Len() != 0 {
		return errBadRecord
	}
	dst.version(pk, rk, ticks)
	return nil
}

// BenchmarkTypedPointGet is BenchmarkPointGet into a struct.
func BenchmarkTypedPointGet(b *testing.B) {
	if shape == ShapeMixed {
		benchTypedPointGet[mixedRow, *mixedRow](b)
	} else {
		benchTypedPointGet[payloadRow, *payloadRow](b)
	}
}

var sinkRow any

func benchTypedPointGet[T any, R interface {
	*T
	rawRow
}](b *testing.B) {
	fx := sharedFixture(b)
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		markCPU(b)
		for b.Loop() {
			k := fx.keys[n%len(fx.keys)]
			v, err := tabula.GetAs[T](ctx, fx.spread, k.pk, k.rk)
			if err != nil {
				b.Fatal(err)
			}
			sinkRow = &v
			n++
		}
		reportRate(b, n, "entities/s")
	})
	for _, base := range baselines(fx) {
		b.Run(base.name, func(b *testing.B) {
			// A read-only transaction (the committed tree, in memory), one Get, and the record
			// decoded into a new struct, as GetAs returns one.
			b.ReportAllocs()
			rr := newRecordReader()
			var key []byte
			n := 0
			markCPU(b)
			for b.Loop() {
				v, err := rawGetRow[T, R](base, rr, &key, fx.keys[n%len(fx.keys)])
				if err != nil {
					b.Fatal(err)
				}
				sinkRow = v
				n++
			}
			reportRate(b, n, "entities/s")
		})
	}
	// interleaved: the engine's reads and the first baseline's in turn, a batch of keys
	// each, the one to go first alternating, so that the load of a shared machine, which
	// moves between sub-benchmarks run one after the other, falls on both alike. It reports
	// the engine's speed as a fraction of the baseline's: the baseline's time ÷ the engine's.
	b.Run("interleaved", func(b *testing.B) {
		const batch = 64
		base := baselines(fx)[len(baselines(fx))-1] // btree in memory, else badger
		rr := newRecordReader()
		var key []byte
		var engineTime, rawTime time.Duration
		keys := make([]keyPair, batch)
		n := 0
		for b.Loop() {
			for i := range keys {
				keys[i] = fx.keys[(n+i)%len(fx.keys)]
			}
			for turn := range 2 {
				engine := (turn == 0) == ((n/batch)%2 == 0)
				start := time.Now()
				for _, k := range keys {
					var err error
					if engine {
						var v T
						v, err = tabula.GetAs[T](ctx, fx.spread, k.pk, k.rk)
						sinkRow = &v
					} else {
						sinkRow, err = rawGetRow[T, R](base, rr, &key, k)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if engine {
					engineTime += time.Since(start)
				} else {
					rawTime += time.Since(start)
				}
			}
			n += batch
		}
		b.ReportMetric(float64(rawTime)/float64(engineTime), "engine/"+base.name)
	})
}

// rawGetRow reads the entity of k from base as the baselines of BenchmarkTypedPointGet do,
// into a new struct; key is a buffer for its key.
func rawGetRow[T any, R interface {
	*T
	rawRow
}](base baseline, rr *recordReader, key *[]byte, k keyPair) (*T, error) {
	*key = entityKey((*key)[:0], spreadID, k.pk, k.rk)
	v := new(T)
	decode := func(rec []byte) error { return decodeRow(rr, rec, k.pk, k.rk, R(v)) }
	if base.bt != nil {
		rec, ok := btreeGet(base.bt.view(), *key)
		if !ok {
			return nil, errNotFound
		}
		return v, decode(rec)
	}
	err := base.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(*key)
		if err != nil {
			return err
		}
		return item.Value(decode)
	})
	return v, err
}

// BenchmarkTypedPartitionScan is BenchmarkPartitionScan into structs: one 1,000-entity page
// of the 100,000-entity partition per operation, resuming where the last page ended.
func BenchmarkTypedPartitionScan(b *testing.B) {
	if shape == ShapeMixed {
		benchTypedPartitionScan[mixedRow, *mixedRow](b)
	} else {
		benchTypedPartitionScan[payloadRow, *payloadRow](b)
	}
}

func benchTypedPartitionScan[T any, R interface {
	*T
	rawRow
}](b *testing.B) {
	fx := sharedFixture(b)
	starts := pageStarts(fx)
	filter := partitionFilter(fx.deepPK)
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		rows := make([]T, 0, tabula.MaxEntitiesPerPage)
		n, p := 0, 0
		markCPU(b)
		for b.Loop() {
			rows = rows[:0]
			q := tabula.Query{Filter: filter, Continuation: starts[p%len(starts)]}
			for v, err := range tabula.QueryAs[T](ctx, fx.deep, q) {
				if err != nil {
					b.Fatal(err)
				}
				if rows = append(rows, v); len(rows) == tabula.MaxEntitiesPerPage {
					break
				}
			}
			if len(rows) != tabula.MaxEntitiesPerPage {
				b.Fatalf("page of %d entities", len(rows))
			}
			n += len(rows)
			p++
		}
		sinkRow = rows
		reportRate(b, n, "entities/s")
	})
	for _, base := range baselines(fx) {
		b.Run(base.name, func(b *testing.B) {
			// One page: in a read-only transaction (on the committed tree, in memory), seek to
			// the resume key, decode 1,000 keys and records into a page of structs, and keep the
			// next key as the place to resume.
			b.ReportAllocs()
			prefix := partitionPrefix(nil, deepID, fx.deepPK)
			rr := newRecordReader()
			resume := prefix
			rows := make([]T, tabula.MaxEntitiesPerPage)
			n := 0
			markCPU(b)
			for b.Loop() {
				clear(rows)
				got, next, err := scanRows[T, R](base, prefix, resume, rows, rr)
				if err != nil {
					b.Fatal(err)
				}
				if got != len(rows) {
					b.Fatalf("page of %d entities", got)
				}
				n += got
				if resume = next; resume == nil {
					resume = prefix
				}
				sinkRow = rows
			}
			reportRate(b, n, "entities/s")
		})
	}
}

// pageStarts are the continuations of the pages of the deep partition: QueryAs follows
// continuations itself, and each operation starts it at a page's first entity, with the
// token the engine's pages end with.
func pageStarts(fx *readFixture) []tabula.Continuation {
	starts := make([]tabula.Continuation, deepRows/tabula.MaxEntitiesPerPage)
	for p := range starts {
		if p > 0 {
			starts[p] = tabula.Continuation{NextPartitionKey: twire.EncodeToken(fx.deepPK),
				NextRowKey: twire.EncodeToken(RowKey(fx.deepPref, p*tabula.MaxEntitiesPerPage))}
		}
	}
	return starts
}

// BenchmarkTypedRemotePage is QueryAs through package remote, against tabula serve in
// process (bench/remote_test.go): typed, which decodes each response's JSON straight into
// structs, and map, what QueryAs did before it (QueryAll's Entities, then EntityAs). One
// 1,000-entity page of the 100,000-entity partition per operation.
func BenchmarkTypedRemotePage(b *testing.B) {
	if shape == ShapeMixed {
		benchTypedRemotePage[mixedRow](b)
	} else {
		benchTypedRemotePage[payloadRow](b)
	}
}

func benchTypedRemotePage[T any](b *testing.B) {
	fx := sharedFixture(b)
	tbl := remoteTable(b, fx.engine, "Deep")
	starts := pageStarts(fx)
	filter := partitionFilter(fx.deepPK)
	for _, typed := range []bool{true, false} {
		b.Run(map[bool]string{true: "typed", false: "map"}[typed], func(b *testing.B) {
			b.ReportAllocs()
			var last T
			n, p := 0, 0
			markCPU(b)
			for b.Loop() {
				q := tabula.Query{Filter: filter, Continuation: starts[p%len(starts)]}
				got := 0
				take := func(v T, err error) bool {
					if err != nil {
						b.Fatal(err)
					}
					last, got = v, got+1
					return got < tabula.MaxEntitiesPerPage
				}
				if typed {
					for v, err := range tabula.QueryAs[T](ctx, tbl, q) {
						if !take(v, err) {
							break
						}
					}
				} else {
					for e, err := range tbl.QueryAll(ctx, q) {
						v, verr := tabula.EntityAs[T](e)
						if !take(v, cmp.Or(err, verr)) {
							break
						}
					}
				}
				if got != tabula.MaxEntitiesPerPage {
					b.Fatalf("page of %d entities", got)
				}
				n += got
				p++
			}
			sinkRow = last
			reportRate(b, n, "entities/s")
		})
	}
}

// scanRows decodes the entities from start on, under prefix, into rows until it is full, and
// returns how many it decoded and the key after the last (nil at the prefix's end).
func scanRows[T any, R interface {
	*T
	rawRow
}](base baseline, prefix, start []byte, rows []T, rr *recordReader) (int, []byte, error) {
	kept := 0
	var next []byte
	take := func(key, value []byte) (bool, error) {
		if kept == len(rows) {
			next = bytes.Clone(key)
			return false, nil
		}
		pk, rk, err := splitKey(key)
		if err != nil {
			return false, err
		}
		if err := decodeRow(rr, value, pk, rk, R(&rows[kept])); err != nil {
			return false, err
		}
		kept++
		return true, nil
	}
	if base.bt != nil {
		var err error
		base.bt.view().AscendGreaterOrEqual(&btreeEntry{key: start}, func(e *btreeEntry) bool {
			if !bytes.HasPrefix(e.key, prefix) {
				return false
			}
			var more bool
			more, err = take(e.key, e.value)
			return more
		})
		return kept, next, err
	}
	err := base.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(iterOptions(prefix))
		defer it.Close()
		for it.Seek(start); it.Valid(); it.Next() {
			item := it.Item()
			var more bool
			err := item.Value(func(v []byte) (err error) {
				more, err = take(item.Key(), v)
				return err
			})
			if err != nil || !more {
				return err
			}
		}
		return nil
	})
	return kept, next, err
}

// TestTypedBaselineMatchesEngine checks that the baseline decodes a record (as the engine
// stores it: TestBaselineMatchesEngine) into the struct GetAs returns.
func TestTypedBaselineMatchesEngine(t *testing.T) {
	db, err := tabula.OpenInMemory(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, err := db.CreateTable(ctx, "Typed")
	if err != nil {
		t.Fatal(err)
	}
	rw, rr := newRecordWriter(), newRecordReader()
	for _, s := range []Shape{ShapePayload, ShapeMixed} {
		w := NewWorkload(s, 4)
		pk := w.GUID()
		for i := range 3 {
			e := w.Entity(pk, RowKey(w.RowPrefix(1, 1), i), i)
			out, err := tbl.Insert(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			record := rw.appendRecord(nil, ticksOf(out.Timestamp), e.Properties)
			var want, got any
			if s == ShapeMixed {
				var row mixedRow
				err = decodeRow(rr, record, e.PartitionKey, e.RowKey, &row)
				got = row
				want, _ = tabula.GetAs[mixedRow](ctx, tbl, e.PartitionKey, e.RowKey)
			} else {
				var row payloadRow
				err = decodeRow(rr, record, e.PartitionKey, e.RowKey, &row)
				got = row
				want, _ = tabula.GetAs[payloadRow](ctx, tbl, e.PartitionKey, e.RowKey)
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
				t.Fatalf("%s: baseline %+v\nengine %+v", s, got, want)
			}
		}
	}
}
