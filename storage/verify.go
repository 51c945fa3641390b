package storage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
)

// ErrDamaged reports bytes on disk that fail their checksum or cannot be decoded: a failing
// disk, a bad cable or a stray write changed them after they were written. Every error for
// damage is a *Damage and matches errors.Is(err, ErrDamaged).
var ErrDamaged = errors.New("storage: damaged data on disk")

// Damage is one damaged file of a store.
type Damage struct {
	// File is the file's name in the store's directory (000012.sst, MANIFEST, ...).
	File string
	// Lower and Upper bound the keys the file holds (both included), when it is a table
	// whose bounds could still be read; nil otherwise.
	Lower, Upper []byte
	// Err says what is wrong with it.
	Err error
}

func (d *Damage) Error() string {
	return fmt.Sprintf("storage: %s is damaged: %v", d.File, d.Err)
}

// Unwrap makes a Damage match ErrDamaged and what it wraps.
func (d *Damage) Unwrap() []error { return []error{ErrDamaged, d.Err} }

// covers says whether the damaged file may hold a key in [lower, upper), or lower itself
// when point is set (a nil upper is no bound). A file with unknown bounds may hold any key.
func (d *Damage) covers(lower, upper []byte, point bool) bool {
	switch {
	case d.Lower == nil:
		return true
	case point:
		return bytes.Compare(d.Lower, lower) <= 0 && bytes.Compare(lower, d.Upper) <= 0
	}
	return (upper == nil || bytes.Compare(d.Lower, upper) < 0) && bytes.Compare(lower, d.Upper) <= 0
}

// Inspection is what inspect found in a store's directory before Badger opened it.
type inspection struct {
	// tables are the damaged tables (*.sst): Badger opens past them, but a read of their
	// keys would be served wrong or cut short, and a compaction would carry the damage on.
	tables []*Damage
	// fatal is damage that Badger cannot open past, or that opening would make worse (a
	// MANIFEST that ends early, which would have Badger delete the tables it no longer
	// lists); nil if there is none.
	fatal error
}

// inspect verifies every file of the Badger store in dir that Badger itself trusts at
// Open: every block of every table against its checksum (Badger's own verification at Open
// crashes the process on some damage, and its verification on read silently ends a scan at
// a damaged block, see DB.Verify), the MANIFEST, the headers of the logs and the
// transactions of the memtable logs. Tables are verified in parallel, one per core.
//
// Tables written later by this process are made from verified data and so are trusted;
// what changes on disk while the store is open is found by Verify (tabula check, the scrub).
func inspect(dir string) (inspection, error) {
	var in inspection
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return in, nil
	}
	if err != nil {
		return in, err
	}
	var tables []string
	onDisk := map[uint64]bool{}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".sst"):
			if id, ok := table.ParseFileID(name); ok {
				onDisk[id] = true
				tables = append(tables, name)
			}
		case strings.HasSuffix(name, ".vlog"), strings.HasSuffix(name, ".mem"):
			if d := inspectLog(filepath.Join(dir, name)); d != nil {
				in.fatal = errors.Join(in.fatal, d)
			}
		}
	}
	if d := inspectManifest(dir, onDisk); d != nil {
		in.fatal = errors.Join(in.fatal, d)
	}
	// A table the MANIFEST does not list is one a crash left before it was listed (a power
	// cut can leave it empty): Badger deletes it at Open and never reads it.
	tables = slices.DeleteFunc(tables, func(name string) bool {
		id, _ := table.ParseFileID(name)
		return !onDisk[id]
	})
	if d := inspectKeyRegistry(dir); d != nil {
		in.fatal = errors.Join(in.fatal, d)
	}
	for _, d := range verifyTables(context.Background(), dir, tables) {
		if d.Lower == nil {
			// Its index is unreadable: Badger cannot open the table, nor the store.
			in.fatal = errors.Join(in.fatal, d)
		} else {
			in.tables = append(in.tables, d)
		}
	}
	return in, nil
}

// Verify checks what the store keeps on disk against its checksums, as Open does (see
// inspect), for the files the store uses now: every block of every table, and the headers
// and memtable entries of the logs. Values in the value log carry their own checksums, which
// every read verifies, so a scan that reads every value completes the check. It returns the
// damage found, each a *Damage, or nil; in memory, nil.
func (d *DB) Verify(ctx context.Context) error { return d.e.verify(ctx) }

func (d *badgerDB) verify(ctx context.Context) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var names []string
	for id := range d.liveTables() {
		names = append(names, table.IDToFilename(id))
	}
	var errs []error
	damaged := verifyTables(ctx, d.bo.Dir, names)
	live := d.liveTables()
	for _, dmg := range damaged {
		// A compaction that replaced the table while it was read deleted it, and Badger
		// truncates a table it deletes: what was read then is not the table's damage.
		if id, _ := table.ParseFileID(dmg.File); live[id] {
			errs = append(errs, dmg)
		}
	}
	mems, _ := filepath.Glob(filepath.Join(d.bo.Dir, "*.mem"))
	vlogs, _ := filepath.Glob(filepath.Join(d.bo.Dir, "*.vlog"))
	for _, path := range append(mems, vlogs...) {
		if dmg := inspectLog(path); dmg != nil && !errors.Is(dmg.Err, fs.ErrNotExist) {
			errs = append(errs, dmg)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// liveTables are the IDs of the tables the store reads now.
func (d *badgerDB) liveTables() map[uint64]bool {
	live := map[uint64]bool{}
	for _, ti := range d.bdb.Tables() {
		live[ti.ID] = true
	}
	return live
}

// verifyTables verifies the named tables of dir, one per core at a time, and returns the
// damaged ones in name order. A table that is gone (a compaction replaced it since it was
// listed) is not damage.
func verifyTables(ctx context.Context, dir string, names []string) []*Damage {
	var (
		mu      sync.Mutex
		damaged []*Damage
		wg      sync.WaitGroup
		next    = make(chan string)
	)
	for range min(runtime.GOMAXPROCS(0), max(len(names), 1)) {
		wg.Go(func() {
			for name := range next {
				if ctx.Err() != nil {
					continue
				}
				if d, _ := verifyTable(filepath.Join(dir, name)); d != nil && !errors.Is(d.Err, fs.ErrNotExist) {
					mu.Lock()
					damaged = append(damaged, d)
					mu.Unlock()
				}
			}
		})
	}
	for _, name := range names {
		next <- name
	}
	close(next)
	wg.Wait()
	slices.SortFunc(damaged, func(a, b *Damage) int { return strings.Compare(a.File, b.File) })
	return damaged
}

// verifyTable checks every block of the table in path against its checksum, and returns
// its damage or nil, and the compression its blocks are in. It opens the file on its own,
// read-only, as Badger's table package reads it. Damage that Badger's decoding does not
// expect makes it panic (a block whose checksum length is wrong, an index cut short), and a
// file the disk cannot read makes the mapping fault: both are caught here, in a goroutine
// of this package, and reported. The compression is recorded only in the MANIFEST, which may
// be damaged itself, so each is tried: the store writes none, older stores Badger's default.
func verifyTable(path string) (*Damage, options.CompressionType) {
	var first *Damage
	for _, c := range []options.CompressionType{options.None, options.Snappy, options.ZSTD} {
		d := verifyTableAs(path, c)
		if d == nil {
			return nil, c
		}
		if errors.Is(d.Err, fs.ErrNotExist) {
			return d, c
		}
		if first == nil || first.Lower == nil && d.Lower != nil {
			first = d
		}
	}
	return first, options.None
}

func verifyTableAs(path string, compression options.CompressionType) (damage *Damage) {
	damage = &Damage{File: filepath.Base(path)}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			damage.Err = fmt.Errorf("unreadable: %s", firstLine(fmt.Sprint(r)))
		}
	}()
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		damage.Err = err
		return damage
	}
	defer closeMapping(mf)
	t, err := table.OpenTable(mf, tableOptions(compression, options.NoVerification))
	if err != nil {
		damage.Err = err
		return damage
	}
	if tableOpened != nil {
		tableOpened(path)
	}
	damage.Lower = bytes.Clone(y.ParseKey(t.Smallest()))
	damage.Upper = bytes.Clone(y.ParseKey(t.Biggest()))
	if err := t.VerifyChecksum(); err != nil {
		damage.Err = err
		return damage
	}
	return nil
}

// tableOpened, when set (by a test), runs once verifyTableAs has mapped and opened a table.
var tableOpened func(path string)

// tableOptions are the options to read a table of the compression with.
func tableOptions(compression options.CompressionType, mode options.ChecksumVerificationMode) table.Options {
	return table.Options{ChkMode: mode, Compression: compression, BlockSize: 4 << 10}
}

// firstLine is what a panic of Badger's says first, without the dump it adds.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// closeMapping unmaps and closes a file mapped read-only. Not Table.DecrRef, which deletes
// the file, and not MmapFile.Close, which syncs a mapping there is nothing to sync in.
func closeMapping(mf *z.MmapFile) {
	if mf.Data != nil {
		_ = z.Munmap(mf.Data)
		mf.Data = nil
	}
	if mf.Fd != nil {
		_ = mf.Fd.Close()
	}
}

// inspectManifest checks the MANIFEST of dir, which lists the tables and their levels, and
// takes out of onDisk the tables it does not list, which Badger deletes at Open. A
// change set that fails its checksum makes Badger refuse to open; one cut short makes it
// take the MANIFEST as ending there (what a crash while appending leaves) and delete every
// table the shorter list does not name, which damage in the middle of the file would turn
// into lost data: so a MANIFEST that ends early while tables on disk are not in it is
// damage, and Open stops there.
func inspectManifest(dir string, onDisk map[uint64]bool) *Damage {
	path := filepath.Join(dir, badger.ManifestFilename)
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		clear(onDisk) // a new store: Badger lists no table, and deletes any it finds
		return nil
	}
	if err != nil {
		return &Damage{File: badger.ManifestFilename, Err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return &Damage{File: badger.ManifestFilename, Err: err}
	}
	m, end, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		return &Damage{File: badger.ManifestFilename, Err: err}
	}
	if end == st.Size() {
		for id := range onDisk {
			if _, ok := m.Tables[id]; !ok {
				delete(onDisk, id)
			}
		}
		return nil
	}
	var unlisted []string
	for id := range onDisk {
		if _, ok := m.Tables[id]; !ok {
			unlisted = append(unlisted, table.IDToFilename(id))
		}
	}
	if len(unlisted) == 0 {
		return nil
	}
	slices.Sort(unlisted)
	return &Damage{File: badger.ManifestFilename, Err: fmt.Errorf(
		"it ends at byte %d of %d, before the tables %s are listed", end, st.Size(), strings.Join(unlisted, ", "))}
}

// logHeaderSize is the size of the header Badger writes at the start of every value log
// and memtable log: the ID of the key the file is encrypted with (8 bytes, 0 for none)
// and the base of its IVs (12 bytes).
const logHeaderSize = 20

// Badger's entry flags in a log; no other bit is ever set (value.go in Badger).
const (
	bitTxn    = 1 << 6
	bitFinTxn = 1 << 7
	knownBits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | bitTxn | bitFinTxn
)

// inspectLog checks a value log or memtable log. The store never encrypts, so a header
// naming a key is damage (Badger fails to open with "Invalid datakey id"). A memtable log
// holds the writes not yet in a table: Badger replays its entries up to the first that
// fails its checksum and cuts the rest off, which is right after a crash (the entry was
// being written) but loses acknowledged writes when a whole entry follows the damaged
// one; inspectLog finds such an entry.
func inspectLog(path string) *Damage {
	data, err := os.ReadFile(path)
	if err != nil {
		return &Damage{File: filepath.Base(path), Err: err}
	}
	if len(data) < logHeaderSize {
		return nil // an empty log, which removeEmptyLogs takes away
	}
	if id := binary.BigEndian.Uint64(data); id != 0 {
		return &Damage{File: filepath.Base(path), Err: fmt.Errorf("its header names encryption key %d, and the store is not encrypted", id)}
	}
	if !strings.HasSuffix(path, ".mem") {
		return nil
	}
	end := logEntriesEnd(data, logHeaderSize)
	if zeros(data[end:min(end+16, len(data))]) {
		// Where a crash stopped the writes, or a page the power cut kept from the disk:
		// what follows was never acknowledged as durable, and Badger's cut is right.
		return nil
	}
	if at, ok := wholeEntryAfter(data, end); ok {
		return &Damage{File: filepath.Base(path), Err: fmt.Errorf(
			"the entry at byte %d fails its checksum, and whole entries follow it (at byte %d)", end, at)}
	}
	return nil
}

// logEntry decodes the entry of a Badger log at off: its length, or 0 if none that passes
// its checksum starts there.
func logEntry(data []byte, off int) int {
	if off+2 >= len(data) || data[off]&^knownBits != 0 {
		return 0
	}
	i := off + 2
	klen, n := binary.Uvarint(data[i:])
	if n <= 0 || klen < 8 || klen > 1<<16 {
		return 0
	}
	i += n
	vlen, n := binary.Uvarint(data[i:])
	if n <= 0 || vlen > uint64(len(data)) {
		return 0
	}
	i += n
	if _, n = binary.Uvarint(data[i:]); n <= 0 {
		return 0
	}
	i += n
	body := i + int(klen) + int(vlen)
	if body+crc32.Size > len(data) {
		return 0
	}
	if crc32.Checksum(data[off:body], y.CastagnoliCrcTable) != binary.BigEndian.Uint32(data[body:]) {
		return 0
	}
	return body + crc32.Size - off
}

// logEntriesEnd is where the run of whole entries from off ends.
func logEntriesEnd(data []byte, off int) int {
	for {
		n := logEntry(data, off)
		if n == 0 {
			return off
		}
		off += n
	}
}

// maxLogSearch bounds the bytes wholeEntryAfter checksums: past it, the log is taken as
// ending where its entries do (what Badger does), and the search stays proportional to the
// log's size.
const maxLogSearch = 256 << 20

// wholeEntryAfter looks past the end of a log's entries for an entry that passes its
// checksum and belongs to a transaction, as every write of the store does; past a crash the
// rest of the file is the zeros Badger wrote ahead, or part of one entry.
func wholeEntryAfter(data []byte, end int) (int, bool) {
	budget := maxLogSearch
	for at := end + 1; at+2 < len(data) && budget > 0; at++ {
		if data[at+2] == 0 || data[at]&(bitTxn|bitFinTxn) == 0 {
			continue
		}
		if n := logEntry(data, at); n > 0 {
			return at, true
		}
		budget -= 64
	}
	return 0, false
}

func zeros(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// valueLogger passes Badger's log on and keeps the last value it failed to read from the
// value log. Badger logs such a failure (a value that fails its checksum, a pointer past
// the end of its file) and hands the reader an empty value with no error, so readValue
// tells a failed read by the empty value, and names the file from what was logged.
type valueLogger struct {
	badger.Logger
	last atomic.Pointer[Damage]
}

// valueReadFailure is how Badger logs a value it could not read, and valuePointerFile how it
// then logs the pointer it followed, which names the file.
var (
	valueReadFailure = regexp.MustCompile(`Unable to read: .*Error: (.*)`)
	valuePointerFile = regexp.MustCompile(`valuePointer: \{Fid:(\d+)`)
)

func (l *valueLogger) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if m := valueReadFailure.FindStringSubmatch(msg); m != nil {
		l.last.Store(&Damage{Err: errors.New(strings.TrimSpace(m[1]))})
	} else if m := valuePointerFile.FindStringSubmatch(msg); m != nil {
		if last := l.last.Load(); last != nil && last.File == "" {
			fid, _ := strconv.ParseUint(m[1], 10, 32)
			l.last.Store(&Damage{File: fmt.Sprintf("%06d.vlog", fid), Err: last.Err})
		}
	}
	if l.Logger != nil {
		l.Logger.Errorf(format, args...)
	}
}

// readValue calls fn with the value of item, or returns the damage that kept it from being
// read: an empty value for an item whose value is not empty.
func (d *badgerDB) readValue(item *badger.Item, fn func(value []byte) error) error {
	if d.unverified {
		return item.Value(fn)
	}
	return item.Value(func(v []byte) error {
		if dmg := d.values.unread(item, v); dmg != nil {
			return dmg
		}
		return fn(v)
	})
}

// unread returns the damage that kept item's value from being read, v being what Badger
// gave for it: an empty value for an item whose value is not empty, named by the file
// Badger last logged failing to read; nil if v is the value.
func (l *valueLogger) unread(item *badger.Item, v []byte) *Damage {
	if len(v) > 0 || item.ValueSize() <= 0 {
		return nil
	}
	dmg := &Damage{Err: errors.New("the value could not be read")}
	if last := l.last.Load(); last != nil {
		c := *last
		dmg = &c
	}
	dmg.File = cmp.Or(dmg.File, "a value log file")
	dmg.Lower, dmg.Upper = item.KeyCopy(nil), item.KeyCopy(nil)
	return dmg
}

// keyRegistrySanity is what the KEYREGISTRY of a store that is not encrypted holds after
// its 16-byte IV, and all it holds (key_registry.go in Badger).
const keyRegistrySanity = "Hello Badger"

// inspectKeyRegistry checks the KEYREGISTRY, which names the keys a store is encrypted with.
// The store never encrypts, so it holds only its sanity text; damage to it makes Badger
// refuse to open ("Encryption key mismatch").
func inspectKeyRegistry(dir string) *Damage {
	data, err := os.ReadFile(filepath.Join(dir, badger.KeyRegistryFileName))
	if os.IsNotExist(err) {
		return nil
	}
	if err == nil && (len(data) != 16+len(keyRegistrySanity) || string(data[16:]) != keyRegistrySanity) {
		err = fmt.Errorf("it is %d bytes, not the %d of a store that is not encrypted, or its sanity text is changed", len(data), 16+len(keyRegistrySanity))
	}
	if err != nil {
		return &Damage{File: badger.KeyRegistryFileName, Err: err}
	}
	return nil
}

// Damaged returns the damage Open found in tables, for which it opened the store read-only
// (see Open), joined; nil if there is none.
func (d *DB) Damaged() error { return d.e.damage() }

func (d *badgerDB) damage() error {
	if d.damaged == nil {
		return nil
	}
	return d.refuseDamaged()
}
