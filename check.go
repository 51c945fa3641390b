package tabula

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/tabuladb/tabula/storage"
)

// maxCheckProblems bounds what Check reports: past it a damaged store would only repeat
// itself, and the report would grow with the data.
const maxCheckProblems = 100

// Check verifies the database's bytes and its own invariants, beyond anything the service
// defines: a maintenance tool (`tabula check --data DIR`) and what every test of this
// package runs on the databases it opens before closing them. It reports, joined in one
// error, each of these that does not hold:
//   - every block of every table on disk and every value in the value log passes its
//     checksum, and the logs are whole (storage.DB.Verify); damage is reported by file,
//     with the tables and keys the file holds, and matches ErrDamaged;
//   - the format version is recorded and is this build's (format.go), and every key belongs
//     to the key space (keys.go) and every record decodes in that format;
//   - every entity belongs to a table in the catalog or to a deleted table whose data is
//     still to drop, and every table's stored access policies to a table in the catalog;
//   - the table-ID counter is above every table ID in use, so none is ever reused;
//   - the clock, on disk and in memory, is at or after the newest Timestamp stored, so the
//     next write's Timestamp (and ETag) is newer than every one handed out;
//   - the statistics of the simulated service's range partitions (the heat report's
//     entities and bytes) match what each table opened since Open holds.
//
// The last needs a database at rest: run Check when no write is under way. A nil error
// means every invariant holds.
func (db *DB) Check(ctx context.Context) error {
	c, err := db.check(ctx)
	if err != nil {
		return err
	}
	return errors.Join(c.problems...)
}

// check runs Check and returns its checker, which has read the catalog.
func (db *DB) check(ctx context.Context) (*checker, error) {
	// The statistics compared at the end must hold the open tables' counts.
	var waitErr error
	db.open.m.Range(func(_, v any) bool {
		waitErr = v.(*openTable).waitCounted(ctx)
		return waitErr == nil
	})
	if waitErr != nil {
		return nil, waitErr
	}
	c := &checker{db: db, ctx: ctx, live: map[uint64]string{}, drops: map[uint64]bool{}, counted: map[uint64]*tableHolds{}}
	damage := db.store.Verify(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	err := db.view(ctx, c.scan)
	if errors.Is(err, storage.ErrDamaged) {
		// The store was opened read-only around damaged tables, and the scan needed them:
		// what Verify found says which.
		damage = cmp.Or(damage, err)
		c.report("the checks of keys and records stopped at the damage")
	} else if err != nil {
		return nil, err
	}
	c.reportDamage(damage)
	if err == nil {
		c.checkCounters()
		c.checkStatistics()
	}
	if len(c.problems) >= maxCheckProblems {
		c.problems = append(c.problems[:maxCheckProblems], errors.New("more problems not reported"))
	}
	return c, nil
}

// tableHolds is what the store holds of a table: its entities and their bytes.
type tableHolds struct{ entities, bytes int64 }

// checker is the state of one Check: what the scan has seen so far, and the problems.
type checker struct {
	db       *DB
	ctx      context.Context
	problems []error

	live       map[uint64]string // table ID → the table's name, namespace-qualified
	drops      map[uint64]bool
	counted    map[uint64]*tableHolds // live tables' entities and bytes
	entityIDs  []uint64               // entities' table IDs in key order, so each table's are one run
	aclIDs     []uint64
	maxID      uint64
	newest     int64 // ticks
	nextID     uint64
	haveNextID bool
	clock      int64
	haveClock  bool
	clockOld   bool // the clock record is in the form of a format before 4
	haveFormat bool
	empty      bool
	props      Properties // reused to decode each entity's record
}

func (c *checker) report(format string, args ...any) {
	if len(c.problems) <= maxCheckProblems {
		c.problems = append(c.problems, fmt.Errorf(format, args...))
	}
}

func (c *checker) useID(id uint64) { c.maxID = max(c.maxID, id) }

// reportDamage reports each damaged file with what it holds, in the terms of tables and
// keys, and once what to do about it.
func (c *checker) reportDamage(damage error) {
	if damage == nil {
		return
	}
	var all []error
	if j, ok := damage.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	} else {
		all = []error{damage}
	}
	for _, err := range all {
		var d *storage.Damage
		if !errors.As(err, &d) {
			c.report("%v", err)
			continue
		}
		if d.Lower == nil {
			c.problems = append(c.problems, fmt.Errorf("%w: %v", ErrDamaged, d))
			continue
		}
		c.problems = append(c.problems, fmt.Errorf("%w: %v; it holds %s to %s", ErrDamaged, d, c.describe(d.Lower), c.describe(d.Upper)))
	}
	c.problems = append(c.problems, fmt.Errorf("what to do: %s", damageAdvice))
}

// describe names the key in the terms of tables and entities, as far as it can be read.
func (c *checker) describe(key []byte) string {
	if len(key) == 0 {
		return "the first key"
	}
	switch key[0] {
	case prefixEntity:
		if len(key) < 9 {
			break
		}
		id := binary.BigEndian.Uint64(key[1:9])
		table := c.live[id]
		if table == "" {
			table = fmt.Sprintf("table ID %d", id)
		} else {
			table = fmt.Sprintf("table %q", table)
		}
		if pk, rk, err := decodeEntityKey(key); err == nil {
			return fmt.Sprintf("%s, PartitionKey %q, RowKey %q", table, pk, rk)
		}
		return table
	case prefixTable, prefixNamespaceTable:
		return "the list of tables"
	case prefixACL:
		return "the tables' stored access policies"
	case prefixMeta:
		return "the database's own records"
	}
	return fmt.Sprintf("key %q", key)
}

// scan reads every key and record of the store and checks each.
func (c *checker) scan(tx *storage.Txn) error {
	it := tx.Scan(nil, nil)
	defer it.Close()
	c.empty = true
	for n := 0; it.Next(); n++ {
		if n%1024 == 0 {
			if err := c.ctx.Err(); err != nil {
				return err
			}
		}
		key := it.Key()
		c.empty = false
		var value []byte
		if err := it.Value(func(v []byte) error { value = v; return nil }); err != nil {
			// A value in the value log that fails its checksum: the rest goes on.
			c.report("%s: %v", c.describe(key), err)
			continue
		}
		c.checkKey(key, value)
	}
	// Entities and access policies of a table neither in the catalog nor being dropped are
	// unreachable forever.
	for _, id := range c.entityIDs {
		if c.live[id] == "" && !c.drops[id] {
			c.report("table ID %d: %d entities, but no table in the catalog and no drop marker", id, c.counted[id].entities)
		}
	}
	for _, id := range c.aclIDs {
		if c.live[id] == "" {
			c.report("table ID %d: stored access policies, but no table in the catalog", id)
		}
	}
	return nil
}

// checkKey checks one key and its value, by the part of the key space it belongs to.
func (c *checker) checkKey(key, value []byte) {
	switch key[0] {
	case prefixEntity:
		c.checkEntity(key, value)
	case prefixTable, prefixNamespaceTable:
		c.checkTable(key, value)
	case prefixDrop, prefixACL:
		if len(key) != 9 {
			c.report("%s key %q: not a table ID", map[byte]string{prefixDrop: "drop marker", prefixACL: "access policy"}[key[0]], key)
			return
		}
		id := binary.BigEndian.Uint64(key[1:])
		c.useID(id)
		if key[0] == prefixDrop {
			c.drops[id] = true
		} else {
			c.aclIDs = append(c.aclIDs, id)
		}
	case prefixProperties, prefixOwner:
		if _, _, _, err := storage.NextPart(key[1:]); err != nil {
			c.report("%s key %q: %v", map[byte]string{prefixProperties: "service properties", prefixOwner: "owner"}[key[0]], key, err)
		}
	case prefixMeta:
		c.checkMeta(key, value)
	default:
		c.report("key %q: no prefix of the key space", key)
	}
}

func (c *checker) checkEntity(key, value []byte) {
	if len(key) < 9 {
		c.report("entity key %q: too short", key)
		return
	}
	id := binary.BigEndian.Uint64(key[1:9])
	c.useID(id)
	if _, _, err := cutEntityKey(key); err != nil {
		c.report("entity key %q: %v", key, err)
	}
	d := decoderPool.Get().(*recordDecoder)
	if c.props == nil {
		c.props = Properties{}
	}
	clear(c.props)
	ticks, err := d.decode(value, nil, c.props)
	decoderPool.Put(d)
	if err != nil {
		c.report("entity key %q: %v", key, err)
	}
	c.newest = max(c.newest, ticks)
	if len(c.entityIDs) == 0 || c.entityIDs[len(c.entityIDs)-1] != id {
		c.entityIDs = append(c.entityIDs, id)
	}
	s := c.counted[id]
	if s == nil {
		s = &tableHolds{}
		c.counted[id] = s
	}
	s.entities++
	s.bytes += int64(len(key) + len(value))
}

func (c *checker) checkTable(key, value []byte) {
	rec, err := decodeTableRecord(value)
	if err != nil {
		c.report("catalog key %q: %v", key, err)
		return
	}
	c.useID(rec.ID)
	c.newest = max(c.newest, rec.Created)
	ns := ""
	if key[0] == prefixNamespaceTable {
		part, _, _, err := storage.NextPart(key[1:])
		if err != nil {
			c.report("catalog key %q: %v", key, err)
			return
		}
		ns = part
	}
	if want := catalogKey(ns, rec.Name); string(want) != string(key) {
		c.report("catalog key %q holds table %q, whose key is %q", key, rec.Name, want)
	}
	if other, dup := c.live[rec.ID]; dup {
		c.report("tables %q and %q share ID %d", other, serviceTableName(ns, rec.Name), rec.ID)
	}
	c.live[rec.ID] = serviceTableName(ns, rec.Name)
}

func (c *checker) checkMeta(key, value []byte) {
	switch string(key) {
	case string(nextTableIDKey):
		if len(value) != 8 {
			c.report("table-ID counter is %d bytes, not 8", len(value))
			return
		}
		c.nextID, c.haveNextID = binary.BigEndian.Uint64(value), true
	case string(clockKey):
		ticks, _, err := decodeClock(value)
		if err != nil {
			c.report("%v", err)
			return
		}
		c.clock, c.haveClock = ticks, true
		if len(value) != clockLen {
			c.clockOld = true
		}
	case string(formatKey):
		if len(value) != 4 || binary.BigEndian.Uint32(value) != formatVersion {
			c.report("format version record %x is not format version %d", value, formatVersion)
		}
		c.haveFormat = true
	default:
		c.report("unknown metadata key %q", key)
	}
}

// checkCounters checks the format record, the table-ID counter and the clock against what
// the scan saw.
func (c *checker) checkCounters() {
	if !c.empty && !c.haveFormat {
		c.report("format version not recorded: a directory of an older format, not yet upgraded")
	}
	if c.haveFormat && c.clockOld {
		c.report("clock record in the form of a format before %d", formatVersion)
	}
	if c.maxID > 0 && (!c.haveNextID || c.nextID <= c.maxID) {
		c.report("table-ID counter is %d (present: %v), not above the largest ID in use, %d", c.nextID, c.haveNextID, c.maxID)
	}
	if c.newest > 0 && (!c.haveClock || c.clock < c.newest) {
		c.report("stored clock is %d ticks (present: %v), before the newest Timestamp stored, %d", c.clock, c.haveClock, c.newest)
	}
	c.db.stampMu.Lock()
	last := c.db.lastTicks
	c.db.stampMu.Unlock()
	if last < c.newest {
		c.report("clock in memory is %d ticks, before the newest Timestamp stored, %d", last, c.newest)
	}
}

// checkStatistics checks each open table's range-partition statistics against what the
// store holds.
func (c *checker) checkStatistics() {
	var open []*openTable
	c.db.open.m.Range(func(_, v any) bool {
		open = append(open, v.(*openTable))
		return true
	})
	slices.SortFunc(open, func(a, b *openTable) int { return cmp.Compare(a.rec.ID, b.rec.ID) })
	for _, ot := range open {
		if ot.dropped.Load() || c.live[ot.rec.ID] == "" {
			continue
		}
		var got tableHolds
		for _, r := range ot.service.Ranges() {
			got.entities += r.Entities
			got.bytes += r.Bytes
		}
		want := tableHolds{}
		if s := c.counted[ot.rec.ID]; s != nil {
			want = *s
		}
		if got != want {
			c.report("table %q: statistics say %d entities and %d bytes, the store holds %d and %d",
				c.live[ot.rec.ID], got.entities, got.bytes, want.entities, want.bytes)
		}
	}
}
