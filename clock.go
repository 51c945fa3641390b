package tabula

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tabuladb/tabula/storage"
)

// The Timestamp clock: max(now, last + 1 tick), so no two writes in a DB share a Timestamp
// (and therefore an ETag) even within one 100 ns tick or when the clock steps back. To keep
// that true across restarts, a bound a little ahead of the Timestamps handed out is persisted
// before they are used (with a real clock, one tiny write every reserveAhead), and Close
// replaces it with the last Timestamp really handed out, marked clean. A database closed
// cleanly therefore resumes at max(now, last + 1 tick), exactly. One that was not (a crash,
// a kill) finds only the reservation; if its clock has passed it, now is right, and if not
// (a restart within reserveAhead of the crash, or a clock stepped back) it reads the newest
// Timestamp stored, a scan of every record that only such a restart pays. Resuming every
// restart from the reservation pushed Timestamps up to reserveAhead further into the
// future each time.
const reserveAhead = 10 * ticksPerSecond

// The clock record (clockKey) is ten bytes: the bound, in ticks (8 bytes, big-endian), what
// the bound is, clockReserved (a reservation) or clockClean (the last Timestamp handed out,
// written by Close), and a zero byte. Formats 1 to 3 wrote eight bytes (a reservation) or
// nine (the clean mark after it, from format 2 on), and builds of those formats refuse a
// clock record of any other length when they open a directory: the ten bytes keep them from
// opening, and misreading, a directory of format 4 or later (see formatVersion). Every
// record form is read; opening a directory of an older format rewrites its record in this one.
const (
	clockReserved = 'r'
	clockClean    = 'c'
	clockLen      = 10
)

// clockRecord is the clock record of a bound and its kind (clockReserved or clockClean).
func clockRecord(ticks int64, kind byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, clockLen), uint64(ticks)), kind, 0)
}

// decodeClock reads a clock record of any format.
func decodeClock(v []byte) (ticks int64, clean bool, err error) {
	switch {
	case len(v) == clockLen && v[9] == 0 && (v[8] == clockReserved || v[8] == clockClean):
		clean = v[8] == clockClean
	case len(v) == 9 && v[8] == clockClean: // formats 2 and 3, after Close
		clean = true
	case len(v) == 8: // formats 1 to 3, a reservation
	default:
		return 0, false, errCorrupt(fmt.Sprintf("clock record %x is none of its forms", v))
	}
	return int64(binary.BigEndian.Uint64(v)), clean, nil
}

// stamp returns the next Timestamp, in ticks.
func (db *DB) stamp() (int64, error) {
	db.stampMu.Lock()
	defer db.stampMu.Unlock()
	t := max(ticksOf(db.clock()), db.lastTicks+1)
	if t > db.reservedTicks {
		reserve := t + reserveAhead
		// stamp runs inside write closures, which a group commit runs (see
		// storage.DB.Update): the reservation commits on its own, before the Timestamp is used.
		err := db.store.UpdateNow(func(tx *storage.Txn) error {
			return tx.Set(clockKey, clockRecord(reserve, clockReserved))
		})
		if err != nil {
			return 0, storageError(err)
		}
		db.reservedTicks, db.clockSaved = reserve, false
	}
	db.lastTicks = t
	return t, nil
}

func (db *DB) loadClock() error {
	found := false
	err := db.store.View(func(tx *storage.Txn) (err error) {
		found, err = tx.Get(clockKey, func(v []byte) (err error) {
			db.reservedTicks, db.clockSaved, err = decodeClock(v)
			return err
		})
		if err != nil || !found || db.clockSaved || ticksOf(db.clock()) > db.reservedTicks {
			// Every Timestamp handed out so far is at most the stored bound (the last one
			// exactly after a clean Close), and now is past it if it was a reservation.
			db.lastTicks = db.reservedTicks
			return err
		}
		db.lastTicks, err = newestStoredTicks(tx)
		return err
	})
	return storageError(err)
}

// newestStoredTicks returns the newest Timestamp of any entity or table on disk, in any
// namespace.
func newestStoredTicks(tx *storage.Txn) (int64, error) {
	var newest int64
	it := tx.Scan([]byte{prefixEntity}, []byte{prefixEntity + 1})
	defer it.Close()
	for it.Next() {
		err := it.Value(func(v []byte) error {
			ticks, err := recordTicks(v)
			newest = max(newest, ticks)
			return err
		})
		if errors.Is(err, storage.ErrDamaged) {
			// Its reads fail until it is written again; the rest still sets the clock.
			continue
		}
		if err != nil {
			return 0, err
		}
	}
	err := everyTable(tx, nil, func(_ string, rec tableRecord) error {
		newest = max(newest, rec.Created)
		return nil
	})
	return newest, err
}

// saveClock replaces the persisted reservation with the last Timestamp handed out, so that
// the next Open resumes from it rather than from the reservation. Close calls it; a failure
// (a full disk, say) leaves the reservation, which is safe.
func (db *DB) saveClock() {
	db.stampMu.Lock()
	defer db.stampMu.Unlock()
	if db.clockSaved {
		return
	}
	err := db.store.Update(func(tx *storage.Txn) error {
		return tx.Set(clockKey, clockRecord(db.lastTicks, clockClean))
	})
	if err == nil {
		db.reservedTicks, db.clockSaved = db.lastTicks, true
	}
}

// advanceClock moves the Timestamp clock past ticks, so that a write after an import that
// kept the file's Timestamps, or after a Restore, gets a newer one than any stored. After
// a Restore (restored), the clock record is the snapshot's, so the next Timestamp reserves
// anew.
func (db *DB) advanceClock(ticks int64, restored bool) {
	db.stampMu.Lock()
	defer db.stampMu.Unlock()
	db.lastTicks = max(db.lastTicks, ticks)
	if restored {
		db.reservedTicks, db.clockSaved = 0, false
	}
}
