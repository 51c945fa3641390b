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

// Check verifies the database's own invariants, beyond anything the service defines: a
// maintenance tool (`tabula check --data DIR`) and what every test of this package runs on
// the databases it opens before closing them. It reads the whole store in one snapshot and
// reports, joined in one error, each of these that does not hold:
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
	var problems []error
	report := func(format string, args ...any) {
		if len(problems) < maxCheckProblems {
			problems = append(problems, fmt.Errorf(format, args...))
		}
	}
	type stored struct{ entities, bytes int64 }
	var (
		live       = map[uint64]string{} // table ID → the table's name, namespace-qualified
		drops      = map[uint64]bool{}
		counted    = map[uint64]*stored{} // live tables' entities and bytes
		maxID      uint64
		newest     int64 // ticks
		nextID     uint64
		haveNextID bool
		clock      int64
		haveClock  bool
		clockOld   bool // the clock record is in the form of a format before 4
		haveFormat bool
		empty      = true
	)
	useID := func(id uint64) { maxID = max(maxID, id) }
	// The statistics compared at the end must hold the open tables' counts.
	var waitErr error
	db.open.m.Range(func(_, v any) bool {
		waitErr = v.(*openTable).waitCounted(ctx)
		return waitErr == nil
	})
	if waitErr != nil {
		return waitErr
	}
	err := db.view(ctx, func(tx *storage.Txn) error {
		it := tx.Scan(nil, nil)
		defer it.Close()
		var entityIDs, aclIDs []uint64 // entities' in key order, so each table's are one run
		for n := 0; it.Next(); n++ {
			if n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			key := it.Key()
			empty = false
			var value []byte
			if err := it.Value(func(v []byte) error { value = v; return nil }); err != nil {
				return err
			}
			switch key[0] {
			case prefixEntity:
				if len(key) < 9 {
					report("entity key %q: too short", key)
					continue
				}
				id := binary.BigEndian.Uint64(key[1:9])
				useID(id)
				if _, _, err := cutEntityKey(key); err != nil {
					report("entity key %q: %v", key, err)
				}
				ticks, err := recordTicks(value)
				if err != nil {
					report("entity key %q: %v", key, err)
				}
				newest = max(newest, ticks)
				if len(entityIDs) == 0 || entityIDs[len(entityIDs)-1] != id {
					entityIDs = append(entityIDs, id)
				}
				c := counted[id]
				if c == nil {
					c = &stored{}
					counted[id] = c
				}
				c.entities++
				c.bytes += int64(len(key) + len(value))
			case prefixTable, prefixNamespaceTable:
				rec, err := decodeTableRecord(value)
				if err != nil {
					report("catalog key %q: %v", key, err)
					continue
				}
				useID(rec.ID)
				newest = max(newest, rec.Created)
				ns := ""
				if key[0] == prefixNamespaceTable {
					part, _, _, err := storage.NextPart(key[1:])
					if err != nil {
						report("catalog key %q: %v", key, err)
						continue
					}
					ns = part
				}
				if want := catalogKey(ns, rec.Name); string(want) != string(key) {
					report("catalog key %q holds table %q, whose key is %q", key, rec.Name, want)
				}
				if other, dup := live[rec.ID]; dup {
					report("tables %q and %q share ID %d", other, serviceTableName(ns, rec.Name), rec.ID)
				}
				live[rec.ID] = serviceTableName(ns, rec.Name)
			case prefixDrop:
				if len(key) != 9 {
					report("drop marker %q: not a table ID", key)
					continue
				}
				id := binary.BigEndian.Uint64(key[1:])
				useID(id)
				drops[id] = true
			case prefixACL:
				if len(key) != 9 {
					report("access policy key %q: not a table ID", key)
					continue
				}
				id := binary.BigEndian.Uint64(key[1:])
				useID(id)
				aclIDs = append(aclIDs, id)
			case prefixProperties:
				if _, _, _, err := storage.NextPart(key[1:]); err != nil {
					report("service properties key %q: %v", key, err)
				}
			case prefixOwner:
				if _, _, _, err := storage.NextPart(key[1:]); err != nil {
					report("owner key %q: %v", key, err)
				}
			case prefixMeta:
				switch string(key) {
				case string(nextTableIDKey):
					if len(value) != 8 {
						report("table-ID counter is %d bytes, not 8", len(value))
						continue
					}
					nextID, haveNextID = binary.BigEndian.Uint64(value), true
				case string(clockKey):
					ticks, _, err := decodeClock(value)
					if err != nil {
						report("%v", err)
						continue
					}
					clock, haveClock = ticks, true
					if len(value) != clockLen {
						clockOld = true
					}
				case string(formatKey):
					if len(value) != 4 || binary.BigEndian.Uint32(value) != formatVersion {
						report("format version record %x is not format version %d", value, formatVersion)
					}
					haveFormat = true
				default:
					report("unknown metadata key %q", key)
				}
			default:
				report("key %q: no prefix of the key space", key)
			}
		}
		// Entities and access policies of a table neither in the catalog nor being dropped are
		// unreachable forever.
		for _, id := range entityIDs {
			if live[id] == "" && !drops[id] {
				report("table ID %d: %d entities, but no table in the catalog and no drop marker", id, counted[id].entities)
			}
		}
		for _, id := range aclIDs {
			if live[id] == "" {
				report("table ID %d: stored access policies, but no table in the catalog", id)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !empty && !haveFormat {
		report("format version not recorded: a directory of an older format, not yet upgraded")
	}
	if haveFormat && clockOld {
		report("clock record in the form of a format before %d", formatVersion)
	}
	if maxID > 0 && (!haveNextID || nextID <= maxID) {
		report("table-ID counter is %d (present: %v), not above the largest ID in use, %d", nextID, haveNextID, maxID)
	}
	if newest > 0 && (!haveClock || clock < newest) {
		report("stored clock is %d ticks (present: %v), before the newest Timestamp stored, %d", clock, haveClock, newest)
	}
	db.stampMu.Lock()
	last := db.lastTicks
	db.stampMu.Unlock()
	if last < newest {
		report("clock in memory is %d ticks, before the newest Timestamp stored, %d", last, newest)
	}
	var open []*openTable
	db.open.m.Range(func(_, v any) bool {
		open = append(open, v.(*openTable))
		return true
	})
	slices.SortFunc(open, func(a, b *openTable) int { return cmp.Compare(a.rec.ID, b.rec.ID) })
	for _, ot := range open {
		if ot.dropped.Load() || live[ot.rec.ID] == "" {
			continue
		}
		var got stored
		for _, r := range ot.service.Ranges() {
			got.entities += r.Entities
			got.bytes += r.Bytes
		}
		want := stored{}
		if c := counted[ot.rec.ID]; c != nil {
			want = *c
		}
		if got != want {
			report("table %q: statistics say %d entities and %d bytes, the store holds %d and %d",
				live[ot.rec.ID], got.entities, got.bytes, want.entities, want.bytes)
		}
	}
	if len(problems) == maxCheckProblems {
		problems = append(problems, errors.New("more problems not reported"))
	}
	return errors.Join(problems...)
}
