package tabula

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/storage"
)

// copyFixture copies a directory under testdata to a directory of the test, which may
// change it.
func copyFixture(t *testing.T, fixture string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	require.NoError(t, os.CopyFS(dir, os.DirFS(fixture)))
	return dir
}

// logTo returns a logger writing text lines to buf.
func logTo(buf *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(buf, nil)) }

// storedMeta returns the stored format version record and clock record.
func storedMeta(t *testing.T, db *DB) (format, clock []byte) {
	t.Helper()
	require.NoError(t, db.store.View(func(tx *storage.Txn) error {
		if _, err := tx.Get(formatKey, func(v []byte) error { format = bytes.Clone(v); return nil }); err != nil {
			return err
		}
		_, err := tx.Get(clockKey, func(v []byte) error { clock = bytes.Clone(v); return nil })
		return err
	}))
	return format, clock
}

// snapshotDir returns every key and value stored in a closed directory.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	store, err := storage.Open(storage.Options{Dir: dir})
	require.NoError(t, err)
	defer func() { require.NoError(t, store.Close()) }()
	out := map[string]string{}
	require.NoError(t, store.View(func(tx *storage.Txn) error {
		it := tx.Scan(nil, nil)
		defer it.Close()
		for it.Next() {
			key := string(it.Key())
			if err := it.Value(func(v []byte) error { out[key] = string(v); return nil }); err != nil {
				return err
			}
		}
		return nil
	}))
	return out
}

// firstRelease is what testdata/format1 holds, table by table, each in key order (see its
// README): the first release's writer stamped the n-th write at 23:30:00 plus n seconds.
func firstRelease(t *testing.T) map[string][]Entity {
	at := func(s int) time.Time { return time.Date(2026, 11, 21, 23, 30, s, 0, time.UTC) }
	guid, err := ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")
	require.NoError(t, err)
	return map[string][]Entity{
		"Movies": {
			{PartitionKey: "Nolan", RowKey: "Inception", Timestamp: at(2), Properties: Properties{
				"Title":    String("Inception"),
				"Year":     Int32(2010),
				"Gross":    Int64(836_800_000),
				"Rating":   Double(8.8),
				"Released": DateTime(time.Date(2010, 7, 16, 0, 0, 0, 0, time.UTC)),
				"Color":    Boolean(true),
				"Id":       guid,
				"Poster":   Binary{0x89, 'P', 'N', 'G', 0x00, 0xff},
			}},
			{PartitionKey: "Nolan", RowKey: "Memento", Timestamp: at(6), Properties: Properties{
				"Year": Int32(2000), "Color": Boolean(false), "Rating": Double(8.4),
			}},
			{PartitionKey: "Varda", RowKey: "Cléo de 5 à 7", Timestamp: at(5), Properties: Properties{
				"Year":   Int32(1962),
				"Rating": Double(math.Inf(1)),
				"Min":    Int64(math.MinInt64),
				"Early":  DateTime(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)),
			}},
		},
		"people": {
			{PartitionKey: "", RowKey: "", Timestamp: at(9), Properties: Properties{"Empty": String("")}},
			{PartitionKey: "Zoë", RowKey: "🎬 director", Timestamp: at(8), Properties: Properties{"Name": String("日本語の名前")}},
		},
		"ARCHIVE": {
			{PartitionKey: "p", RowKey: "kept", Timestamp: at(13), Properties: Properties{"N": Int32(2)}},
		},
	}
}

// readBack reads every table of the root namespace and its entities, through the API.
func readBack(t *testing.T, db *DB) map[string][]Entity {
	t.Helper()
	ctx := context.Background()
	out := map[string][]Entity{}
	for info, err := range db.Tables(ctx, "") {
		require.NoError(t, err)
		out[info.Name] = []Entity{}
		for e, err := range db.Table(info.Name).QueryAll(ctx, Query{}) {
			require.NoError(t, err)
			e.ETag = "" // a function of the Timestamp, which is compared
			out[info.Name] = append(out[info.Name], e)
		}
	}
	return out
}

// A directory written by the first release (format 1, testdata/format1) opens in this build:
// it is upgraded in place, with a log line; every table and entity reads back as written, the
// deleted tables stay deleted, the clock resumes after the newest Timestamp stored, and the
// database passes Check. Reopened, it opens with nothing more to upgrade.
func TestOpenUpgradesTheFirstReleasesFormat(t *testing.T) {
	ctx := context.Background()
	dir := copyFixture(t, "testdata/format1/db")
	var log bytes.Buffer
	// The clock stands where the writer's stopped, before the reservation it left, so only
	// the stored Timestamps tell where to resume; the newest is the last of Scratch's
	// entities, at 23:30:34, still on disk until the drop the first release left unfinished
	// has run.
	clock := &fakeClock{now: time.Date(2026, 11, 21, 23, 30, 20, 0, time.UTC)}
	opts := &Options{Clock: clock.Now, Logger: logTo(&log)}
	db, err := openDir(t, dir, opts)
	require.NoError(t, err)

	assert.Contains(t, log.String(), "level=INFO msg=\"tabula: upgraded the data directory's format")
	assert.Contains(t, log.String(), fmt.Sprintf("dir=%s from=1 to=%d", dir, formatVersion))
	format, rec := storedMeta(t, db)
	assert.Equal(t, binary.BigEndian.AppendUint32(nil, formatVersion), format)
	// The first release's reservation (23:30:44), rewritten in this format's form.
	assert.Equal(t, clockRecord(ticksOf(time.Date(2026, 11, 21, 23, 30, 44, 0, time.UTC)), clockReserved), rec)

	assert.Equal(t, firstRelease(t), readBack(t, db))
	_, err = db.Table("Scratch").Get(ctx, "p", "000")
	assert.True(t, errors.Is(err, ErrTableNotFound) || errors.Is(err, ErrResourceNotFound), "%v", err)
	_, err = db.Table("Movies").Get(ctx, "Nolan", "Tenet")
	assert.ErrorIs(t, err, ErrResourceNotFound)
	_, err = db.CreateTable(ctx, "Scratch")
	require.NoError(t, err, "the deleted table's name is free")
	e, err := db.Table("Movies").Insert(ctx, Entity{PartitionKey: "Nolan", RowKey: "Tenet"})
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 11, 21, 23, 30, 34, 200, time.UTC), e.Timestamp,
		"two ticks after the newest Timestamp stored (CreateTable took the first)")
	require.NoError(t, db.Check(ctx))

	log.Reset()
	db = reopenStore(t, db) // Check, Close, Open
	assert.Empty(t, log.String(), "nothing left to upgrade")
	format, _ = storedMeta(t, db)
	assert.Equal(t, binary.BigEndian.AppendUint32(nil, formatVersion), format)
	want := firstRelease(t)
	want["Movies"] = append(want["Movies"][:2], Entity{PartitionKey: "Nolan", RowKey: "Tenet", Timestamp: e.Timestamp, Properties: Properties{}}, want["Movies"][2])
	want["Scratch"] = []Entity{}
	assert.Equal(t, want, readBack(t, db))
}

// A directory of a newer format than this build's is refused with an error naming both
// versions, and nothing in it changes.
func TestOpenRefusesANewerFormat(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	tbl := createTable(t, db, "Movies")
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "r", Properties: Properties{"N": Int32(1)}})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	// A later build stamps its version, and may change anything else, the clock record too.
	store, err := storage.Open(storage.Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, store.Update(func(tx *storage.Txn) error {
		if err := tx.Set(clockKey, []byte("a clock record of format 5")); err != nil {
			return err
		}
		return tx.Set(formatKey, binary.BigEndian.AppendUint32(nil, formatVersion+1))
	}))
	require.NoError(t, store.Close())
	before := snapshotDir(t, dir)

	var log bytes.Buffer
	db, err = Open(dir, &Options{Logger: logTo(&log)})
	require.Error(t, err)
	assert.Nil(t, db)
	assert.ErrorIs(t, err, ErrInternal)
	assert.Equal(t, fmt.Sprintf("tabula: the data directory %q is in format version %d, newer than this build of Tabula, "+
		"which reads format versions up to %d: open it with the build that wrote it or a newer one (InternalError)",
		dir, formatVersion+1, formatVersion), err.Error())
	assert.Empty(t, log.String())
	assert.Equal(t, before, snapshotDir(t, dir), "the refused directory changed")
}

// What Open does with each kind of directory, by what it finds in the store: the format it
// infers when none is recorded (the oldest whose builds read everything there), the version
// and clock record it leaves, and the log line.
func TestOpenFormat(t *testing.T) {
	ticks := ticksOf(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	be64 := binary.BigEndian.AppendUint64(nil, uint64(ticks))
	version := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	current := version(formatVersion)
	table := tableRecord{ID: 1, Name: "Movies", Created: ticks}.encode()
	cases := []struct {
		name      string
		stored    map[string][]byte // the store's keys besides what any DB holds, and their values
		wantClock []byte            // the clock record left
		wantLog   string            // "" for no line
		wantErr   string            // the error's detail, when Open refuses
	}{
		{"new directory", nil, clockRecord(0, clockClean), "", ""},
		{"format 1, or a later one before namespaces, after a crash",
			map[string][]byte{string(tableKey("Movies")): table, string(clockKey): be64},
			clockRecord(ticks, clockReserved), "from=1 to=4", ""},
		{"format 2, closed cleanly",
			map[string][]byte{string(tableKey("Movies")): table, string(clockKey): append(bytes.Clone(be64), 'c')},
			clockRecord(ticks, clockClean), "from=2 to=4", ""},
		{"format 3: a namespace's table",
			map[string][]byte{string(catalogKey("acct", "Movies")): table, string(clockKey): be64},
			clockRecord(ticks, clockReserved), "from=3 to=4", ""},
		{"format 3: a namespace's service properties",
			map[string][]byte{string(propertiesKey("acct")): []byte("<x/>"), string(clockKey): append(bytes.Clone(be64), 'c')},
			clockRecord(ticks, clockClean), "from=3 to=4", ""},
		{"format 3: access policies",
			map[string][]byte{string(aclKey(1)): nil, string(tableKey("Movies")): table, string(clockKey): be64},
			clockRecord(ticks, clockReserved), "from=3 to=4", ""},
		{"format 4, version not yet recorded (opened read-only, then written)",
			map[string][]byte{string(tableKey("Movies")): table, string(clockKey): clockRecord(ticks, clockReserved)},
			clockRecord(ticks, clockReserved), "", ""},
		{"format 4",
			map[string][]byte{string(formatKey): current, string(clockKey): clockRecord(ticks, clockClean)},
			clockRecord(ticks, clockClean), "", ""},
		{"format 5",
			map[string][]byte{string(formatKey): version(formatVersion + 1), string(clockKey): []byte("new")},
			[]byte("new"), "", "format version 5, newer than this build of Tabula, which reads format versions up to 4"},
		{"a version never recorded",
			map[string][]byte{string(formatKey): version(3), string(clockKey): be64},
			be64, "", "format version 3 was never recorded by any build"},
		{"a version record of the wrong size",
			map[string][]byte{string(formatKey): {0, 4}, string(clockKey): be64},
			be64, "", "format version record 0004 is not 4 bytes"},
		{"a clock record of no format",
			map[string][]byte{string(tableKey("Movies")): table, string(clockKey): append(bytes.Clone(be64), 'x')},
			append(bytes.Clone(be64), 'x'), "", "none of its forms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, err := OpenInMemory(nil)
			require.NoError(t, err)
			defer func() { require.NoError(t, db.Close()) }()
			require.NoError(t, db.store.Update(func(tx *storage.Txn) error {
				for _, k := range [][]byte{formatKey, clockKey} {
					if err := tx.Delete(k); err != nil {
						return err
					}
				}
				for k, v := range c.stored {
					if err := tx.Set([]byte(k), v); err != nil {
						return err
					}
				}
				return nil
			}))
			var log bytes.Buffer
			err = db.openFormat("", logTo(&log))
			format, clock := storedMeta(t, db)
			assert.Equal(t, c.wantClock, clock, "clock record")
			if c.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrInternal)
				assert.Contains(t, err.Error(), c.wantErr)
				assert.Equal(t, c.stored[string(formatKey)], format, "version record")
				assert.Empty(t, log.String())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, current, format, "version record")
			if c.wantLog == "" {
				assert.Empty(t, log.String())
			} else {
				assert.Contains(t, log.String(), "tabula: upgraded the data directory's format")
				assert.Contains(t, log.String(), c.wantLog)
			}
		})
	}
}

// Builds of formats 1 to 3 check one thing when they open a directory: that the clock
// record is 8 bytes long (format 1) or 8 or 9 (formats 2 and 3). This build's clock record
// never is, from the first Open of a directory on, reserved or clean, so those builds refuse
// its directories rather than misread them (see formatVersion).
func TestOlderBuildsRefuseThisFormat(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lengths := func(db *DB) int {
		_, clock := storedMeta(t, db)
		return len(clock)
	}
	db, err := Open(dir, nil)
	require.NoError(t, err)
	assert.Equal(t, clockLen, lengths(db), "new, empty directory")
	_, err = db.CreateTable(ctx, "Movies")
	require.NoError(t, err)
	assert.Equal(t, clockLen, lengths(db), "after a write: a reservation")
	require.NoError(t, db.Close())
	db, err = openDir(t, dir, nil)
	require.NoError(t, err)
	assert.Equal(t, clockLen, lengths(db), "after Close: clean")
	assert.NotContains(t, []int{8, 9}, clockLen)
}

// On a disk too full to write, a directory of an older format opens read-only without its
// upgrade, with a warning, and reads as it should; the next Open with room upgrades it.
func TestOpenDefersTheUpgradeOnAFullDisk(t *testing.T) {
	dir := copyFixture(t, "testdata/format1/db")
	var log bytes.Buffer
	full := func() (uint64, error) { return 0, nil }
	db, err := Open(dir, &Options{Logger: logTo(&log), freeSpace: full})
	require.NoError(t, err)
	assert.Contains(t, log.String(), "level=WARN")
	assert.Contains(t, log.String(), "to be upgraded when there is disk space to write")
	assert.Contains(t, log.String(), fmt.Sprintf("format=1 current=%d", formatVersion))
	format, clock := storedMeta(t, db)
	assert.Nil(t, format)
	assert.Len(t, clock, 8)
	assert.Equal(t, firstRelease(t)["Movies"], readBack(t, db)["Movies"])
	require.NoError(t, db.Close())

	log.Reset()
	db, err = openDir(t, dir, &Options{Logger: logTo(&log)})
	require.NoError(t, err)
	assert.True(t, strings.Contains(log.String(), "from=1 to=4"), log.String())
	format, _ = storedMeta(t, db)
	assert.Equal(t, binary.BigEndian.AppendUint32(nil, formatVersion), format)
}
