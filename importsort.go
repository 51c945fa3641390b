package tabula

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/tabuladb/tabula/storage"
)

// tableSorter gathers the entities of a table that came out of key order, for an
// exclusive import to load directly all the same: in runs of at most the memory the store
// grants a load (storage.DB.LoadSpace), each sorted and, once full, written to a file of
// its own in the database's directory; merge hands them back in key order. The files are
// removed by close, and any an earlier process left (it was killed) by the next sort.
type tableSorter struct {
	dir      string
	runBytes int
	// The run being gathered: entries back to back in chunks of sortChunk bytes (kept for
	// the next run), the first used of them, and where each entry starts (its chunk<<32 |
	// its offset). Chunks, not one slice grown by append, which would copy the run over
	// and over as it grows (half the CPU of a sort, measured).
	chunks  [][]byte
	used    int
	starts  []uint64
	runSize int
	files   []*os.File
	// loaded is the last key a direct load of the table stored before the sort began;
	// nil when none did.
	loaded []byte
	count  int   // entities added
	bytes  int64 // their keys' and records' bytes
}

// sortFilePattern names the sorter's files in the database's directory.
const sortFilePattern = "import-sort-*.tmp"

// sortChunk is the size of the sorter's chunks of memory; an entity larger gets a chunk of
// its own size.
const sortChunk = 4 << 20

// sortHeader is the size of an entry's head: the lengths of its key, record and path, and
// its line.
const sortHeader = 4 + 4 + 4 + 8

// sortedEntity is one entity of the table being sorted; its slices are valid until the next
// one is read.
type sortedEntity struct {
	key, record []byte
	path        string
	line        int
}

// sortRunBytes, when set (by tests), is the size of a run in place of the store's grant.
var sortRunBytes int

func newTableSorter(dir string, runBytes int) *tableSorter {
	if sortRunBytes > 0 {
		runBytes = sortRunBytes
	}
	if old, err := filepath.Glob(filepath.Join(dir, sortFilePattern)); err == nil {
		for _, name := range old {
			_ = os.Remove(name)
		}
	}
	return &tableSorter{dir: dir, runBytes: runBytes}
}

// add gathers an entity, writing the run out first when the entity would take it past
// runBytes.
func (s *tableSorter) add(key, record []byte, line int, path string) error {
	size := sortHeader + len(key) + len(record) + len(path)
	if len(s.starts) > 0 && s.runSize+size > s.runBytes {
		if err := s.spill(); err != nil {
			return err
		}
	}
	if s.used == 0 || len(s.chunks[s.used-1])+size > cap(s.chunks[s.used-1]) {
		switch {
		case s.used < len(s.chunks) && cap(s.chunks[s.used]) >= size:
			s.chunks[s.used] = s.chunks[s.used][:0]
		case s.used < len(s.chunks):
			s.chunks[s.used] = make([]byte, 0, max(sortChunk, size))
		default:
			s.chunks = append(s.chunks, make([]byte, 0, max(sortChunk, size)))
		}
		s.used++
	}
	c := s.chunks[s.used-1]
	s.starts = append(s.starts, uint64(s.used-1)<<32|uint64(len(c)))
	c = binary.LittleEndian.AppendUint32(c, uint32(len(key)))
	c = binary.LittleEndian.AppendUint32(c, uint32(len(record)))
	c = binary.LittleEndian.AppendUint32(c, uint32(len(path)))
	c = binary.LittleEndian.AppendUint64(c, uint64(line))
	s.chunks[s.used-1] = append(append(append(c, key...), record...), path...)
	s.runSize += size
	s.count++
	s.bytes += int64(len(key) + len(record))
	return nil
}

// entryAt is the encoding of the run's entry at start, and its key.
func (s *tableSorter) entryAt(start uint64) (entry, key []byte) {
	h := s.chunks[start>>32][uint32(start):]
	k, r, p := binary.LittleEndian.Uint32(h), binary.LittleEndian.Uint32(h[4:]), binary.LittleEndian.Uint32(h[8:])
	entry = h[:sortHeader+k+r+p]
	return entry, entry[sortHeader : sortHeader+k]
}

// sortRun sorts the run by key; entries of one key stay in the order they came in (by
// where they start).
func (s *tableSorter) sortRun() {
	slices.SortFunc(s.starts, func(a, b uint64) int {
		_, ka := s.entryAt(a)
		_, kb := s.entryAt(b)
		return cmp.Or(bytes.Compare(ka, kb), cmp.Compare(a, b))
	})
}

// spill writes the run, sorted, to a file of its own, and starts the next.
func (s *tableSorter) spill() (err error) {
	s.sortRun()
	f, err := os.CreateTemp(s.dir, sortFilePattern)
	if err != nil {
		return s.fileError(err)
	}
	s.files = append(s.files, f)
	w := bufio.NewWriterSize(f, 1<<20)
	for _, start := range s.starts {
		entry, _ := s.entryAt(start)
		if _, err := w.Write(entry); err != nil {
			return s.fileError(err)
		}
	}
	if err := w.Flush(); err != nil {
		return s.fileError(err)
	}
	s.used, s.starts, s.runSize = 0, s.starts[:0], 0
	return nil
}

func (s *tableSorter) fileError(err error) error { return &sortFileError{dir: s.dir, err: err} }

// sortFileError is the sorter's failure to write or read its files (a full disk), which
// the import names the line of (atLine).
type sortFileError struct {
	dir  string
	err  error
	line int
}

func (e *sortFileError) Error() string {
	return fmt.Sprintf("line %d: sorting the table out of key order in the database's directory %s: %v", e.line, e.dir, e.err)
}

func (e *sortFileError) Unwrap() error { return e.err }

// atLine gives a sorter's failure among errs the line the import was at.
func atLine(err error, line int) error {
	var fe *sortFileError
	if errors.As(err, &fe) {
		fe.line = line
	}
	return err
}

// close removes the sorter's files.
func (s *tableSorter) close() {
	for _, f := range s.files {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}
	s.files, s.chunks, s.used, s.starts = nil, nil, 0, nil
}

// merge calls fn with every entity added, in key order (entities of one key in the order
// they were added), until fn returns an error.
func (s *tableSorter) merge(fn func(e *sortedEntity) error) error {
	s.sortRun()
	h := make(mergeHeap, 0, len(s.files)+1)
	for _, f := range s.files {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return s.fileError(err)
		}
		h = append(h, &mergeSource{r: bufio.NewReaderSize(f, 256<<10)})
	}
	h = append(h, &mergeSource{run: s})
	live := h[:0]
	for _, src := range h {
		ok, err := src.next()
		if err != nil {
			return s.fileError(err)
		}
		if ok {
			live = append(live, src)
		}
	}
	h = live
	heap.Init(&h)
	for len(h) > 0 {
		src := h[0]
		if err := fn(&src.cur); err != nil {
			return err
		}
		ok, err := src.next()
		if err != nil {
			return s.fileError(err)
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}

// mergeSource is a run being merged: a file's, or the one still in memory.
type mergeSource struct {
	r   *bufio.Reader
	buf []byte
	run *tableSorter
	i   int
	cur sortedEntity
}

func (m *mergeSource) next() (bool, error) {
	var entry []byte
	if m.run != nil {
		if m.i == len(m.run.starts) {
			return false, nil
		}
		entry, _ = m.run.entryAt(m.run.starts[m.i])
		m.i++
	} else {
		var h [sortHeader]byte
		if _, err := io.ReadFull(m.r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
		k, r, p := binary.LittleEndian.Uint32(h[:]), binary.LittleEndian.Uint32(h[4:]), binary.LittleEndian.Uint32(h[8:])
		m.buf = append(append(m.buf[:0], h[:]...), make([]byte, k+r+p)...)
		if _, err := io.ReadFull(m.r, m.buf[sortHeader:]); err != nil {
			return false, err
		}
		entry = m.buf
	}
	k, r, p := binary.LittleEndian.Uint32(entry), binary.LittleEndian.Uint32(entry[4:]), binary.LittleEndian.Uint32(entry[8:])
	body := entry[sortHeader:]
	m.cur = sortedEntity{key: body[:k], record: body[k : k+r], path: string(body[k+r : k+r+p]),
		line: int(binary.LittleEndian.Uint64(entry[12:]))}
	return true, nil
}

// mergeHeap orders the runs by their entity's key, then its line.
type mergeHeap []*mergeSource

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	a, b := &h[i].cur, &h[j].cur
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	return a.line < b.line
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*mergeSource)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// outOfOrder handles an entity whose key is not after every one before it in its table.
// A direct load takes keys in order only. A table that may be loaded directly and whose
// load has not begun (the entities read so far are all in the batch) is sorted instead
// (tableSorter), from its first entity, in the database's directory, and loaded at its end
// (writeSorted). One whose load has begun ends it, and its rest is sorted and loaded the
// same way, its keys up to the last one loaded looked up in the store first; under
// BestEffort, which would have to leave such repeats out of the load, the rest goes the
// ordinary way.
func (l *loader) outOfOrder() error {
	dir, memory := l.db.store.LoadSpace()
	switch {
	case dir == "" || l.sorter != nil:
	case l.load == nil && l.mayLoad():
		l.sorter = newTableSorter(dir, memory)
		for i := range l.batch {
			e := &l.batch[i]
			if err := l.sorter.add(e.key, e.record, e.line, e.path); err != nil {
				return atLine(err, e.line)
			}
		}
		clear(l.batch)
		l.batch, l.size = l.batch[:0], 0
	case l.load != nil && !l.opts.BestEffort:
		if err := l.endLoad(); err != nil {
			return err
		}
		l.sorter = newTableSorter(dir, memory)
		l.sorter.loaded = bytes.Clone(l.cur.maxKey)
	}
	l.cur.unsorted = true
	return l.endLoad()
}

// errPastLoaded ends storedRepeats' pass at the first key after those loaded.
var errPastLoaded = errors.New("past the keys loaded")

// storedRepeats finds the entity, first in the file, of those the sorter holds whose key
// a load of the table before the sort stored already.
func (l *loader) storedRepeats(s *tableSorter) (*sortedEntity, error) {
	var repeat *sortedEntity
	past := false
	var fileErr *sortFileError // kept from view, which would make it an internal error
	err := l.db.view(l.ctx, func(tx *storage.Txn) error {
		err := s.merge(func(e *sortedEntity) error {
			if bytes.Compare(e.key, s.loaded) > 0 {
				past = true
				return errPastLoaded
			}
			found, err := tx.Get(e.key, nil)
			if err == nil && found && (repeat == nil || e.line < repeat.line) {
				repeat = &sortedEntity{key: bytes.Clone(e.key), path: e.path, line: e.line}
			}
			return err
		})
		if errors.As(err, &fileErr) {
			return nil
		}
		return err
	})
	if past {
		err = nil
	}
	if fileErr != nil {
		return nil, fileErr
	}
	return repeat, err
}

// writeSorted writes the table the sorter gathered, in key order: through a direct load
// when the table is large enough and the store takes one, through the Bulk otherwise. A
// key in the table twice is the import's error, as a repeat is wherever the table comes
// from (the repeat that comes first in the file), or under BestEffort the later entity is
// skipped.
func (l *loader) writeSorted() error {
	s := l.sorter
	if s == nil {
		return nil
	}
	defer func() {
		s.close()
		l.sorter = nil
	}()
	if err := l.ctx.Err(); err != nil {
		return err
	}
	var repeat *sortedEntity
	if s.loaded != nil {
		var err error
		if repeat, err = l.storedRepeats(s); err != nil {
			return atLine(err, l.p.Line)
		}
	}
	if repeat == nil && !l.noLoad && (int64(s.count) >= loadFrom || s.bytes >= loadFromBytes) {
		if err := l.startLoad(); err != nil {
			return err
		}
	}
	var prev []byte
	skipped, n := 0, 0
	err := s.merge(func(e *sortedEntity) error {
		if n++; n%4096 == 0 {
			if err := l.ctx.Err(); err != nil {
				return err
			}
		}
		if prev != nil && bytes.Equal(e.key, prev) {
			switch {
			case l.opts.BestEffort:
				skipped++
			case repeat == nil || e.line < repeat.line:
				repeat = &sortedEntity{key: bytes.Clone(e.key), path: e.path, line: e.line}
			}
			return nil
		}
		prev = append(prev[:0], e.key...)
		switch {
		case repeat != nil: // the import fails: only the first repeat is looked for
			return nil
		case l.load != nil:
			return storageError(l.load.Set(e.key, e.record))
		default:
			return storageError(l.bulk.Set(e.key, e.record))
		}
	})
	if err != nil {
		return atLine(err, l.p.Line)
	}
	if repeat != nil {
		pk, rk, err := decodeEntityKey(repeat.key)
		if err != nil {
			return err
		}
		return repeatError(repeat.line, repeat.path, pk, rk)
	}
	l.p.Skipped += int64(skipped)
	l.p.Entities -= int64(skipped)
	l.p.TableEntities -= int64(skipped)
	return nil
}

// repeatError is the import's error for the entity at line whose keys an entity before it
// in the file has in the same table.
func repeatError(line int, path, pk, rk string) error {
	return entityError(line, path, pk, rk, "is in the table twice", ErrInvalidInput)
}

// entityError is the import's error for the entity at line, which why says is wrong.
func entityError(line int, path, pk, rk, why string, code *Error) error {
	return &ImportError{Line: line, Field: cmp.Or(path, "PartitionKey, RowKey"), Rule: fmt.Sprintf("entity (%q, %q) %s", pk, rk, why),
		Err: code.WithDetail("entity (%q, %q)", pk, rk)}
}
