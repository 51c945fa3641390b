package tabula

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tabuladb/tabula/storage"
)

// formatVersion is the format of the data directories this build writes, recorded under
// formatKey. Open refuses a directory of a newer format, naming both versions, and upgrades
// one of an older format in place, logging it (Options.Logger). The formats so far, each
// named by the commit of main that first wrote it:
//
//  1. The first release (cce054d, "Core engine"): entities under 'e', the root catalog under
//     't', drop markers under 'd', the table-ID counter and the clock record under 'm'; the
//     clock record is eight bytes, a reservation.
//  2. Close marks the clock record clean, a ninth byte (7fbda75, merged in 4bd5e90). Builds
//     of format 1 refuse a directory closed cleanly by one of format 2 as corrupt, and open
//     one left by a crash.
//  3. Namespaces, one per account (6fcd99d, merged in 3df244a): catalogs under 'n', access
//     policies under 'a', service properties under 'p'. Builds of formats 1 and 2 open such
//     a directory without a word and serve every account from the root namespace.
//  4. The format is recorded under formatKey, and the clock record is ten bytes (see
//     clockRecord). Formats 1 to 3 recorded no version, and their builds check nothing
//     when they open a directory but the clock record's length, which they require to be
//     8 (format 1) or 8 or 9 (formats 2 and 3); they ignore metadata keys they do not know.
//     So a build of formats 1 to 3 refuses a directory of this format, calling its clock
//     record corrupt, whether it was closed cleanly or left by a crash, before it reads or
//     writes anything else; that its message says corrupt rather than newer cannot be changed
//     now. The ten bytes were chosen over anything that old builds would have to scan for:
//     every format-4 directory, even an empty one, has a clock record from its first Open,
//     and it is the only record those builds read at Open, so none of them can get further.
//     The record of which account owns which namespace (issue 23) belongs to this format.
//     Directories of formats 1 to 3 have none; Open cannot write it for them, since only the
//     front end knows the accounts, so the front end assigns them on its first start as
//     before (the first account the root namespace) and records that. Any other step an
//     older directory needs goes in upgradeFormat.
//
// A later format adds its number here, a step in upgradeFormat for the directories of the
// previous one, and nothing for older builds to detect: from format 4 on, every build reads
// formatKey first and refuses a newer version.
const formatVersion = 4

// openFormat checks the directory's format when the database opens, before anything else
// reads or writes it: a newer format is refused with nothing changed; an older one, or a new
// empty directory, is brought to formatVersion. dir names the directory in messages ("" in
// memory); a nil logger means slog.Default() (see Options.Logger).
func (db *DB) openFormat(dir string, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	var recorded uint32
	var found bool
	from := 0 // the directory's format; 0 when it holds nothing yet
	err := db.store.View(func(tx *storage.Txn) (err error) {
		found, err = tx.Get(formatKey, func(v []byte) error {
			if len(v) != 4 {
				return errCorrupt(fmt.Sprintf("format version record %x is not 4 bytes", v))
			}
			recorded = binary.BigEndian.Uint32(v)
			return nil
		})
		if err != nil || found {
			return err
		}
		from, err = unrecordedFormat(tx)
		return err
	})
	if err != nil {
		return storageError(err)
	}
	if found {
		switch {
		case recorded > formatVersion:
			return ErrInternal.WithDetail("the data directory %sis in format version %d, newer than this build of Tabula, "+
				"which reads format versions up to %d: open it with the build that wrote it or a newer one", quoted(dir), recorded, formatVersion)
		case recorded < formatVersion:
			// 4 is the first version ever recorded; a later format upgrades from it here.
			return errCorrupt(fmt.Sprintf("format version %d was never recorded by any build", recorded))
		}
		return nil
	}
	err = storageError(db.store.Update(func(tx *storage.Txn) error { return upgradeFormat(tx) }))
	switch {
	case errors.Is(err, ErrDiskFull):
		// Opened read-only: every format so far reads as this one does. The next Open that
		// has room records the version; a write before it (once space is freed) writes the
		// clock record in its current form, which already keeps older builds out.
		if from > 0 && from < formatVersion {
			logger.Warn("tabula: the data directory is in an older format, to be upgraded when there is disk space to write",
				"dir", dir, "format", from, "current", formatVersion)
		}
		return nil
	case err != nil:
		return err
	}
	if from > 0 && from < formatVersion {
		logger.Info("tabula: upgraded the data directory's format; builds of older formats will refuse to open it",
			"dir", dir, "from", from, "to", formatVersion)
	}
	return nil
}

// quoted is dir quoted and followed by a space, or nothing in memory.
func quoted(dir string) string {
	if dir == "" {
		return ""
	}
	return fmt.Sprintf("%q ", dir)
}

// unrecordedFormat tells which format a directory without a recorded version is in: the
// oldest whose builds read everything it holds (a directory of format 3 with no namespace
// but the root one is, byte for byte, one of format 2, or of format 1 after a crash). It is
// 0 for an empty store, and formatVersion for a directory of this format whose version
// could not be recorded when it was opened (it was opened read-only, and written to later).
func unrecordedFormat(tx *storage.Txn) (int, error) {
	if !exists(tx, nil, nil) {
		return 0, nil
	}
	for _, prefix := range []byte{prefixNamespaceTable, prefixACL, prefixProperties} {
		if exists(tx, []byte{prefix}, []byte{prefix + 1}) {
			return 3, nil
		}
	}
	var n int
	if _, err := tx.Get(clockKey, func(v []byte) error { n = len(v); return nil }); err != nil {
		return 0, err
	}
	switch n {
	case clockLen:
		return formatVersion, nil
	case 9:
		return 2, nil
	}
	return 1, nil
}

// exists reports whether any key lies in [lower, upper).
func exists(tx *storage.Txn, lower, upper []byte) bool {
	it := tx.Scan(lower, upper)
	defer it.Close()
	return it.Next()
}

// upgradeFormat brings a directory of a format before 4 (or a new one) to formatVersion, in
// one transaction. Every format so far holds only what this build reads; what changes is the
// clock record's form, which is rewritten with the same meaning, and the version, which is
// recorded.
func upgradeFormat(tx *storage.Txn) error {
	var rec []byte
	found, err := tx.Get(clockKey, func(v []byte) error {
		ticks, clean, err := decodeClock(v)
		kind := byte(clockReserved)
		if clean {
			kind = clockClean
		}
		rec = clockRecord(ticks, kind)
		return err
	})
	if err != nil {
		return err
	}
	if !found {
		// An empty directory, or one that was never written: nothing was handed out.
		rec = clockRecord(0, clockClean)
	}
	if err := tx.Set(clockKey, rec); err != nil {
		return err
	}
	// Formats 1 to 3 → 4: any other step goes here (the record of which account owns which
	// namespace is the front end's to write: see formatVersion).
	return tx.Set(formatKey, binary.BigEndian.AppendUint32(nil, formatVersion))
}
