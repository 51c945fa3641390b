package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/tabuladb/tabula"
)

// Every core benchmark runs two sub-benchmarks in the same process: engine (Tabula through
// its public API) and badger (the same logical work on raw Badger, with the engine's keys
// and records). Each reports entities/s; engine ÷ badger is the ratio BENCHMARKS.md
// tracks.

var sinkEntity tabula.Entity

// BenchmarkPointGet reads single entities by key, in a random order over the 100,000
// entities of the read fixture.
func BenchmarkPointGet(b *testing.B) {
	fx := sharedFixture(b)
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		markCPU(b)
		for b.Loop() {
			k := fx.keys[n%len(fx.keys)]
			e, err := fx.spread.Get(ctx, k.pk, k.rk)
			if err != nil {
				b.Fatal(err)
			}
			sinkEntity = e
			n++
		}
		reportRate(b, n, "entities/s")
	})
	for _, base := range baselines(fx) {
		b.Run(base.name, func(b *testing.B) {
			// Mirrors Table.Get: a read-only transaction (the committed tree, in memory), one
			// Get, and the whole record decoded.
			baseGets(b, base, fx.keys, "entities/s")
		})
	}
}

// baseGets reads the records of keys in turn from base, each decoded whole, and reports
// their rate in unit.
func baseGets(b *testing.B, base baseline, keys []keyPair, unit string) {
	b.ReportAllocs()
	rr := newRecordReader()
	var (
		key []byte
		rec rawRecord
	)
	n := 0
	markCPU(b)
	for b.Loop() {
		k := keys[n%len(keys)]
		key = entityKey(key[:0], spreadID, k.pk, k.rk)
		if err := base.get(rr, key, &rec); err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportRate(b, n, unit)
}

// rawGet reads and decodes one record in its own read-only transaction.
func rawGet(db *badger.DB, rr *recordReader, key []byte, rec *rawRecord) error {
	return db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { return rr.decode(v, rec) })
	})
}

// BenchmarkParallelGet is BenchmarkPointGet from GOMAXPROCS goroutines at once.
func BenchmarkParallelGet(b *testing.B) {
	fx := sharedFixture(b)
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		b.ResetTimer()
		markCPU(b)
		b.RunParallel(func(pb *testing.PB) {
			i := rand.IntN(len(fx.keys))
			for pb.Next() {
				k := fx.keys[i%len(fx.keys)]
				if _, err := fx.spread.Get(ctx, k.pk, k.rk); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
		reportRate(b, b.N, "entities/s")
	})
	for _, base := range baselines(fx) {
		b.Run(base.name, func(b *testing.B) {
			// Mirrors Table.Get from each goroutine, as in BenchmarkPointGet.
			b.ReportAllocs()
			b.ResetTimer()
			markCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				rr := newRecordReader()
				var (
					key []byte
					rec rawRecord
				)
				i := rand.IntN(len(fx.keys))
				for pb.Next() {
					k := fx.keys[i%len(fx.keys)]
					key = entityKey(key[:0], spreadID, k.pk, k.rk)
					if err := base.get(rr, key, &rec); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
			reportRate(b, b.N, "entities/s")
		})
	}
}

// BenchmarkInsert inserts single entities, each in its own transaction, appending to one
// partition as one worker of the study's case study does.
func BenchmarkInsert(b *testing.B) {
	w := NewWorkload(shape, 4)
	pk, prefix := w.GUID(), w.RowPrefix(1, 1)
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		t := createTable(b, openEngine(b, b.TempDir()), "Insert")
		n := 0
		markCPU(b)
		for b.Loop() {
			if _, err := t.Insert(ctx, w.Entity(pk, RowKey(prefix, n), n)); err != nil {
				b.Fatal(err)
			}
			n++
		}
		reportRate(b, n, "entities/s")
	})
	for _, eb := range emptyBaselines() {
		b.Run(eb.name, func(b *testing.B) {
			// Mirrors Table.Insert: in one read-write transaction (one commit of the tree, in
			// memory), check that the key is absent, then write the record with a fresh
			// Timestamp.
			b.ReportAllocs()
			base := eb.open(b)
			rw := newRecordWriter()
			var (
				clock rawClock
				key   = make([][]byte, 1)
				value = make([][]byte, 1)
			)
			n := 0
			markCPU(b)
			for b.Loop() {
				key[0] = entityKey(key[0][:0], spreadID, pk, RowKey(prefix, n))
				value[0] = rw.appendRecord(value[0][:0], clock.next(), w.Props(n))
				if err := base.insert(key, value); err != nil {
					b.Fatal(err)
				}
				n++
			}
			reportRate(b, n, "entities/s")
		})
	}
}

// updateRows is how many entities BenchmarkUpdateIfMatch updates in turn: 100 partitions
// of 100 rows.
const updateParts, updateRowsPerPart = 100, 100

func updateLoads(w *Workload) []partitionLoad {
	var parts []partitionLoad
	for p := range updateParts {
		parts = append(parts, partitionLoad{pk: w.GUID(), prefix: w.RowPrefix(1, p+1), to: updateRowsPerPart,
			base: p * updateRowsPerPart, tableID: spreadID})
	}
	return parts
}

// BenchmarkUpdateIfMatch replaces entities under an If-Match condition holding the ETag of
// their current version, in a random order over 10,000 entities.
func BenchmarkUpdateIfMatch(b *testing.B) {
	w := NewWorkload(shape, 5)
	parts := updateLoads(w)
	order := rand.New(rand.NewPCG(5, 5)).Perm(updateParts * updateRowsPerPart)
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		t := createTable(b, openEngine(b, b.TempDir()), "Update")
		for i := range parts {
			parts[i].etags = make([]tabula.ETag, updateRowsPerPart)
		}
		loadEngine(b, t, w, parts)
		n := 0
		markCPU(b)
		for b.Loop() {
			j := order[n%len(order)]
			p, r := &parts[j/updateRowsPerPart], j%updateRowsPerPart
			etag, err := t.Update(ctx, w.Entity(p.pk, RowKey(p.prefix, r), j+n), tabula.Replace, p.etags[r])
			if err != nil {
				b.Fatal(err)
			}
			p.etags[r] = etag
			n++
		}
		reportRate(b, n, "entities/s")
	})
	for _, eb := range emptyBaselines() {
		b.Run(eb.name, func(b *testing.B) {
			// Mirrors Table.Update in Replace mode with an ETag: in one read-write transaction
			// (one commit of the tree, in memory), read the record, decode its Timestamp,
			// compare it with the expected one, and write the new record with a fresh
			// Timestamp.
			b.ReportAllocs()
			base := eb.open(b)
			for i := range parts {
				parts[i].ticks = make([]int64, updateRowsPerPart)
			}
			base.load(b, w, parts)
			rw, rr := newRecordWriter(), newRecordReader()
			var (
				clock rawClock
				key   []byte
				value []byte
			)
			n := 0
			markCPU(b)
			for b.Loop() {
				j := order[n%len(order)]
				p, r := &parts[j/updateRowsPerPart], j%updateRowsPerPart
				key = entityKey(key[:0], spreadID, p.pk, RowKey(p.prefix, r))
				var ticks int64
				err := base.replaceIf(key, rr, p.ticks[r], func() []byte {
					ticks = clock.next()
					value = rw.appendRecord(value[:0], ticks, w.Props(j+n))
					return value
				})
				if err != nil {
					b.Fatal(err)
				}
				p.ticks[r] = ticks
				n++
			}
			reportRate(b, n, "entities/s")
		})
	}
}

// BenchmarkBatchInsert inserts entity group transactions of N new entities into one
// partition, as in the study's Figures 5 and 6.
func BenchmarkBatchInsert(b *testing.B) {
	for _, size := range []int{1, 10, 20, 50, 100} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			w := NewWorkload(shape, 6)
			pk, prefix := w.GUID(), w.RowPrefix(1, 1)
			b.Run("engine", func(b *testing.B) {
				t := createTable(b, openEngine(b, b.TempDir()), "Batch")
				markCPU(b)
				transactionLoop(b, t, w, pk, prefix, size, func(b *testing.B, n int) { reportRate(b, n, "entities/s") })
			})
			for _, eb := range emptyBaselines() {
				b.Run(eb.name, func(b *testing.B) {
					// Mirrors SubmitTransaction of N inserts: one read-write transaction (one
					// commit of the tree, in memory) in which every key is checked absent and its
					// record written with its own Timestamp.
					b.ReportAllocs()
					base := eb.open(b)
					rw := newRecordWriter()
					var (
						clock rawClock
						arena []byte // keys and values of one transaction, reused after its commit
						keys  = make([][]byte, size)
						vals  = make([][]byte, size)
					)
					n := 0
					markCPU(b)
					for b.Loop() {
						arena = arena[:0]
						for i := range size {
							start := len(arena)
							arena = entityKey(arena, spreadID, pk, RowKey(prefix, n+i))
							mid := len(arena)
							arena = rw.appendRecord(arena, clock.next(), w.Props(n+i))
							keys[i], vals[i] = arena[start:mid:mid], arena[mid:len(arena):len(arena)]
						}
						if err := base.insert(keys, vals); err != nil {
							b.Fatal(err)
						}
						n += size
					}
					reportRate(b, n, "entities/s")
				})
			}
		})
	}
}

// partitionFilter selects every entity of one partition.
func partitionFilter(pk string) string { return "PartitionKey eq '" + pk + "'" }

// BenchmarkPartitionScan reads one 1,000-entity page of a 100,000-entity partition per
// operation, walking the partition page by page with continuation tokens and starting
// over at its end.
func BenchmarkPartitionScan(b *testing.B) {
	fx := sharedFixture(b)
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		q := tabula.Query{Filter: partitionFilter(fx.deepPK)}
		n := 0
		markCPU(b)
		for b.Loop() {
			page, err := fx.deep.Query(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			if len(page.Entities) != tabula.MaxEntitiesPerPage {
				b.Fatalf("page of %d entities", len(page.Entities))
			}
			n += len(page.Entities)
			q.Continuation = page.Continuation
		}
		reportRate(b, n, "entities/s")
	})
	for _, base := range baselines(fx) {
		b.Run(base.name, func(b *testing.B) {
			// Mirrors one query page: in a read-only transaction (on the committed tree, in
			// memory), seek to the resume key, read 1,000 keys with their values, decode each
			// key and record into the page, and keep the next key as the place to resume (the
			// continuation token).
			b.ReportAllocs()
			prefix := partitionPrefix(nil, deepID, fx.deepPK)
			page := make([]rawEntity, tabula.MaxEntitiesPerPage)
			rr := newRecordReader()
			resume := prefix
			n := 0
			markCPU(b)
			for b.Loop() {
				var next []byte
				_, got, err := base.scan(prefix, resume, nil, page, rr, nil, &next)
				if err != nil {
					b.Fatal(err)
				}
				if got != len(page) {
					b.Fatalf("page of %d entities", got)
				}
				n += got
				resume = next
				if resume == nil {
					resume = prefix
				}
			}
			reportRate(b, n, "entities/s")
		})
	}
}

// rawScan reads the keys in [start, upper) that have the given prefix (a nil upper means
// the prefix's end), in one read-only transaction, decoding every record and keeping those
// that match in page until it is full. It returns how many keys it examined and kept, and
// sets *next to the key after the last one examined (nil when the range is exhausted).
func rawScan(db *badger.DB, prefix, start, upper []byte, page []rawEntity, rr *recordReader,
	match func(key []byte, rec *rawRecord) bool, next *[]byte) (scanned, kept int, err error) {
	*next = nil
	var rec rawRecord
	err = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(iterOptions(prefix))
		defer it.Close()
		for it.Seek(start); it.Valid(); it.Next() {
			item := it.Item()
			if upper != nil && bytes.Compare(item.Key(), upper) >= 0 {
				return nil
			}
			if kept == len(page) {
				*next = item.KeyCopy(nil)
				return nil
			}
			scanned++
			dst := &page[kept]
			rec.props = dst.rec.props
			if err := item.Value(func(v []byte) error { return rr.decode(v, &rec) }); err != nil {
				return err
			}
			dst.rec.props = rec.props // keep the grown slice for reuse
			if match != nil && !match(item.Key(), &rec) {
				continue
			}
			pk, rk, err := splitKey(item.Key())
			if err != nil {
				return err
			}
			dst.pk, dst.rk, dst.rec = pk, rk, rec
			kept++
		}
		return nil
	})
	return scanned, kept, err
}

// BenchmarkFullScanFilter runs a query whose filter names no key over the 100,000 entities
// of the read fixture, to the last page; the filter (PayloadFilter or MixedFilter) matches
// 1% of them. entities/s counts the entities scanned.
func BenchmarkFullScanFilter(b *testing.B) {
	fx := sharedFixture(b)
	want := spreadPartitions * spreadRows / 100
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		markCPU(b)
		for b.Loop() {
			q := tabula.Query{Filter: shape.Filter()}
			matched, scanned := 0, 0
			for {
				page, err := fx.spread.Query(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				matched += len(page.Entities)
				scanned += page.Plan.Scanned
				if page.Continuation.IsZero() {
					break
				}
				q.Continuation = page.Continuation
			}
			if matched != want || scanned != spreadPartitions*spreadRows {
				b.Fatalf("matched %d of %d scanned, want %d of %d", matched, scanned, want, spreadPartitions*spreadRows)
			}
			n += scanned
		}
		reportRate(b, n, "entities/s")
	})
	for _, base := range baselines(fx) {
		b.Run(base.name, func(b *testing.B) {
			// Mirrors the full scan: iterate every key of the table with its value in pages of
			// up to 1,000 matches (a snapshot of the tree per page, in memory), decode each
			// record, evaluate the filter written by hand, and decode the keys of the matches
			// into the page.
			b.ReportAllocs()
			prefix := tablePrefix(nil, spreadID)
			page := make([]rawEntity, tabula.MaxEntitiesPerPage)
			rr := newRecordReader()
			match := func(_ []byte, r *rawRecord) bool { return r.matches(shape) }
			n := 0
			markCPU(b)
			for b.Loop() {
				matched := 0
				for start := prefix; start != nil; {
					_, got, err := base.scan(prefix, start, nil, page, rr, match, &start)
					if err != nil {
						b.Fatal(err)
					}
					matched += got
				}
				if matched != want {
					b.Fatalf("matched %d, want %d", matched, want)
				}
				n += spreadPartitions * spreadRows
			}
			reportRate(b, n, "entities/s")
		})
	}
}
