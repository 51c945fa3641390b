package tabula

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/storage"
)

// Import reads an interchange file, or a fixture (see below), and writes its tables into
// the database, each into the namespace of its account (see ImportOptions.Namespaces), with
// their access policies and the accounts' service properties.
//
// It is all or nothing. Every table of the file is first written into a staging area, a
// table ID no catalog entry names, in transactions as large as the store takes, committed
// while the next lines are read (storage.Bulk); a table that exists already gets, in its
// staging area, its stored entities too, by the Existing policy (while that is copied,
// writes to it wait). Nothing is published until the whole file has been read with every
// line checked and every staged write committed; then one transaction points the catalog
// at every staged table, with the namespaces' service properties. So a file cut short, a
// line that breaks a rule (a merge that would break an entity's limits included) or a
// crash at any moment changes nothing (unless BestEffort asks for the whole tables read
// before a defect); the error names the line, the field and the rule. What was staged is
// dropped at once, or by the next Open after a crash. An interrupted import starts again
// from the beginning.
//
// A fixture is one JSON document that maps table names to arrays of entities, each in the
// service's JSON (the form of an Insert Entity body, "Units@odata.type":"Edm.Int64" where
// JSON alone would lose a type), with no header, counts or Timestamps; its tables go to the
// root namespace (the account ""), but those of an account's object ({"shop": {"Orders":
// […]}}) to the account's namespace, as an interchange file's; its errors name the line and
// the JSON path ($.Orders[3].Units). A file whose first line is not an interchange file's
// header is read as a fixture.
func (db *DB) Import(ctx context.Context, r io.Reader, opts *ImportOptions) (Progress, error) {
	if opts == nil {
		opts = &ImportOptions{}
	}
	return db.importInto(ctx, r, opts, func(account string) string {
		if ns, ok := opts.Namespaces[account]; ok {
			return ns
		}
		return account
	})
}

// importInto is DB.Import with nsOf naming the namespace of each account's tables.
func (db *DB) importInto(ctx context.Context, r io.Reader, opts *ImportOptions, nsOf func(account string) string) (Progress, error) {
	if opts.Resume != nil {
		return Progress{}, ErrInvalidInput.WithDetail("import: an import into a DB changes nothing until it ends, so it does not resume; start it again")
	}
	im, err := newImporter(r, opts)
	if err != nil {
		return Progress{}, err
	}
	// Staged table IDs, and the drops of what was staged, must not straddle a Restore (see
	// DB.Restore), which would put back a table-ID counter below them.
	db.restoreMu.RLock()
	defer db.restoreMu.RUnlock()
	l := &loader{db: db, ctx: ctx, importer: im, nsOf: nsOf, bulk: db.store.NewBulk(), props: map[string][]byte{}}
	return l.run()
}

// loader is one DB.Import: it stages the file's tables, then publishes them.
type loader struct {
	*importer
	db       *DB
	ctx      context.Context
	nsOf     func(account string) string
	bulk     *storage.Bulk // the staged entities go in through it (see storage.Bulk)
	staged   []*stagedTable
	cur      *stagedTable // the table being read; nil outside one, or when skipping it
	skipping bool
	batch    []stagedEntity
	size     int
	props    map[string][]byte // namespaces' service properties, by namespace

	// load writes the table being read straight into the store (ImportOptions.Exclusive),
	// nil when its entities go through bulk; noLoad says the store refused one.
	load   *storage.Load
	noLoad bool
	// ids are table IDs the import reserved, each with its drop marker, and has not staged a
	// table in yet (see stageID).
	ids []uint64
	// sorter gathers the table being read when it came out of key order before its direct
	// load began (see outOfOrder); nil otherwise.
	sorter *tableSorter
}

// idsAhead is how many table IDs, each with its drop marker, an exclusive import reserves
// at a time. A drop marker's key sorts before every entity's, and the catalog's and the
// clock's after them: a marker written as each table begins would put writes on both sides
// of the table loaded before, which the next direct load's start would then rewrite whole
// (storage.NewLoad merges the writes since into the level that table is in).
const idsAhead = 64

// loadFrom and loadFromBytes are how many entities, or bytes of them, of a table in key
// order an exclusive import gathers before it loads the table directly (storage.Load):
// starting a direct load costs about 0.1 s (the store is closed and opened again, twice),
// more than a smaller table gains. A smaller table goes through the Bulk.
var loadFrom int64 = 32_768 // a variable for the tests

const loadFromBytes = 32 << 20

// stagedTable is a table of the file written into a table ID that no catalog entry names
// yet, with a drop marker, so that a crash before it is published drops it.
type stagedTable struct {
	ns, name string
	id       uint64
	line     int // of its table line
	policies []AccessPolicy
	acl      bool // the file gave its access policies
	done     bool // its end line was read
	maxTicks int64
	maxKey   []byte // the greatest key staged
	unsorted bool   // an entity came before one read earlier (see loader.mayLoad)
	target   uint64 // the ID of the table of its name when the import began, 0 for none
	// replaces is the open table of its name at publishing, locked; nil for a new table.
	replaces *openTable
}

// stagedEntity is one entity of a batch being staged.
type stagedEntity struct {
	key, record []byte
	line        int
	path        string
	pk, rk      string
	props       Properties // for a merge's check, with ExistingMerge into a table that exists
	// mayRepeat: its key is not after every key before it, so it may be in the table twice
	// (a file in key order, as exports are, never needs the look-up).
	mayRepeat bool
}

func (l *loader) run() (Progress, error) {
	read, stop := l.readAhead()
	defer stop()
	for batch := range read {
		for i := range batch {
			rec, err := &batch[i].rec, batch[i].err
			if err == io.EOF {
				break
			}
			if err != nil {
				if l.opts.BestEffort && skippable(err) {
					l.p.Skipped++
					continue
				}
				return l.fail(readError(l.p.Line, err))
			}
			l.p.Line = rec.Line
			if err := l.record(rec); err != nil {
				return l.fail(err)
			}
		}
	}
	if err := l.bulk.Flush(); err != nil {
		return l.fail(storageError(err))
	}
	err := l.publish(l.staged)
	l.releaseIDs()
	return l.p, err
}

// readRecord is a record of the file read ahead, or the error in its place.
type readRecord struct {
	rec wire.Record
	err error
}

// readAheadRecords is how many records a batch read ahead holds: with two batches waiting,
// about a megabyte of 1 KiB entities.
const readAheadRecords = 256

// readAhead reads the file's records on a goroutine of its own, a batch at a time, so that
// decoding the next lines overlaps checking and writing the last ones: on two cores an
// import takes little longer than decoding alone. The batches end with the file's end or
// the first error the import stops at (one BestEffort skips does not end them). stop ends
// the reading and waits for it: the reader is not read after the import returns.
func (l *loader) readAhead() (<-chan []readRecord, func()) {
	out := make(chan []readRecord, 2)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		for {
			batch := make([]readRecord, 0, readAheadRecords)
			last := false
			for len(batch) < readAheadRecords && !last {
				rec, err := l.dec.Next()
				batch = append(batch, readRecord{rec, err})
				last = err == io.EOF || err != nil && !(l.opts.BestEffort && skippable(err))
			}
			select {
			case out <- batch:
			case <-quit:
				return
			}
			if last {
				return
			}
		}
	}()
	return out, func() { close(quit); <-done }
}

func (l *loader) record(rec *wire.Record) error {
	switch rec.Kind {
	case wire.RecordAccount:
		if err := checkServiceProperties(rec); err != nil {
			return err
		}
		if rec.ServiceProperties != nil {
			l.props[l.nsOf(rec.Account)] = rec.ServiceProperties
		}
	case wire.RecordTable:
		return l.beginTable(rec)
	case wire.RecordEntity:
		if !l.skipping {
			return l.entity(rec)
		}
	case wire.RecordTableEnd:
		return l.endTable()
	}
	return nil
}

func (l *loader) beginTable(rec *wire.Record) error {
	l.skipping = !l.wanted(rec.Table)
	if l.skipping {
		return nil
	}
	field := cmp.Or(rec.Path, "table")
	if err := validateTableName(rec.Table); err != nil {
		return &ImportError{Line: rec.Line, Field: field, Rule: ruleOf(err), Err: err}
	}
	ns := l.nsOf(rec.Account)
	for _, t := range l.staged {
		if t.ns == ns && strings.EqualFold(t.name, rec.Table) {
			return &ImportError{Line: rec.Line, Field: field, Rule: fmt.Sprintf("table %q is in the file twice, at lines %d and %d", rec.Table, t.line, rec.Line), Err: ErrInvalidInput}
		}
	}
	policies, err := tablePolicies(rec)
	if err != nil {
		return err
	}
	t := &stagedTable{ns: ns, name: rec.Table, line: rec.Line, policies: policies, acl: rec.AccessPolicies != nil}
	if t.id, err = l.stageID(); err != nil {
		return err
	}
	l.staged = append(l.staged, t)
	if err := l.db.view(l.ctx, func(tx *storage.Txn) error {
		r, err := lookupTableIn(tx, ns, rec.Table)
		if errors.Is(err, ErrTableNotFound) {
			return nil
		}
		t.target = r.ID
		return err
	}); err != nil {
		return err
	}
	l.cur = t
	l.p.Account, l.p.Table, l.p.InTable, l.p.TableEntities = rec.Account, rec.Table, true, 0
	return nil
}

func (l *loader) entity(rec *wire.Record) error {
	e, names, err := entityOf(&rec.Entity)
	if err != nil {
		if l.opts.BestEffort {
			l.p.Skipped++
			return nil
		}
		return importError(rec.Line, rec.Path, err)
	}
	if !l.wants(&e) {
		return nil
	}
	t := l.cur
	key := entityKey(t.id, e.PartitionKey, e.RowKey)
	// A key after every key before it cannot be a repeat; only the others are looked up.
	mayRepeat := t.maxKey != nil && bytes.Compare(key, t.maxKey) <= 0
	if !mayRepeat {
		t.maxKey = append(t.maxKey[:0], key...)
	} else {
		if err := l.outOfOrder(); err != nil {
			return err
		}
	}
	ticks := ticksOf(rec.Entity.Timestamp)
	if !l.opts.KeepTimestamps || rec.Entity.Timestamp.IsZero() {
		if ticks, err = l.stamp(); err != nil {
			return err
		}
	}
	t.maxTicks = max(t.maxTicks, ticks)
	if l.sorter != nil {
		if err := l.sorter.add(key, encodeRecord(ticks, e.Properties, names), rec.Line, rec.Path); err != nil {
			return atLine(err, rec.Line)
		}
		l.p.Entities++
		l.p.TableEntities++
		if l.p.Entities%importBatchEntities == 0 {
			if err := l.ctx.Err(); err != nil {
				return err
			}
		}
		if l.p.Entities%l.every == 0 {
			return l.progress()
		}
		return nil
	}
	se := stagedEntity{key: key, record: encodeRecord(ticks, e.Properties, names), line: rec.Line, path: rec.Path,
		pk: e.PartitionKey, rk: e.RowKey, mayRepeat: mayRepeat}
	if t.target != 0 && l.opts.Existing == ExistingMerge {
		se.props = e.Properties
	}
	l.batch = append(l.batch, se)
	l.size += len(se.key) + len(se.record)
	l.p.Entities++
	l.p.TableEntities++
	if len(l.batch) >= importBatchEntities || l.size >= importBatchBytes {
		if err := l.flushOrLoad(); err != nil {
			return err
		}
	}
	if l.p.Entities%l.every == 0 {
		return l.progress()
	}
	return nil
}

func (l *loader) endTable() error {
	if l.skipping {
		l.skipping = false
		return nil
	}
	if err := l.writeSorted(); err != nil {
		return err
	}
	if err := l.flush(); err != nil {
		return err
	}
	if err := l.endLoad(); err != nil {
		return err
	}
	if err := l.bulk.Flush(); err != nil {
		return storageError(err)
	}
	l.cur.done = true
	l.cur = nil
	l.p.Tables++
	l.p.InTable = false
	return l.progress()
}

// flush stages the batch, after checking its entities for repeats and against the stored
// table where they need it.
func (l *loader) flush() error {
	if len(l.batch) == 0 {
		return nil
	}
	defer func() {
		clear(l.batch)
		l.batch, l.size = l.batch[:0], 0
	}()
	if err := l.ctx.Err(); err != nil {
		return err
	}
	if l.load != nil { // keys in order, into a table new or replaced: nothing to check
		for i := range l.batch {
			if err := l.load.Set(l.batch[i].key, l.batch[i].record); err != nil {
				return storageError(err)
			}
		}
		return nil
	}
	repeats := slices.ContainsFunc(l.batch, func(e stagedEntity) bool { return e.mayRepeat })
	if repeats || l.cur.target != 0 && l.opts.Existing != ExistingReplace {
		if err := l.checkRepeatsAndStored(repeats); err != nil {
			return err
		}
	}
	for i := range l.batch {
		if e := &l.batch[i]; e.key != nil {
			if err := l.bulk.Set(e.key, e.record); err != nil {
				return storageError(err)
			}
		}
	}
	return nil
}

// fail ends a failed import: what was staged is dropped, except, under BestEffort, the
// whole tables read before the failure, which are published.
func (l *loader) fail(err error) (Progress, error) {
	defer l.releaseIDs()
	if l.sorter != nil {
		l.sorter.close()
		l.sorter = nil
	}
	if l.load != nil {
		l.load.Cancel()
		l.load = nil
	}
	l.bulk.Cancel()
	var whole []*stagedTable
	for _, t := range l.staged {
		if l.opts.BestEffort && t.done {
			whole = append(whole, t)
		} else {
			l.db.dropInBackground(t.id)
		}
	}
	if len(whole) > 0 {
		if perr := l.publish(whole); perr != nil {
			return l.p, perr
		}
	}
	return l.p, err
}

// flushOrLoad stages a full batch. In a table that may be loaded directly, it lets the
// batch grow until the table shows it is large enough (loadFrom, loadFromBytes), then
// starts the load, and the batch goes into it: the table's first entities are then not in
// the store's memtables, which the load must write out first.
func (l *loader) flushOrLoad() error {
	if l.load == nil && l.mayLoad() {
		if l.p.TableEntities < loadFrom && l.size < loadFromBytes {
			return nil
		}
		if err := l.startLoad(); err != nil {
			return err
		}
	}
	return l.flush()
}

// mayLoad says whether the table being read may be loaded directly (see
// ImportOptions.Exclusive): in key order so far, new or replaced, the store not refusing.
func (l *loader) mayLoad() bool {
	t := l.cur
	return l.opts.Exclusive && !l.noLoad && t != nil && !t.unsorted && (t.target == 0 || l.opts.Existing == ExistingReplace)
}

// startLoad starts loading the table being read directly, if the store takes it. The
// Timestamps of the load are reserved first: nothing may be written meanwhile.
func (l *loader) startLoad() error {
	if err := l.bulk.Flush(); err != nil {
		return storageError(err)
	}
	if err := l.db.reserveTicks(); err != nil {
		return err
	}
	load, err := l.db.store.NewLoad()
	if errors.Is(err, storage.ErrNoLoad) {
		l.noLoad = true
		return nil
	}
	if err != nil {
		return storageError(err)
	}
	l.load = load
	if loadStarted != nil {
		loadStarted()
	}
	return nil
}

// stageID is the ID of a table to stage, whose drop marker is stored: one the import
// reserved, or, when it has none left, the first of those it reserves now (idsAhead of them
// in an exclusive import, otherwise one).
func (l *loader) stageID() (uint64, error) {
	if len(l.ids) == 0 {
		n := 1
		if l.opts.Exclusive {
			n = idsAhead
		}
		if err := l.db.update(l.ctx, func(tx *storage.Txn) error {
			ids := make([]uint64, n)
			for i := range ids {
				id, err := allocateTableID(tx)
				if err != nil {
					return err
				}
				if err := tx.Set(dropKey(id), nil); err != nil {
					return err
				}
				ids[i] = id
			}
			l.ids = ids
			return nil
		}); err != nil {
			return 0, err
		}
	}
	id := l.ids[0]
	l.ids = l.ids[1:]
	return id, nil
}

// releaseIDs deletes the drop markers of the IDs the import reserved and did not use, which
// hold nothing. Should it fail, they stay, and the next Open's drops delete them.
func (l *loader) releaseIDs() {
	if len(l.ids) == 0 {
		return
	}
	_ = l.db.store.Update(func(tx *storage.Txn) error {
		for _, id := range l.ids {
			if err := tx.Delete(dropKey(id)); err != nil {
				return err
			}
		}
		return nil
	})
	l.ids = nil
}

// loadStarted, when set (by tests), is called as each direct load starts.
var loadStarted func()

// endLoad writes what the batch holds into the direct load under way, if any, and ends it:
// the store takes other uses again.
func (l *loader) endLoad() error {
	if l.load == nil {
		return nil
	}
	err := l.flush()
	if err == nil {
		err = storageError(l.load.Finish())
	} else {
		l.load.Cancel()
	}
	l.load = nil
	return err
}

// stamp is the next Timestamp of an imported entity: during a direct load one of those
// reserved before it (see reserveTicks), when they last, so that nothing is written.
func (l *loader) stamp() (int64, error) {
	if l.load != nil {
		if ticks, ok := l.db.leaseTick(); ok {
			return ticks, nil
		}
		if err := l.endLoad(); err != nil {
			return 0, err
		}
	}
	return l.db.stamp()
}

// reserveTicks stores a reservation of Timestamps reserveAhead past now, for a direct load to
// hand out without writing (see leaseTick). The load's Timestamps then run from now on, a
// tick apart, whatever time its entities take to load.
func (db *DB) reserveTicks() error {
	db.stampMu.Lock()
	defer db.stampMu.Unlock()
	t := max(ticksOf(db.clock()), db.lastTicks+1)
	reserve := t + reserveAhead
	if err := db.store.UpdateNow(func(tx *storage.Txn) error {
		return tx.Set(clockKey, clockRecord(reserve, clockReserved))
	}); err != nil {
		return storageError(err)
	}
	db.reservedTicks, db.clockSaved = reserve, false
	db.lastTicks = t - 1
	return nil
}

// leaseTick hands out the Timestamp after the last one handed out, if the stored
// reservation covers it, without writing; it does not wait for a stamp under way, which
// may be waiting for the store a direct load holds.
func (db *DB) leaseTick() (int64, bool) {
	if !db.stampMu.TryLock() {
		return 0, false
	}
	defer db.stampMu.Unlock()
	if db.lastTicks >= db.reservedTicks {
		return 0, false
	}
	db.lastTicks++
	return db.lastTicks, true
}

// checkRepeatsAndStored looks up the batch's entities that need it: those that may be in
// the file twice (mayRepeat, when repeats says some are), and, in a table that exists, the stored entity of the same keys, which
// ExistingFail refuses, ExistingSkip keeps and ExistingMerge must merge with within the
// limits. An entity the batch leaves out gets a nil key, counted as skipped: ExistingSkip's
// always, the others' under BestEffort; otherwise the first one is the import's error.
func (l *loader) checkRepeatsAndStored(repeats bool) error {
	if repeats {
		// The keys staged before must be visible to the look-ups.
		if err := l.bulk.Flush(); err != nil {
			return storageError(err)
		}
	}
	var seen map[string]struct{} // the batch's keys so far, when some may repeat
	if repeats {
		seen = make(map[string]struct{}, len(l.batch))
	}
	t, policy := l.cur, l.opts.Existing
	skipped := 0
	err := l.db.view(l.ctx, func(tx *storage.Txn) error {
		for i := range l.batch {
			e := &l.batch[i]
			var why string
			var code *Error
			if e.mayRepeat { // a key not after the one before: it may be staged already
				found, err := tx.Get(e.key, nil)
				if err != nil {
					return err
				}
				if _, twice := seen[string(e.key)]; found || twice {
					why, code = "is in the table twice", ErrInvalidInput
				}
			}
			if why == "" && t.target != 0 && policy != ExistingReplace {
				var old Properties
				if policy == ExistingMerge {
					old = Properties{}
				}
				found, err := tx.Get(entityKey(t.target, e.pk, e.rk), func(v []byte) error {
					if old == nil {
						return nil
					}
					d := decoderPool.Get().(*recordDecoder)
					defer decoderPool.Put(d)
					_, err := d.decode(v, nil, old)
					return err
				})
				if err != nil {
					return err
				}
				switch {
				case !found:
				case policy == ExistingFail:
					why, code = "exists in the table already", ErrEntityAlreadyExists
				case policy == ExistingSkip:
					skipped++
					e.key = nil
					continue
				case policy == ExistingMerge:
					if _, err := mergeProperties(e.pk, e.rk, old, e.props); err != nil {
						why, code = "merged with the stored entity: "+err.Error(), ErrInvalidInput
					}
				}
			}
			if why == "" {
				if seen != nil {
					seen[string(e.key)] = struct{}{}
				}
				continue
			}
			if !l.opts.BestEffort {
				return entityError(e.line, e.path, e.pk, e.rk, why, code)
			}
			skipped++
			e.key = nil
		}
		return nil
	})
	l.p.Skipped += int64(skipped)
	l.p.Entities -= int64(skipped)
	l.p.TableEntities -= int64(skipped)
	return err
}

// publish makes the staged tables visible, in one transaction with the namespaces'
// service properties: a new table by its catalog entry; a table that exists by its entry
// naming the staged data instead, once its stored entities have been copied in by the
// policy (see replaceInto). What was staged and not published, and the data of the
// tables replaced, are dropped.
func (l *loader) publish(staged []*stagedTable) (err error) {
	db := l.db
	published := false
	defer func() {
		if !published {
			l.bulk.Cancel() // no copy may land after the drops below
		}
		for _, t := range staged {
			if t.replaces != nil {
				if published {
					db.replaced(t.ns, t.name, t.replaces)
					db.dropInBackground(t.replaces.rec.ID)
				}
				t.replaces.mu.Unlock()
				t.replaces = nil
			}
			if !published {
				db.dropInBackground(t.id) // staged only: its drop marker is still there
			}
		}
	}()
	if err := l.lockExisting(staged); err != nil {
		return err
	}
	for _, t := range staged {
		if t.replaces != nil {
			if err := l.replaceInto(t); err != nil {
				return err
			}
		}
	}
	if err := l.bulk.Flush(); err != nil {
		return storageError(err)
	}
	var newest int64
	err = db.update(l.ctx, func(tx *storage.Txn) error {
		for _, t := range staged {
			newest = max(newest, t.maxTicks)
			if err := l.publishTable(tx, t); err != nil {
				return err
			}
		}
		for ns, doc := range l.props {
			if err := tx.Set(propertiesKey(ns), doc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	published = true
	if l.opts.KeepTimestamps {
		db.advanceClock(newest, false)
	}
	return nil
}

// lockExisting finds the staged tables whose name a table holds already, and locks their
// open tables (in name order, so that two imports cannot wait for each other), so that no
// write reaches them until they are published.
func (l *loader) lockExisting(staged []*stagedTable) error {
	order := slices.Clone(staged)
	slices.SortFunc(order, func(a, b *stagedTable) int { return strings.Compare(openKey(a.ns, a.name), openKey(b.ns, b.name)) })
	for _, t := range order {
		for {
			ot, err := l.db.resolve(l.ctx, t.ns, t.name)
			if errors.Is(err, ErrTableNotFound) {
				break
			}
			if err != nil {
				return err
			}
			ot.mu.Lock()
			if !ot.dropped.Load() {
				t.replaces = ot
				break
			}
			ot.mu.Unlock()
		}
	}
	return nil
}

// replaceInto copies the stored entities of the table t replaces into its staging area,
// by the policy: an entity the file does not have is copied; one it has is the file's
// (ExistingReplace), the merge of both (ExistingMerge), or, where it was written since it
// was checked, the stored one (ExistingSkip) or an error (ExistingFail).
func (l *loader) replaceInto(t *stagedTable) error {
	policy := l.opts.Existing
	lower, upper := tableBounds(t.replaces.rec.ID)
	prefix := tablePrefix(t.id)
	return l.db.view(l.ctx, func(tx *storage.Txn) error {
		it := tx.Scan(lower, upper)
		defer it.Close()
		for n := 0; it.Next(); n++ {
			if n%1024 == 0 {
				if err := l.ctx.Err(); err != nil {
					return err
				}
			}
			key := append(slices.Clip(prefix), it.Key()[len(prefix):]...)
			var staged []byte
			found, err := tx.Get(key, func(v []byte) error {
				if policy == ExistingMerge {
					staged = bytes.Clone(v)
				}
				return nil
			})
			if err != nil {
				return err
			}
			var record []byte
			switch {
			case !found || policy == ExistingSkip:
				err = it.Value(func(v []byte) error { record = bytes.Clone(v); return nil })
			case policy == ExistingReplace:
				continue
			case policy == ExistingFail:
				pk, rk, _ := decodeEntityKey(key)
				return ErrEntityAlreadyExists.WithDetail("entity (%q, %q) of table %q was created during the import", pk, rk, t.name)
			case policy == ExistingMerge:
				record, err = l.merged(key, staged, it)
			}
			if err != nil {
				return err
			}
			if err := l.bulk.Set(key, record); err != nil {
				return storageError(err)
			}
		}
		return nil
	})
}

// merged is the record of the file's entity (staged) merged into the stored one.
func (l *loader) merged(key, staged []byte, it *storage.Iterator) ([]byte, error) {
	pk, rk, err := decodeEntityKey(key)
	if err != nil {
		return nil, err
	}
	d := decoderPool.Get().(*recordDecoder)
	defer decoderPool.Put(d)
	old, given := Properties{}, Properties{}
	if err := it.Value(func(v []byte) error { _, err := d.decode(v, nil, old); return err }); err != nil {
		return nil, err
	}
	ticks, err := d.decode(staged, nil, given)
	if err != nil {
		return nil, err
	}
	names, err := mergeProperties(pk, rk, old, given)
	if err != nil {
		return nil, ErrInvalidInput.WithDetail("entity (%q, %q), changed during the import, no longer merges with the file's: %v", pk, rk, err)
	}
	return encodeRecord(ticks, old, names), nil
}

// publishTable writes t's catalog entry, its access policies, and takes its drop marker
// off, in tx; a table it replaces gets the drop marker instead.
func (l *loader) publishTable(tx *storage.Txn, t *stagedTable) error {
	db := l.db
	rec, err := lookupTableIn(tx, t.ns, t.name)
	switch {
	case t.replaces != nil && (err != nil || rec.ID != t.replaces.rec.ID):
		return &ImportError{Line: t.line, Field: "table", Rule: fmt.Sprintf("table %q was deleted during the import", t.name), Err: ErrTableNotFound}
	case t.replaces == nil && err == nil:
		return &ImportError{Line: t.line, Field: "table", Rule: fmt.Sprintf("table %q was created during the import; import again", t.name), Err: ErrTableAlreadyExists}
	case t.replaces == nil && !errors.Is(err, ErrTableNotFound):
		return err
	case t.replaces == nil:
		if err := db.deleting.check(t.ns, t.name, db.clock()); err != nil {
			return &ImportError{Line: t.line, Field: "table", Rule: ruleOf(err), Err: err}
		}
		created, err := db.stamp()
		if err != nil {
			return err
		}
		rec = tableRecord{Name: t.name, Created: created}
	}
	policies := t.policies
	if t.replaces != nil {
		if !t.acl {
			if policies, err = readAccessPolicies(tx, rec.ID); err != nil {
				return err
			}
		}
		if err := tx.Delete(aclKey(rec.ID)); err != nil {
			return err
		}
		if err := tx.Set(dropKey(rec.ID), nil); err != nil {
			return err
		}
	}
	rec.ID = t.id
	if err := putTable(tx, t.ns, rec); err != nil {
		return err
	}
	if err := putAccessPolicies(tx, t.id, policies); err != nil {
		return err
	}
	return tx.Delete(dropKey(t.id))
}
