package tabula

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tabuladb/tabula/internal/wire"
)

// CheckImport reads a file as DB.Import would and checks every line by the same rules,
// writing nothing anywhere: the grammar and counts of an interchange file, or a fixture's
// structure; each table's name, access policies and service properties; each entity by the
// service's rules, and its keys once in its table. What depends on a database it does not
// check: an entity that exists already, or a table being deleted. It holds the keys of the
// table being read. Its Progress and errors are DB.Import's.
func CheckImport(ctx context.Context, r io.Reader, opts *ImportOptions) (Progress, error) {
	if opts == nil {
		opts = &ImportOptions{}
	}
	im, err := newImporter(r, opts)
	if err != nil {
		return Progress{}, err
	}
	var (
		tables   = map[string]int{} // lower-case account and name → line
		keys     keySet
		key      []byte
		skipping bool
	)
	check := func(rec *wire.Record) error {
		switch rec.Kind {
		case wire.RecordAccount:
			return checkServiceProperties(rec)
		case wire.RecordTable:
			if skipping = !im.wanted(rec.Table); skipping {
				return nil
			}
			field := cmp.Or(rec.Path, "table")
			if err := validateTableName(rec.Table); err != nil {
				return &ImportError{Line: rec.Line, Field: field, Rule: ruleOf(err), Err: err}
			}
			name := rec.Account + "\x00" + strings.ToLower(rec.Table)
			if line, twice := tables[name]; twice {
				return &ImportError{Line: rec.Line, Field: field, Rule: fmt.Sprintf("table %q is in the file twice, at lines %d and %d", rec.Table, line, rec.Line), Err: ErrInvalidInput}
			}
			tables[name] = rec.Line
			keys.reset()
			im.p.Account, im.p.Table, im.p.InTable, im.p.TableEntities = rec.Account, rec.Table, true, 0
			_, err := tablePolicies(rec)
			return err
		case wire.RecordEntity:
			if skipping {
				return nil
			}
			e, _, err := entityOf(&rec.Entity)
			if err == nil && !im.wants(&e) {
				return nil
			}
			if err == nil {
				key = appendEntityKey(key[:0], 0, e.PartitionKey, e.RowKey)
				if keys.add(key) {
					err = ErrInvalidInput.WithDetail("entity (%q, %q) is in the table twice", e.PartitionKey, e.RowKey)
				}
			}
			if err != nil {
				if opts.BestEffort {
					im.p.Skipped++
					return nil
				}
				return importError(rec.Line, rec.Path, err)
			}
			im.p.Entities++
			im.p.TableEntities++
			if im.p.Entities%im.every == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
				return im.progress()
			}
		case wire.RecordTableEnd:
			if skipping {
				skipping = false
				return nil
			}
			keys = keySet{} // its memory goes
			im.p.Tables++
			im.p.InTable = false
			return im.progress()
		}
		return nil
	}
	for {
		rec, err := im.dec.Next()
		if err == io.EOF {
			return im.p, nil
		}
		if err != nil {
			if opts.BestEffort && skippable(err) {
				im.p.Skipped++
				continue
			}
			return im.p, readError(im.p.Line, err)
		}
		im.p.Line = rec.Line
		if err := check(&rec); err != nil {
			return im.p, err
		}
	}
}

// keySet holds the keys of a table's entities, for CheckImport to find a repeat. Keys in
// ascending order, as exports write them, go into one buffer, back to back: a key after
// the last cannot be a repeat, and a later one is searched for there. Only the keys from
// the first one out of order on go into a map. A table in key order then costs an append
// an entity, and its keys' bytes and an offset each, where a map costs a hash, an
// insertion and about three times the memory.
type keySet struct {
	sorted []byte
	ends   []int // where each key of sorted ends
	others map[string]struct{}
}

func (s *keySet) reset() {
	s.sorted, s.ends, s.others = s.sorted[:0], s.ends[:0], nil
}

// add adds key and says whether the set held it already.
func (s *keySet) add(key []byte) (twice bool) {
	if s.others == nil {
		if len(s.ends) == 0 || bytes.Compare(key, s.sortedKey(len(s.ends)-1)) > 0 {
			s.sorted = append(s.sorted, key...)
			s.ends = append(s.ends, len(s.sorted))
			return false
		}
		s.others = map[string]struct{}{}
	}
	i := sort.Search(len(s.ends), func(i int) bool { return bytes.Compare(s.sortedKey(i), key) >= 0 })
	if i < len(s.ends) && bytes.Equal(s.sortedKey(i), key) {
		return true
	}
	if _, ok := s.others[string(key)]; ok {
		return true
	}
	s.others[string(key)] = struct{}{}
	return false
}

func (s *keySet) sortedKey(i int) []byte {
	start := 0
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.sorted[start:s.ends[i]]
}
