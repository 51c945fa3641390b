package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/btree"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/badgertuning"
	"github.com/tabuladb/tabula/internal/keyorder"
)

// The baseline: raw Badger doing the work of each engine operation with the engine's key
// encoding and record format, written here from the format's description (keys.go,
// record.go) rather than by calling the engine. TestBaselineMatchesEngine checks that the
// bytes are identical.

// openRaw opens Badger with the options storage.Open uses, so that the baseline pays for
// the same configuration the engine does.
func openRaw(dir string, inMemory bool) (*badger.DB, error) {
	if inMemory {
		return badger.Open(badger.DefaultOptions("").WithInMemory(true).
			WithLoggingLevel(badger.WARNING).WithMetricsEnabled(false))
	}
	// The default budget's options: raw Badger gets the same memory the engine does.
	return badger.Open(badgertuning.Options(dir, 0).WithSyncWrites(false))
}

// iterOptions are the options storage.Txn.Scan iterates with: no value prefetching, and the
// range's common prefix.
func iterOptions(prefix []byte) badger.IteratorOptions {
	o := badger.DefaultIteratorOptions
	o.PrefetchValues = false
	o.Prefix = prefix
	return o
}

// Record type codes, as persisted by record.go.
const (
	codeString   = 1
	codeBinary   = 2
	codeBoolean  = 3
	codeDateTime = 4
	codeDouble   = 5
	codeGuid     = 6
	codeInt32    = 7
	codeInt64    = 8
)

const recordVersion = 1

// Keys, as the engine's storage layer encodes them: a key is made of string parts, each byte
// of a part written as its keyorder.Weight (so that byte order is the service's UTF-16 order)
// except that a 0x00 is written 0x00 0xFF, and parts are separated by 0x00 0x01.
const (
	keyEscape    = 0x00
	keySeparator = 0x01
	keyNul       = 0xFF
)

var errBadKey = errors.New("bench: malformed key")

// appendPart appends the encoding of one key part to dst.
func appendPart(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == keyEscape {
			dst = append(dst, keyEscape, keyNul)
			continue
		}
		dst = append(dst, keyorder.Weight(c))
	}
	return dst
}

// appendSeparator ends a part that another follows.
func appendSeparator(dst []byte) []byte { return append(dst, keyEscape, keySeparator) }

// nextPart decodes the part at the start of b and returns it with the rest of b after its
// separator; last reports that the part ran to the end of b.
func nextPart(b []byte) (part string, rest []byte, last bool, err error) {
	enc, rest, last := b, nil, true
	for i := 0; i < len(b); i++ {
		if b[i] != keyEscape {
			continue
		}
		if i+1 == len(b) {
			return "", nil, false, errBadKey
		}
		switch b[i+1] {
		case keyNul:
			i++
			continue
		case keySeparator:
			enc, rest, last = b[:i], b[i+2:], false
		default:
			return "", nil, false, errBadKey
		}
		break
	}
	clean := true
	for _, c := range enc {
		if c == keyEscape || c >= keyorder.FirstMoved {
			clean = false
			break
		}
	}
	if clean { // the common case: the encoding is the text itself
		return string(enc), rest, last, nil
	}
	buf := make([]byte, 0, len(enc))
	for i := 0; i < len(enc); i++ {
		c := enc[i]
		if c == keyEscape { // an escaped NUL
			buf = append(buf, 0)
			i++
			continue
		}
		buf = append(buf, keyorder.Unweight(c))
	}
	return string(buf), rest, last, nil
}

// tablePrefix is 'e' followed by the table's ID, big-endian.
func tablePrefix(dst []byte, id uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, 'e'), id)
}

// partitionPrefix is the prefix of every key of one partition, separator included.
func partitionPrefix(dst []byte, id uint64, pk string) []byte {
	return appendSeparator(appendPart(tablePrefix(dst, id), pk))
}

// entityKey appends the key of an entity to dst.
func entityKey(dst []byte, id uint64, pk, rk string) []byte {
	return appendPart(partitionPrefix(dst, id, pk), rk)
}

// splitKey decodes the keys of an entity key.
func splitKey(key []byte) (pk, rk string, err error) {
	if len(key) < 9 {
		return "", "", errBadKey
	}
	pk, rest, last, err := nextPart(key[9:])
	if err != nil || last {
		return "", "", errBadKey
	}
	rk, _, _, err = nextPart(rest)
	return pk, rk, err
}

// ticksOf counts 100 ns ticks since 0001-01-01 UTC, as the engine's Timestamps and
// DateTimes do.
func ticksOf(t time.Time) int64 {
	const unixEpochSeconds = 62_135_596_800
	return (t.Unix()+unixEpochSeconds)*10_000_000 + int64(t.Nanosecond())/100
}

// rawClock hands out strictly increasing ticks, as the engine's Timestamp clock does, but
// for one goroutine and without persisting anything.
type rawClock struct{ last int64 }

func (c *rawClock) next() int64 {
	c.last = max(ticksOf(time.Now()), c.last+1)
	return c.last
}

// appendWriter lets a msgpack encoder append to a byte slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
func (w *appendWriter) WriteByte(c byte) error      { w.b = append(w.b, c); return nil }

// recordWriter encodes records: the version byte, then msgpack of the ticks, the property
// count and, per property in byte order of names, the name, the type code and the value.
type recordWriter struct {
	w     appendWriter
	enc   *msgpack.Encoder
	names []string
}

func newRecordWriter() *recordWriter {
	rw := &recordWriter{}
	rw.enc = msgpack.NewEncoder(&rw.w)
	return rw
}

// appendRecord appends the record of props written at ticks to dst.
func (rw *recordWriter) appendRecord(dst []byte, ticks int64, props tabula.Properties) []byte {
	rw.names = rw.names[:0]
	for name, v := range props {
		if v != nil {
			rw.names = append(rw.names, name)
		}
	}
	sort.Strings(rw.names)
	rw.w.b = append(dst, recordVersion)
	e := rw.enc
	// Appending to a slice cannot fail, so the encoder's errors are not checked.
	_ = e.EncodeInt(ticks)
	_ = e.EncodeArrayLen(len(rw.names))
	for _, name := range rw.names {
		_ = e.EncodeString(name)
		switch v := props[name].(type) {
		case tabula.String:
			_ = e.EncodeUint8(codeString)
			_ = e.EncodeString(string(v))
		case tabula.Binary:
			_ = e.EncodeUint8(codeBinary)
			_ = e.EncodeBytes(v)
		case tabula.Boolean:
			_ = e.EncodeUint8(codeBoolean)
			_ = e.EncodeBool(bool(v))
		case tabula.DateTime:
			_ = e.EncodeUint8(codeDateTime)
			_ = e.EncodeInt(ticksOf(time.Time(v)))
		case tabula.Double:
			_ = e.EncodeUint8(codeDouble)
			_ = e.EncodeFloat64(float64(v))
		case tabula.Guid:
			_ = e.EncodeUint8(codeGuid)
			_ = e.EncodeBytes(v[:])
		case tabula.Int32:
			_ = e.EncodeUint8(codeInt32)
			_ = e.EncodeInt(int64(v))
		case tabula.Int64:
			_ = e.EncodeUint8(codeInt64)
			_ = e.EncodeInt(int64(v))
		}
	}
	out := rw.w.b
	rw.w.b = nil
	return out
}

// rawProp is one decoded property: its name, type code and value in the field its type uses.
type rawProp struct {
	name  string
	code  uint8
	str   string
	bytes []byte
	num   int64 // Int32, Int64, DateTime ticks, Boolean (0 or 1)
	float float64
}

// rawRecord is a decoded record; its slice is reused from record to record.
type rawRecord struct {
	ticks int64
	props []rawProp
}

func (r *rawRecord) prop(name string) (*rawProp, bool) {
	// Records hold properties in byte order of their names.
	i, ok := slices.BinarySearchFunc(r.props, name, func(p rawProp, n string) int {
		return cmpString(p.name, n)
	})
	if !ok {
		return nil, false
	}
	return &r.props[i], true
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// matches is the hand-written equivalent of the shape's Filter (PayloadFilter: Payload is a
// String and ge 'z'; MixedFilter: Count is an Int32 and lt 10).
func (r *rawRecord) matches(s Shape) bool {
	if s == ShapeMixed {
		p, ok := r.prop("Count")
		return ok && p.code == codeInt32 && p.num < 10
	}
	p, ok := r.prop("Payload")
	return ok && p.code == codeString && p.str >= "z"
}

// recordReader decodes records with one reused msgpack decoder.
type recordReader struct {
	r   bytes.Reader
	dec *msgpack.Decoder
}

func newRecordReader() *recordReader {
	rr := &recordReader{}
	rr.dec = msgpack.NewDecoder(&rr.r)
	return rr
}

var errBadRecord = errors.New("bench: malformed record")

// ticks reads only a record's Timestamp.
func (rr *recordReader) ticks(v []byte) (int64, error) {
	if len(v) == 0 || v[0] != recordVersion {
		return 0, errBadRecord
	}
	rr.r.Reset(v[1:])
	rr.dec.Reset(&rr.r)
	return rr.dec.DecodeInt64()
}

// decode reads a whole record into rec, copying every value out of v.
func (rr *recordReader) decode(v []byte, rec *rawRecord) error {
	ticks, err := rr.ticks(v)
	if err != nil {
		return err
	}
	d := rr.dec
	n, err := d.DecodeArrayLen()
	if err != nil || n < 0 || n > tabula.MaxProperties {
		return errBadRecord
	}
	rec.ticks = ticks
	rec.props = slices.Grow(rec.props[:0], n)[:n]
	for i := range rec.props {
		p := &rec.props[i]
		if p.name, err = d.DecodeString(); err != nil {
			return err
		}
		if p.code, err = d.DecodeUint8(); err != nil {
			return err
		}
		switch p.code {
		case codeString:
			p.str, err = d.DecodeString()
		case codeBinary, codeGuid:
			p.bytes, err = d.DecodeBytes()
		case codeBoolean:
			var b bool
			b, err = d.DecodeBool()
			p.num = 0
			if b {
				p.num = 1
			}
		case codeDateTime, codeInt32, codeInt64:
			p.num, err = d.DecodeInt64()
		case codeDouble:
			p.float, err = d.DecodeFloat64()
		default:
			return fmt.Errorf("bench: unknown type code %d", p.code)
		}
		if err != nil {
			return err
		}
	}
	if rr.r.Len() != 0 {
		return errBadRecord
	}
	return nil
}

// rawEntity is one result of a baseline query: the keys, and the record decoded.
type rawEntity struct {
	pk, rk string
	rec    rawRecord
}

// errExists is the baseline's EntityAlreadyExists.
var errExists = errors.New("bench: entity already exists")

// errETag is the baseline's UpdateConditionNotSatisfied.
var errETag = errors.New("bench: timestamp does not match")

// rawInsert is the work of an insert inside a Badger transaction: the key must be absent,
// then the record is written.
func rawInsert(txn *badger.Txn, key, value []byte) error {
	_, err := txn.Get(key)
	if err == nil {
		return errExists
	}
	if !errors.Is(err, badger.ErrKeyNotFound) {
		return err
	}
	return txn.Set(key, value)
}

// The in-memory baseline: raw google/btree doing the work of each engine operation on the
// engine's keys and records, as the peer of the engine's in-memory store (storage/memory.go)
// when TABULA_BENCH_STORE=mem. Raw Badger in memory is a store with other fixed costs (its
// memtable arena, its oracle and watermarks), so the engine in memory beat it easily; this
// is the floor a tree of the same library and degree sets.
//
// What it does, and what it leaves out:
//   - the same tree: github.com/google/btree's BTreeG of entries holding key and value in one
//     allocation the store owns, of degree btreeDegree (storage's memDegree), ordered by
//     bytes.Compare;
//   - consistent reads as a real store needs them: the committed tree is published through
//     an atomic pointer and never changed again, so a reader loads it and reads a snapshot
//     without a lock, as the engine's readers do;
//   - writes copy on write: a writer takes the writers' mutex, makes the new version with
//     the tree's lazy Clone, does its reads (an insert's existence check, an update's
//     ETag check) and writes on it, and publishes it; one commit per operation, as the
//     engine's store commits one per transaction;
//   - it holds the mutex for the whole read-modify-write, so writers need no conflict
//     detection. The engine's store runs writers optimistically instead (its transactions
//     may commit other transactions from inside, see memory.go) and so also records what
//     each read-write transaction reads and which keys each commit wrote; that bookkeeping
//     is the engine's own cost of being a general transactional store, not counted here.
//   - records are decoded by the same msgpack reader as the Badger baseline, copying every
//     value out of the store's bytes, and scans decode every key and record they return.

// btreeDegree is the degree of the in-memory store's tree (storage/memory.go's memDegree).
const btreeDegree = 16

type btreeEntry struct{ key, value []byte }

type btreeTree = btree.BTreeG[*btreeEntry]

func btreeLess(a, b *btreeEntry) bool { return bytes.Compare(a.key, b.key) < 0 }

// btreeStore is the baseline's store: the committed tree, and the writers' mutex.
type btreeStore struct {
	mu  sync.Mutex
	cur atomic.Pointer[btreeTree]
}

func newBtreeStore() *btreeStore {
	s := &btreeStore{}
	s.cur.Store(btree.NewG(btreeDegree, btreeLess))
	return s
}

// view returns the committed tree, which nothing changes again.
func (s *btreeStore) view() *btreeTree { return s.cur.Load() }

// update runs fn on a copy-on-write clone of the committed tree and publishes the clone
// unless fn fails.
func (s *btreeStore) update(fn func(t *btreeTree) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.cur.Load().Clone()
	if err := fn(t); err != nil {
		return err
	}
	s.cur.Store(t)
	return nil
}

// btreeSet writes key and value into t, copied into one allocation the store owns.
func btreeSet(t *btreeTree, key, value []byte) {
	buf := make([]byte, len(key)+len(value))
	n := copy(buf, key)
	copy(buf[n:], value)
	t.ReplaceOrInsert(&btreeEntry{key: buf[:n:n], value: buf[n:]})
}

// btreeGet returns the value under key in t.
func btreeGet(t *btreeTree, key []byte) ([]byte, bool) {
	e, ok := t.Get(&btreeEntry{key: key})
	if !ok {
		return nil, false
	}
	return e.value, true
}

// btreeInsert is rawInsert on the tree: the key must be absent, then the record is written.
func btreeInsert(t *btreeTree, key, value []byte) error {
	if _, ok := btreeGet(t, key); ok {
		return errExists
	}
	btreeSet(t, key, value)
	return nil
}

// btreeGetRecord reads and decodes one record from the committed tree.
func btreeGetRecord(s *btreeStore, rr *recordReader, key []byte, rec *rawRecord) error {
	v, ok := btreeGet(s.view(), key)
	if !ok {
		return errNotFound
	}
	return rr.decode(v, rec)
}

var errNotFound = errors.New("bench: entity not found")

// btreeScan is rawScan on the committed tree: the keys in [start, upper) with the prefix
// (a nil upper means the prefix's end), every record decoded, those that match kept in page
// until it is full; *next is set to the key after the last one examined.
func btreeScan(s *btreeStore, prefix, start, upper []byte, page []rawEntity, rr *recordReader,
	match func(key []byte, rec *rawRecord) bool, next *[]byte) (scanned, kept int, err error) {
	*next = nil
	var rec rawRecord
	s.view().AscendGreaterOrEqual(&btreeEntry{key: start}, func(e *btreeEntry) bool {
		if !bytes.HasPrefix(e.key, prefix) || upper != nil && bytes.Compare(e.key, upper) >= 0 {
			return false
		}
		if kept == len(page) {
			*next = bytes.Clone(e.key)
			return false
		}
		scanned++
		dst := &page[kept]
		rec.props = dst.rec.props
		if err = rr.decode(e.value, &rec); err != nil {
			return false
		}
		dst.rec.props = rec.props // keep the grown slice for reuse
		if match != nil && !match(e.key, &rec) {
			return true
		}
		var pk, rk string
		if pk, rk, err = splitKey(e.key); err != nil {
			return false
		}
		dst.pk, dst.rk, dst.rec = pk, rk, rec
		kept++
		return true
	})
	return scanned, kept, err
}

// loadBtree writes the same partitions as loadBadger into the tree, in one commit,
// recording ticks where asked.
func loadBtree(tb testing.TB, s *btreeStore, w *Workload, parts []partitionLoad) {
	tb.Helper()
	err := s.update(func(t *btreeTree) error {
		return eachRecord(w, parts, func(key, value []byte) error {
			btreeSet(t, key, value)
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// baseline is one store the engine is measured against, doing the same logical work: raw
// Badger (db), or in memory also the google/btree store (bt). Each benchmark writes its
// baseline body once and runs it on every baseline, so that a change to what the baseline
// does reaches both stores. Its methods call rawX or btreeX directly rather than through an
// interface, so that escape analysis sees the same calls and allocs/op stay as they were.
type baseline struct {
	name string
	db   *badger.DB
	bt   *btreeStore
}

// baselines are the read fixture's baselines: badger, and btree when in memory.
func baselines(fx *readFixture) []baseline {
	bs := []baseline{{name: "badger", db: fx.raw}}
	if fx.bt != nil {
		bs = append(bs, baseline{name: "btree", bt: fx.bt})
	}
	return bs
}

// emptyBaseline opens an empty store for one run of a write benchmark: raw Badger in its
// own directory, or a new tree.
type emptyBaseline struct {
	name string
	open func(tb testing.TB) baseline
}

// emptyBaselines are badger, and btree when in memory.
func emptyBaselines() []emptyBaseline {
	bs := []emptyBaseline{{name: "badger", open: func(tb testing.TB) baseline {
		return baseline{name: "badger", db: openBadger(tb, tb.TempDir())}
	}}}
	if inMemory {
		bs = append(bs, emptyBaseline{name: "btree", open: func(testing.TB) baseline {
			return baseline{name: "btree", bt: newBtreeStore()}
		}})
	}
	return bs
}

// load writes parts as loadBadger and loadBtree do.
func (s baseline) load(tb testing.TB, w *Workload, parts []partitionLoad) {
	if s.bt != nil {
		loadBtree(tb, s.bt, w, parts)
		return
	}
	loadBadger(tb, s.db, w, parts)
}

// get reads and decodes the record under key: in its own read-only transaction (Badger),
// or from the committed tree.
func (s baseline) get(rr *recordReader, key []byte, rec *rawRecord) error {
	if s.bt != nil {
		return btreeGetRecord(s.bt, rr, key, rec)
	}
	return rawGet(s.db, rr, key, rec)
}

// scan is rawScan, or btreeScan on the committed tree (a snapshot per call).
func (s baseline) scan(prefix, start, upper []byte, page []rawEntity, rr *recordReader,
	match func(key []byte, rec *rawRecord) bool, next *[]byte) (scanned, kept int, err error) {
	if s.bt != nil {
		return btreeScan(s.bt, prefix, start, upper, page, rr, match, next)
	}
	return rawScan(s.db, prefix, start, upper, page, rr, match, next)
}

// insert checks every key absent and writes its value, all in one commit: one read-write
// transaction (Badger), or one copy-on-write commit of the tree.
func (s baseline) insert(keys, vals [][]byte) error {
	if s.bt != nil {
		return s.bt.update(func(t *btreeTree) error {
			for i := range keys {
				if err := btreeInsert(t, keys[i], vals[i]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return s.db.Update(func(txn *badger.Txn) error {
		for i := range keys {
			if err := rawInsert(txn, keys[i], vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// replaceIf, in one commit, reads the record under key, decodes its Timestamp, compares it
// with want (errETag if it differs), and writes the record that record returns.
func (s baseline) replaceIf(key []byte, rr *recordReader, want int64, record func() []byte) error {
	if s.bt != nil {
		return s.bt.update(func(t *btreeTree) error {
			v, ok := btreeGet(t, key)
			if !ok {
				return errNotFound
			}
			old, err := rr.ticks(v)
			if err != nil {
				return err
			}
			if old != want {
				return errETag
			}
			btreeSet(t, key, record())
			return nil
		})
	}
	return s.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		var old int64
		if err := item.Value(func(v []byte) (err error) { old, err = rr.ticks(v); return err }); err != nil {
			return err
		}
		if old != want {
			return errETag
		}
		return txn.Set(key, record())
	})
}
