package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Value-log GC: giving back the space of overwritten and deleted values that Badger keeps in
// its value log (values from the value threshold up; see badgertuning.Options). Badger counts, per
// value-log file, the bytes of values whose keys compactions have dropped (its discard
// statistics, in the file DISCARD); its RunValueLogGC picks the file with the most, copies the
// values still live in it to the end of the value log through its ordinary write path, and
// deletes the file.
//
// That copy is not made durable before the delete unless the store has SyncWrites: a power
// cut after the delete would lose values acknowledged long before. Nor can it be made
// durable from outside while other writes go on: the copy's pointers land in the memtable,
// which Badger may write out as a table (synced) before anyone syncs the value log (Badger
// issue 2000; see commit). So:
//
//   - A store with SyncWrites collects in the background, a few files each gcInterval. Every
//     write Badger makes for the copy, under SyncWrites, fsyncs the value log before the
//     pointers go into the memtable, and the memtable log after (value.go's write,
//     db.go's writeToLSM), so a table never points at unsynced values and the copy is durable
//     once RunValueLogGC returns.
//   - A store without SyncWrites collects at Open, before the store is opened for use, on a
//     temporary instance opened with SyncWrites (so the same argument holds), and only when
//     the discard statistics show a file worth it (gcPending), so that an Open with nothing
//     to collect costs one small file read.
//
// Either way the file is deleted only after the directory is synced: the copy may have
// created a value log or memtable log whose name Badger never syncs (see syncDir). Badger
// deletes the file at once unless an iterator is open, else when the last one closes; each
// pass holds an iterator open (pin), syncs the directory, then closes it. On the live store
// the pin is closed with every View and Update locked out, which also covers a point read
// that found the old pointer before the copy and reads the value after (Badger's Txn.Get,
// unlike its iterators, does not keep files from deletion).
//
// Badger counts a value as garbage only when a compaction drops it, and a store whose writes
// are mostly large values has a tree of pointers that fills a memtable only every 20,000 or
// so writes and compacts level 0 every five of those: its garbage would be counted late, a
// GiB or more of it. So a store whose value log is past its first file and whose tree is
// small compacts level 0 as it closes (Badger's CompactL0OnClose: level 0, a few memtables,
// into the level below), and a background round that finds nothing to collect has Badger
// compact such a tree (countGarbage) and looks again (see worthCounting).
const (
	// gcDiscardRatio is the share of a file that must be garbage for a pass to rewrite it:
	// a pass copies at most half a file to give back at least half of one, and the value
	// log holds at most about twice its live bytes in counted garbage.
	gcDiscardRatio = 0.5
	// gcPasses bounds the files one round rewrites (at Open, or each gcInterval): at most
	// gcPasses value-log files read and half as much copied.
	gcPasses = 4
	// gcInterval is how often a store with SyncWrites runs a round.
	gcInterval = time.Minute
	// gcCountTree is the largest tree below level 0 that a round has Badger compact to
	// count garbage (countGarbage).
	gcCountTree = 64 << 20
)

// gcPass runs one pass of Badger's value-log GC on bdb, which must have SyncWrites, and
// returns the function that deletes the rewritten file (nil when no file was worth
// rewriting). The copy is durable, with the names of the files it wrote, when gcPass returns.
func gcPass(bdb *badger.DB, dir string) (deleteOld func(), err error) {
	txn := bdb.NewTransaction(false)
	pin := txn.NewIterator(badger.IteratorOptions{})
	unpin := func() {
		pin.Close()
		txn.Discard()
	}
	err = bdb.RunValueLogGC(gcDiscardRatio)
	if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
		unpin()
		return nil, nil
	}
	if err != nil { // the copy failed; the file stays where it was
		unpin()
		return nil, fmt.Errorf("storage: value-log GC: %w", err)
	}
	if err := syncDir(dir); err != nil {
		// The copy may not be durable, so the file must stay: the pin is left open, and
		// Badger keeps a file whose deletion waits for an iterator until Close; the next
		// Open finds it again.
		return nil, fmt.Errorf("storage: value-log GC: %w", err)
	}
	return unpin, nil
}

// gcAtOpen collects garbage in the value log of the Badger directory bo describes before it
// is opened for use without SyncWrites (see above). It does nothing unless gcPending.
func gcAtOpen(bo badger.Options) error {
	if !gcPending(bo.ValueDir) {
		return nil
	}
	bdb, err := badger.Open(bo.WithSyncWrites(true))
	if err != nil {
		return err
	}
	for range gcPasses {
		deleteOld, err := gcPass(bdb, bo.ValueDir)
		if err != nil || deleteOld == nil {
			break
		}
		deleteOld()
		afterGCPass()
	}
	return bdb.Close()
}

// gcPending says whether Badger's discard statistics in dir count a value-log file at least
// gcDiscardRatio garbage. It reads the file DISCARD as Badger writes it (discard.go): slots
// of 16 bytes, a file ID and its discarded bytes, big-endian, up to the first ID of 0.
// Misreading it costs only an Open that collects nothing, or one that does not collect.
func gcPending(dir string) bool {
	stats, err := os.ReadFile(filepath.Join(dir, "DISCARD"))
	if err != nil {
		return false
	}
	for ; len(stats) >= 16; stats = stats[16:] {
		fid, discard := binary.BigEndian.Uint64(stats), binary.BigEndian.Uint64(stats[8:])
		if fid == 0 {
			break
		}
		if discard == 0 {
			continue
		}
		st, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%06d.vlog", fid)))
		if err == nil && float64(discard) >= gcDiscardRatio*float64(st.Size()) {
			return true
		}
	}
	return false
}

// startGC starts the background rounds of a store with SyncWrites, one per tick of ticks
// (every gcInterval when nil).
func (d *badgerDB) startGC(ticks <-chan time.Time) {
	d.stopGC = make(chan struct{})
	if ticks == nil {
		tick := time.NewTicker(gcInterval)
		d.gcs.Go(func() {
			defer tick.Stop()
			d.gcEvery(tick.C)
		})
		return
	}
	d.gcs.Go(func() { d.gcEvery(ticks) })
}

func (d *badgerDB) gcEvery(ticks <-chan time.Time) {
	for {
		select {
		case <-d.stopGC:
			return
		case <-ticks:
			// An error (a failed copy, a failed sync) leaves the data where it was; the
			// next round tries again.
			_, _ = d.collectGarbage()
		}
	}
}

// collectGarbage runs a round of at most gcPasses passes on the live store and returns how
// many files it gave back. Close stops it between passes.
func (d *badgerDB) collectGarbage() (files int, err error) {
	for range gcPasses {
		select {
		case <-d.stopGC:
			return files, nil
		default:
		}
		// A copy needs space before it gives any back; the reserve is for it too.
		if d.space.full() != nil {
			return files, nil
		}
		d.mu.RLock()
		deleteOld, err := gcPass(d.bdb, d.bo.ValueDir)
		if err == nil && deleteOld == nil && files == 0 &&
			worthCounting(d.bo.ValueDir, d.bo.ValueLogFileSize) && countGarbage(d.bdb) {
			deleteOld, err = gcPass(d.bdb, d.bo.ValueDir)
		}
		d.mu.RUnlock()
		if err != nil || deleteOld == nil {
			return files, err
		}
		// No View or Update runs while the file goes: none holds a pointer into it read
		// before the copy. (The store's Badger instance is the same: only a store opened
		// read-only is ever replaced, and its GC passes fail.)
		d.mu.Lock()
		deleteOld()
		d.mu.Unlock()
		files++
		afterGCPass()
	}
	return files, nil
}

// afterGCPass is called after each pass that gave a file back; tests set it.
var afterGCPass = func() {}

// countGarbage has Badger compact level 0 into the one level below it that holds data, when
// that level is at most gcCountTree, so that the compaction counts the values it drops as
// garbage; it reports whether it did. Badger's Flatten does that in one compaction only in
// such a tree (in a deeper one it would compact every level in turn).
func countGarbage(bdb *badger.DB) bool {
	var l0 bool
	var below int
	var size int64
	for _, l := range bdb.Levels() {
		switch {
		case l.NumTables == 0:
		case l.Level == 0:
			l0 = true
		default:
			below++
			size += l.Size
		}
	}
	if !l0 || below != 1 || size > gcCountTree {
		return false
	}
	return bdb.Flatten(1) == nil
}

// worthCounting says whether a store in dir whose value-log files are of fileSize bytes should
// have Badger compact level 0 to count garbage (as it closes, and in a round that finds none
// counted): when its value log holds more than a file besides the newest (the one written
// to, preallocated while open) and its tree (the table files) is small, at most gcCountTree
// and an eighth of the value log, so mostly pointers. That bounds what it costs: compacting
// level 0 as Badger closes, with 1 KiB values in the tree, took Close from 0.06-0.1 s to
// 0.5-0.7 s at 60 MB, from 0.1-0.25 s to 0.75-1.3 s at 300 MB (level 0 of 6-10 tables; load
// 6); a tree with that many small values compacts often enough by itself, and a store
// without large values has nothing to count.
func worthCounting(dir string, fileSize int64) bool {
	vlog := filesBytes(dir, "*.vlog")
	logs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if len(logs) > 0 { // named by zero-padded number: the last is the newest
		if st, err := os.Stat(logs[len(logs)-1]); err == nil {
			vlog -= st.Size()
		}
	}
	tree := filesBytes(dir, "*.sst")
	return vlog > fileSize && tree <= gcCountTree && tree <= vlog/8
}

// filesBytes is the size of the files in dir whose names match pattern.
func filesBytes(dir, pattern string) int64 {
	names, _ := filepath.Glob(filepath.Join(dir, pattern))
	var n int64
	for _, name := range names {
		if st, err := os.Stat(name); err == nil {
			n += st.Size()
		}
	}
	return n
}
