package lazyfs

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// blockSize is the granularity at which the original content of a file is kept: the first
// change to a block since the file's last fsync saves the block as it was.
const blockSize = 4096

// inode is what the model knows of one file, named by its inode number on the backing
// file system (which a rename keeps).
type inode struct {
	// durableSize is the file's size at its last fsync (0 for a file created since).
	durableSize int64
	// saved holds, for every block changed since the last fsync, its content at that
	// fsync, cut at durableSize; blocks past durableSize need nothing.
	saved map[int64][]byte
	// savedBytes is what saved holds; unsynced counts the bytes written since the fsync.
	savedBytes, unsynced int64
}

// model is the durable state of the backing directory, as a disk that has seen only the
// fsyncs would hold it, and the undo information that brings the backing directory back to
// it. Every change to the backing directory goes through it, holding mu, so that the
// content a change destroys is saved before it.
type model struct {
	mu      sync.Mutex
	backing string // the directory the mount passes through to
	trash   string // where unlinked files still named durably wait, by inode number
	strict  bool

	// cut is set by Cut and Fail: every change fails from then on, with failWith.
	cut      bool
	failWith syscall.Errno

	inodes map[uint64]*inode
	// names and durable map relative paths of regular files to inode numbers: as the
	// backing directory has them now, and as the disk holds them durably.
	names, durable map[string]uint64
	namesChanged   bool

	stats Stats
}

// Stats count what the model saw.
type Stats struct {
	// Syncs counts fsyncs (of files and directories, fdatasync and msync included).
	Syncs int
	// Written is the bytes written through the mount.
	Written int64
	// DroppedBytes and DroppedNames are, after a cut, the bytes of unsynced writes and the
	// unsynced changes to names (creates, renames, unlinks) the cut undid.
	DroppedBytes int64
	DroppedNames int
}

func newModel(backing, trash string, strict bool) (*model, error) {
	m := &model{backing: backing, trash: trash, strict: strict,
		inodes: map[uint64]*inode{}, names: map[string]uint64{}}
	if err := os.MkdirAll(trash, 0o700); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(trash)
	if err != nil {
		return nil, err
	}
	if len(entries) > 0 {
		return nil, fmt.Errorf("lazyfs: %s is not empty: a cut was not restored", trash)
	}
	// Whatever the backing directory holds when it is mounted is durable.
	err = filepath.WalkDir(backing, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(backing, p)
		if err != nil {
			return err
		}
		ino := info.Sys().(*syscall.Stat_t).Ino
		m.names[rel] = ino
		m.inodes[ino] = &inode{durableSize: info.Size()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.durable = maps.Clone(m.names)
	return m, nil
}

// errCut is what every change gets once the power is cut.
var errCut = unix.EIO

func (m *model) inode(ino uint64) *inode {
	in := m.inodes[ino]
	if in == nil {
		in = &inode{}
		m.inodes[ino] = in
	}
	return in
}

// save keeps the content of [off, end) of file ino, read through fd, as it is before a
// change to it: only blocks not saved yet and before the durable size. A truncate passes
// holes: the holes it cuts off need no saving, as the restore's truncate brings their zeros
// back (and a later write there saves the zeros it reads).
func (m *model) save(ino uint64, fd int, off, end int64, holes bool) error {
	in := m.inode(ino)
	end = min(end, in.durableSize)
	for b := off / blockSize; b*blockSize < end; b++ {
		if _, ok := in.saved[b]; ok {
			continue
		}
		start := b * blockSize
		if holes {
			data, err := unix.Seek(fd, start, unix.SEEK_DATA)
			if errors.Is(err, unix.ENXIO) {
				return nil // no data from here to the end of the file
			}
			if err == nil && data >= start+blockSize {
				b = data/blockSize - 1
				continue
			}
		}
		// Past the file's end (cut down since the fsync, and a hole then), zeros.
		buf := make([]byte, min(blockSize, in.durableSize-start))
		if _, err := unix.Pread(fd, buf, start); err != nil {
			return err
		}
		if in.saved == nil {
			in.saved = map[int64][]byte{}
		}
		in.saved[b] = buf
		in.savedBytes += int64(len(buf))
	}
	return nil
}

// synced records an fsync of file ino, whose size is now size.
func (m *model) synced(ino uint64, size int64) {
	in := m.inode(ino)
	in.durableSize, in.saved, in.savedBytes, in.unsynced = size, nil, 0, 0
	m.stats.Syncs++
	if !m.strict {
		m.syncNames("")
	}
}

// syncedDir records an fsync of the directory rel. In the strict model it makes the names
// in that directory durable; in the journaled model (the default), every fsync commits
// every name, as a file system with one journal does.
func (m *model) syncedDir(rel string) {
	m.stats.Syncs++
	if m.strict {
		m.syncNames(rel)
	} else {
		m.syncNames("")
	}
}

// syncNames makes the names in directory dir durable ("" with strict unset: every name).
func (m *model) syncNames(dir string) {
	if !m.namesChanged {
		return
	}
	if dir == "" && !m.strict {
		m.durable = maps.Clone(m.names)
		m.namesChanged = false
	} else {
		for p := range m.durable {
			if filepath.Dir(p) == dir {
				delete(m.durable, p)
			}
		}
		for p, ino := range m.names {
			if filepath.Dir(p) == dir {
				m.durable[p] = ino
			}
		}
	}
	m.collect()
}

// collect deletes the trash files that no durable name refers to any more.
func (m *model) collect() {
	held := map[uint64]bool{}
	for _, ino := range m.durable {
		held[ino] = true
	}
	for _, ino := range m.names {
		held[ino] = true
	}
	for ino := range m.inodes {
		if !held[ino] {
			_ = os.Remove(m.trashPath(ino))
			delete(m.inodes, ino)
		}
	}
}

func (m *model) trashPath(ino uint64) string {
	return filepath.Join(m.trash, strconv.FormatUint(ino, 10))
}

// isDurable reports whether a durable name refers to ino.
func (m *model) isDurable(ino uint64) bool {
	for _, i := range m.durable {
		if i == ino {
			return true
		}
	}
	return false
}

// remove takes the name rel away: a file that a durable name refers to moves to the trash,
// where a cut can bring it back from; any other is unlinked.
func (m *model) remove(rel string) error {
	ino, ok := m.names[rel]
	p := filepath.Join(m.backing, rel)
	if !ok || !m.isDurable(ino) {
		if err := os.Remove(p); err != nil {
			return err
		}
	} else if err := os.Rename(p, m.trashPath(ino)); err != nil {
		return err
	}
	if ok {
		delete(m.names, rel)
		m.namesChanged = true
	}
	return nil
}

// restore brings the backing directory back to its durable state: every file's content to
// its last fsync, every name to the last fsync that made it durable. It runs after the
// mount is gone.
func (m *model) restore() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Every file moves to the trash, named by its inode number...
	for rel, ino := range m.names {
		if err := os.Rename(filepath.Join(m.backing, rel), m.trashPath(ino)); err != nil {
			return fmt.Errorf("lazyfs: restore: %w", err)
		}
		if m.durable[rel] != ino {
			m.stats.DroppedNames++
		}
	}
	for rel, ino := range m.durable {
		if m.names[rel] != ino {
			m.stats.DroppedNames++
		}
	}
	// ...gets its durable content back...
	inos := make([]uint64, 0, len(m.inodes))
	for ino := range m.inodes {
		inos = append(inos, ino)
	}
	sort.Slice(inos, func(i, j int) bool { return inos[i] < inos[j] })
	for _, ino := range inos {
		if err := m.restoreContent(ino, m.inodes[ino]); err != nil {
			return err
		}
	}
	// ...and its durable names; what has none is deleted.
	for rel, ino := range m.durable {
		p := filepath.Join(m.backing, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.Rename(m.trashPath(ino), p); err != nil {
			return fmt.Errorf("lazyfs: restore %s: %w", rel, err)
		}
	}
	entries, err := os.ReadDir(m.trash)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(m.trash, e.Name())); err != nil {
			return err
		}
	}
	m.names = maps.Clone(m.durable)
	m.namesChanged = false
	return nil
}

func (m *model) restoreContent(ino uint64, in *inode) error {
	f, err := os.OpenFile(m.trashPath(ino), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil // unlinked for good
	}
	if err != nil {
		return err
	}
	defer f.Close()
	m.stats.DroppedBytes += in.unsynced
	if err := f.Truncate(in.durableSize); err != nil {
		return err
	}
	for b, buf := range in.saved {
		if _, err := f.WriteAt(buf, b*blockSize); err != nil {
			return err
		}
	}
	in.saved, in.savedBytes, in.unsynced = nil, 0, 0
	return nil
}

// fileSize returns the size of the file open as fd.
func fileSize(fd int) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return st.Size, nil
}
