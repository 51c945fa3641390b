package storage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/internal/badgertuning"
)

// SalvageReport is what Salvage copied, and what it could not read.
type SalvageReport struct {
	// Copied counts the keys written to the new store.
	Copied int
	// Lost is each part of the old store that could not be read: the file, and the keys it
	// held there when they are known (Lower and Upper, both included).
	Lost []*Damage
}

// Salvage copies every key it can read from the store in dir into a new store in to, which
// must not exist or be empty, and reports what it could not read. It never writes to dir:
// it repairs a copy of its small files (the MANIFEST, rebuilt from the tables that verify;
// log headers; the KEYREGISTRY; memtable logs, keeping their whole transactions), reads
// that copy, and reads what the damaged tables still hold block by block, taking an entry
// from them where it is newer than what the rest holds.
func Salvage(ctx context.Context, dir, to string) (SalvageReport, error) {
	var r SalvageReport
	if entries, err := os.ReadDir(to); err == nil && len(entries) > 0 {
		return r, fmt.Errorf("storage: salvage: %s is not empty", to)
	}
	if _, err := os.Stat(dir); err != nil {
		return r, fmt.Errorf("storage: salvage: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(to)), 0o755); err != nil {
		return r, err
	}
	work, err := os.MkdirTemp(filepath.Dir(filepath.Clean(to)), ".salvage-*")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(work)
	damaged, err := repairCopy(dir, work, &r)
	if err != nil {
		return r, err
	}
	bo := badgertuning.Options(work, 0).WithVerifyValueChecksum(true).WithChecksumVerificationMode(options.OnBlockRead)
	var values valueLogger
	values.Logger = bo.Logger
	bo.Logger = &values
	src, err := openReadOnly(bo)
	if err != nil {
		return r, fmt.Errorf("storage: salvage: the repaired copy does not open: %w", err)
	}
	defer src.Close()
	dst, err := Open(Options{Dir: to})
	if err != nil {
		return r, err
	}
	w := &salvageWriter{dst: dst}
	err = copyReadable(ctx, src, &values, w, &r)
	for _, t := range damaged {
		if err != nil {
			break
		}
		err = copyDamagedTable(ctx, src, work, t, w, &r)
	}
	if err == nil {
		err = w.flush()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	r.Copied = w.copied
	if err != nil {
		_ = os.RemoveAll(to)
	}
	return r, err
}

// repairCopy copies dir into work, repairing what can be repaired, and returns the paths of
// the damaged tables in work, which the rebuilt MANIFEST leaves out.
func repairCopy(dir, work string, r *SalvageReport) (damaged []damagedTable, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var good []goodTable
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || name == "LOCK" || name == badger.ManifestFilename || name == "DISCARD" {
			continue // the MANIFEST is rebuilt, and the value-log GC's counts start again
		}
		src, dst := filepath.Join(dir, name), filepath.Join(work, name)
		switch {
		case name == badger.KeyRegistryFileName:
			// The store never encrypts: a registry of no keys is all there is to keep.
			err = os.WriteFile(dst, append(make([]byte, 16), keyRegistrySanity...), 0o644)
		case strings.HasSuffix(name, ".sst"):
			if err = linkOrCopy(src, dst); err != nil {
				break
			}
			id, _ := table.ParseFileID(name)
			d, compression := verifyTable(dst)
			if d != nil {
				// Out of Badger's directory, which it would clear of tables the MANIFEST
				// does not list.
				aside := filepath.Join(work, "damaged", name)
				if err = os.MkdirAll(filepath.Dir(aside), 0o755); err == nil {
					err = os.Rename(dst, aside)
				}
				damaged = append(damaged, damagedTable{aside, compression})
				if d.Lower == nil {
					r.Lost = append(r.Lost, d) // not even its index can be read
				}
			} else {
				good = append(good, goodTable{id, compression})
			}
		case strings.HasSuffix(name, ".vlog"), strings.HasSuffix(name, ".mem"):
			err = repairLog(src, dst, r)
		}
		if err != nil {
			return nil, fmt.Errorf("storage: salvage: copying %s: %w", name, err)
		}
	}
	slices.SortFunc(good, func(a, b goodTable) int { return cmp.Compare(a.id, b.id) })
	return damaged, writeManifest(work, good)
}

// goodTable and damagedTable are what repairCopy found of a table: where it is, and the
// compression its blocks are in.
type (
	goodTable struct {
		id          uint64
		compression options.CompressionType
	}
	damagedTable struct {
		path        string
		compression options.CompressionType
	}
)

// linkOrCopy makes dst a copy of src, a hard link where the file system allows (tables are
// never written once made, and the salvage only reads them).
func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// repairLog copies a value log or memtable log, zeroing a damaged header's key ID (the
// store never encrypts) and keeping of a memtable log only its whole transactions, so that
// the ones after a damaged entry are replayed too.
func repairLog(src, dst string, r *SalvageReport) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if len(data) >= logHeaderSize {
		clear(data[:8])
	}
	if strings.HasSuffix(src, ".mem") && len(data) >= logHeaderSize {
		kept, lost := wholeTransactions(data)
		for _, at := range lost {
			r.Lost = append(r.Lost, &Damage{File: filepath.Base(src), Err: fmt.Errorf("the transaction at byte %d could not be read", at)})
		}
		data = append(kept, make([]byte, len(data)-len(kept))...)
	}
	return os.WriteFile(dst, data, 0o644)
}

// wholeTransactions returns the header of a memtable log and its transactions whose every
// entry passes its checksum, in order, and where each transaction it dropped began. Past a
// damaged entry it goes on at the next whole one; the transaction that held the damage is
// dropped (a damaged end marker drops the next transaction with it).
func wholeTransactions(data []byte) (kept []byte, lost []int) {
	kept = append([]byte(nil), data[:logHeaderSize]...)
	start, off, broken := logHeaderSize, logHeaderSize, false
	for off < len(data) {
		n := logEntry(data, off)
		if n == 0 {
			if zeros(data[off:min(off+16, len(data))]) {
				break // the end of what was written
			}
			next, ok := wholeEntryAfter(data, off)
			if !ok {
				lost = append(lost, start)
				break
			}
			off, broken = next, true
			continue
		}
		flags := data[off]
		off += n
		if flags&bitFinTxn != 0 || flags&bitTxn == 0 {
			if broken {
				lost = append(lost, start)
			} else {
				kept = append(kept, data[start:off]...)
			}
			start, broken = off, false
		}
	}
	return kept, lost
}

// writeManifest writes a MANIFEST listing the tables ids, all in level 0, where Badger reads
// every table and takes each key's newest version whatever its level.
func writeManifest(dir string, tables []goodTable) error {
	set := &pb.ManifestChangeSet{}
	for _, t := range tables {
		set.Changes = append(set.Changes, &pb.ManifestChange{Id: t.id, Op: pb.ManifestChange_CREATE, Level: 0,
			Compression: uint32(t.compression)})
	}
	body, err := proto.Marshal(set)
	if err != nil {
		return err
	}
	var buf []byte
	buf = append(buf, 'B', 'd', 'g', 'r', 0, 0)
	buf = binary.BigEndian.AppendUint16(buf, manifestVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(body)))
	buf = binary.BigEndian.AppendUint32(buf, crc32.Checksum(body, y.CastagnoliCrcTable))
	buf = append(buf, body...)
	return os.WriteFile(filepath.Join(dir, badger.ManifestFilename), buf, 0o644)
}

// manifestVersion is the version of Badger's MANIFEST format this Badger writes.
const manifestVersion = 8

// salvageWriter writes what the salvage reads into the new store, many keys a transaction.
type salvageWriter struct {
	dst     *DB
	keys    [][]byte
	values  [][]byte // nil for a deletion
	size    int
	copied  int
	deletes int
}

func (w *salvageWriter) put(key, value []byte) error {
	w.keys = append(w.keys, bytes.Clone(key))
	if value != nil {
		value = bytes.Clone(value)
	}
	w.values = append(w.values, value)
	w.size += len(key) + len(value)
	if len(w.keys) >= deleteChunk || w.size >= 1<<20 {
		return w.flush()
	}
	return nil
}

func (w *salvageWriter) flush() error {
	if len(w.keys) == 0 {
		return nil
	}
	err := w.write(w.keys, w.values)
	for _, v := range w.values {
		if v != nil {
			w.copied++
		} else {
			w.deletes++
		}
	}
	w.keys, w.values, w.size = w.keys[:0], w.values[:0], 0
	return err
}

// write writes keys and values in one transaction, or in halves when that is too large.
func (w *salvageWriter) write(keys, values [][]byte) error {
	err := w.dst.Update(func(tx *Txn) error {
		for i, k := range keys {
			var err error
			if values[i] == nil {
				err = tx.Delete(k)
			} else {
				err = tx.Set(k, values[i])
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, ErrTooLarge) && len(keys) > 1 {
		half := len(keys) / 2
		if err := w.write(keys[:half], values[:half]); err != nil {
			return err
		}
		return w.write(keys[half:], values[half:])
	}
	return err
}

// badgerInternal is the prefix of Badger's own keys, which a new store makes its own.
var badgerInternal = []byte("!badger!")

// copyReadable copies every key of src, with the value of its newest version, into w; a
// value that cannot be read is reported lost.
func copyReadable(ctx context.Context, src *badger.DB, values *valueLogger, w *salvageWriter, r *SalvageReport) error {
	return src.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		n := 0
		for it.Rewind(); it.Valid(); it.Next() {
			if n++; n%1024 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			item := it.Item()
			if bytes.HasPrefix(item.Key(), badgerInternal) {
				continue
			}
			v, err := item.ValueCopy(nil)
			if err == nil {
				if dmg := values.unread(item, v); dmg != nil {
					r.Lost = append(r.Lost, dmg)
					continue
				}
			}
			if err != nil {
				r.Lost = append(r.Lost, &Damage{File: "a value log file", Lower: item.KeyCopy(nil), Upper: item.KeyCopy(nil), Err: err})
				continue
			}
			if err := w.put(item.Key(), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// copyDamagedTable reads the table in path block by block, skipping the blocks that fail
// their checksums (reported lost, with the keys between their first and the next block's
// first), and writes each entry that is newer than what src holds for its key.
func copyDamagedTable(ctx context.Context, src *badger.DB, dir string, dt damagedTable, w *salvageWriter, r *SalvageReport) (err error) {
	name := filepath.Base(dt.path)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			r.Lost = append(r.Lost, &Damage{File: name, Err: fmt.Errorf("unreadable: %v", p)})
		}
	}()
	mf, err := z.OpenMmapFile(dt.path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer closeMapping(mf)
	t, err := table.OpenTable(mf, tableOptions(dt.compression, options.OnBlockRead))
	if err != nil {
		return nil // reported by repairCopy: not even its index can be read
	}
	starts := t.KeySplits(1<<30, nil) // every block's first key
	it := t.NewIterator(0)
	defer it.Close()
	return src.View(func(txn *badger.Txn) error {
		for i, start := range starts {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var next []byte
			if i+1 < len(starts) {
				next = []byte(starts[i+1])
			}
			it.Seek([]byte(start))
			if !it.Valid() {
				upper := y.ParseKey(t.Biggest())
				if next != nil {
					upper = y.ParseKey(next)
				}
				r.Lost = append(r.Lost, &Damage{File: name, Lower: bytes.Clone(y.ParseKey([]byte(start))), Upper: bytes.Clone(upper),
					Err: errors.New("a block fails its checksum")})
				continue
			}
			for ; it.Valid() && (next == nil || y.CompareKeys(it.Key(), next) < 0); it.Next() {
				if err := takeIfNewer(txn, dir, name, it.Key(), it.Value(), w, r); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Badger's flags of an entry in a table (value.go in Badger).
const (
	bitDelete       = 1 << 0
	bitValuePointer = 1 << 1
)

// takeIfNewer writes the entry of a damaged table to w when src holds an older version of
// its key, or none.
func takeIfNewer(txn *badger.Txn, dir, file string, key []byte, vs y.ValueStruct, w *salvageWriter, r *SalvageReport) error {
	user, version := y.ParseKey(key), y.ParseTs(key)
	if bytes.HasPrefix(user, badgerInternal) {
		return nil
	}
	if item, err := txn.Get(user); err == nil && item.Version() >= version {
		return nil
	} else if err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
		return err
	}
	if vs.Meta&bitDelete != 0 || vs.ExpiresAt != 0 {
		return w.put(user, nil)
	}
	value := vs.Value
	if vs.Meta&bitValuePointer != 0 {
		var err error
		if value, err = readPointedValue(dir, vs.Value); err != nil {
			r.Lost = append(r.Lost, &Damage{File: file, Lower: bytes.Clone(user), Upper: bytes.Clone(user), Err: err})
			return nil
		}
	}
	return w.put(user, value)
}

// readPointedValue reads the value a table's value pointer points at in the value log, and
// verifies its checksum. A pointer is the file's ID, the entry's length and its offset, as
// Badger lays them out in memory (little-endian on every platform it runs on here).
func readPointedValue(dir string, ptr []byte) ([]byte, error) {
	if len(ptr) < 12 {
		return nil, errors.New("a value pointer is cut short")
	}
	fid, n, off := binary.LittleEndian.Uint32(ptr), binary.LittleEndian.Uint32(ptr[4:]), binary.LittleEndian.Uint32(ptr[8:])
	f, err := os.Open(filepath.Join(dir, fmt.Sprintf("%06d.vlog", fid)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entry := make([]byte, n)
	if _, err := f.ReadAt(entry, int64(off)); err != nil {
		return nil, err
	}
	if logEntry(entry, 0) != int(n) {
		return nil, fmt.Errorf("the value at byte %d of %06d.vlog fails its checksum", off, fid)
	}
	i := 2
	klen, k := binary.Uvarint(entry[i:])
	i += k
	vlen, k := binary.Uvarint(entry[i:])
	i += k
	_, k = binary.Uvarint(entry[i:])
	i += k + int(klen)
	return entry[i : i+int(vlen)], nil
}
