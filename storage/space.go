package storage

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Badger writes its logs and tables through memory-mapped files, which it grows sparsely: on
// a full file system a write into such a page is not an error but a SIGBUS that kills the
// process, mid-commit or inside a background flush or compaction. The store therefore never
// lets the disk get that full. Before each commit it asks the file system how much space is
// free and refuses the write (ErrDiskFull) when less than a reserve remains, while reads go
// on; and it opens a directory whose disk is already that full read-only, so that its data
// can still be read.

// defaultReserve is the free space the store keeps for Badger. Its writes land first in
// memtable logs; up to five memtables of 64 MiB may wait to be flushed into tables of about
// their size before their logs are deleted, and a compaction writes its new tables before it
// deletes the old. Each commit is checked against the reserve, so only what is already
// committed (a transaction is at most a few MiB) can be in that background work.
const defaultReserve = 512 << 20

// diskFullError reports that a directory's disk has less free space than the store keeps in
// reserve. ErrDiskFull matches it with errors.Is.
type diskFullError struct {
	Dir           string
	Free, Reserve uint64
	// ReadOnly is set when the store was opened read-only for lack of space.
	ReadOnly bool
}

func (e *diskFullError) Error() string {
	if e.ReadOnly {
		return fmt.Sprintf("storage: the disk of %q had %d bytes free when the store was opened, less than the %d it keeps in reserve, so it was opened read-only; writes resume once that much is free",
			e.Dir, e.Free, e.Reserve)
	}
	return fmt.Sprintf("storage: the disk of %q has %d bytes free, less than the %d the store keeps in reserve; writes are refused until space is freed",
		e.Dir, e.Free, e.Reserve)
}

// Is makes errors.Is(err, ErrDiskFull) true for every diskFullError.
func (e *diskFullError) Is(target error) bool { return target == ErrDiskFull }

// ErrDiskFull reports that a directory's disk has less free space than the store keeps in
// reserve; errors.Is matches it with every such error, which says how much is free.
var ErrDiskFull error = &diskFullError{}

// space watches the free space of a store's directory.
type space struct {
	dir     string
	free    func() (uint64, error) // nil: not watched (in memory, or no way to ask)
	reserve uint64
	// readOnly is set while the store is open read-only for lack of space; every write
	// gets it, until one finds space again (badgerDB.reopenWritable). It is read without a lock
	// by writers and changed only holding badgerDB.mu exclusively.
	readOnly atomic.Pointer[diskFullError]
	// onFull is told of the first refused write (Options.OnFull); refusing says a refusal
	// was told and no write succeeded since.
	onFull   func(error)
	refusing atomic.Bool
}

// refuse returns err, the refusal of a write, telling onFull if it is the first since
// writes last went through.
func (s *space) refuse(err error) error {
	if s.onFull != nil && !s.refusing.Swap(true) {
		s.onFull(err)
	}
	return err
}

// spaceAgain reports whether the disk has at least the reserve free.
func (s *space) spaceAgain() bool {
	if s.free == nil {
		return true
	}
	free, err := s.free()
	return err == nil && free >= s.reserve
}

func newSpace(o Options) *space {
	s := &space{dir: o.Dir, free: o.FreeSpace, reserve: o.Reserve}
	if o.InMemory {
		s.free = nil
	}
	if s.reserve == 0 {
		s.reserve = defaultReserve
	}
	if !o.InMemory && s.free == nil {
		s.free = reuseFreeSpace(freeSpaceOf(o.Dir), s.reserve, time.Now)
	}
	return s
}

// A statfs costs a system call (about 2.5 µs here, a quarter of what a single insert spends
// outside Badger), so the file system's answer is reused for a short while when the disk has
// far more free than any writes could take in that while; near the reserve it is asked before
// every commit. A FreeSpace the caller gives is asked every time.
const (
	freeSpaceReuse  = 10 * time.Millisecond
	freeSpaceMargin = 1 << 30 // the free space, beyond the reserve, that allows reuse
)

// reuseFreeSpace wraps a file system's free-space figure so that an answer showing more than
// reserve + freeSpaceMargin free is reused for freeSpaceReuse: a disk filling by a gigabyte
// in ten milliseconds is beyond what the reserve is meant to absorb anyway.
func reuseFreeSpace(ask func() (uint64, error), reserve uint64, clock func() time.Time) func() (uint64, error) {
	if ask == nil {
		return nil
	}
	var (
		mu    sync.Mutex
		until time.Time // the last answer stands until then
		last  uint64
	)
	return func() (uint64, error) {
		now := clock()
		mu.Lock()
		defer mu.Unlock()
		if now.Before(until) {
			return last, nil
		}
		free, err := ask()
		if err != nil {
			return free, err
		}
		last = free
		if free > reserve+freeSpaceMargin {
			until = now.Add(freeSpaceReuse)
		} else {
			until = time.Time{}
		}
		return free, nil
	}
}

// full returns a diskFullError when the disk has less free space than the reserve. A file
// system that cannot say how much is free is not watched: the write goes ahead.
func (s *space) full() error {
	if ro := s.readOnly.Load(); ro != nil {
		return ro
	}
	if s.free == nil {
		return nil
	}
	free, err := s.free()
	if err != nil || free >= s.reserve {
		s.refusing.Store(false)
		return nil
	}
	return &diskFullError{Dir: s.dir, Free: free, Reserve: s.reserve}
}

// Full returns a DiskFullError when the store's disk has less free space than the reserve, or
// the store is open read-only for lack of it and still lacks it; nil otherwise (the next
// write then makes a read-only store writable), and for a store in memory.
func (d *DB) Full() error { return d.e.full() }

func (d *badgerDB) full() error {
	if d.space.readOnly.Load() != nil && d.space.spaceAgain() {
		return nil
	}
	return d.space.full()
}

// openReadOnly reports, before Badger opens the directory, whether it must open read-only
// because the disk is already full; from then on every write is refused.
func (s *space) openReadOnly() bool {
	if err := s.full(); err != nil {
		ro := err.(*diskFullError)
		ro.ReadOnly = true
		s.readOnly.Store(ro)
		return true
	}
	return false
}
