package server

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tabuladb/tabula"
)

// Saved states of the whole server, by name: what a test suite in any language resets to
// between tests (Tabula's own, beyond the service, as LocalStack's state snapshots are).
// A state is a tabula.Snapshot of the server's database, every account's tables, entities,
// access policies and service properties, with the accounts created through the management
// API (api/accounts) then; not the management API's settings (limits, faults,
// query switches), which are steering, not state. Of an in-memory database (tabula serve
// without --data) saving and restoring each cost microseconds whatever the data, and a saved
// state holds only what has changed since; on disk a restore would mean rewriting the data,
// so the server refuses both with 409 and says why.

// MaxSnapshots bounds how many states a server keeps.
const MaxSnapshots = 100

// maxSnapshotName bounds a saved state's name.
const maxSnapshotName = 63

// SnapshotInfo describes a saved state.
type SnapshotInfo struct {
	Name  string    `json:"name"`
	Saved time.Time `json:"saved"`
}

// savedStates is the server's saved states.
type savedStates struct {
	mu sync.Mutex
	m  map[string]savedState
}

type savedState struct {
	snap  *tabula.Snapshot
	saved time.Time
	// created are the accounts created through the management API when it was saved.
	created []*accountEntry
}

// Errors of the saved states, each with its HTTP status on the management API.
var (
	ErrSnapshotNotFound = errors.New("server: no saved state of that name")
	ErrSnapshotsOnDisk  = errors.New("server: saved states need an in-memory database (tabula serve without --data): on disk, restoring would rewrite the data")
	errTooManySnapshots = errors.New("server: too many saved states; delete one first")
	errSnapshotName     = errors.New("server: a saved state's name is 1 to 63 ASCII letters, digits, '-', '_' and '.'")
)

func validSnapshotName(name string) bool {
	if name == "" || len(name) > maxSnapshotName {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// SaveSnapshot saves the server's whole state under name, replacing a state of that name.
func (s *Server) SaveSnapshot(ctx context.Context, name string) (SnapshotInfo, error) {
	if !validSnapshotName(name) {
		return SnapshotInfo{}, errSnapshotName
	}
	// The accounts and their data as of one instant: no account is created or deleted
	// meanwhile.
	s.dir.mu.Lock()
	snap, err := s.db.Snapshot(ctx)
	var created []*accountEntry
	for _, name := range s.dir.order {
		if e := s.dir.get(name); e != nil && e.created {
			created = append(created, e)
		}
	}
	s.dir.mu.Unlock()
	if err != nil {
		return SnapshotInfo{}, err
	}
	if !snap.InMemory() {
		_ = snap.Close()
		return SnapshotInfo{}, ErrSnapshotsOnDisk
	}
	st := &s.states
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.m[name]; !ok && len(st.m) >= MaxSnapshots {
		return SnapshotInfo{}, errTooManySnapshots
	}
	if st.m == nil {
		st.m = map[string]savedState{}
	}
	saved := savedState{snap: snap, saved: s.clock(), created: created}
	st.m[name] = saved
	return SnapshotInfo{Name: name, Saved: saved.saved}, nil
}

// RestoreSnapshot puts the server back to the state saved under name, at once: requests under
// way end before it or run after it, on the restored data.
func (s *Server) RestoreSnapshot(ctx context.Context, name string) error {
	saved, ok := s.state(name)
	if !ok {
		return ErrSnapshotNotFound
	}
	d := &s.dir
	d.mu.Lock()
	defer d.mu.Unlock()
	err := s.db.Restore(ctx, saved.snap)
	if errors.Is(err, tabula.ErrRestoreOnDisk) {
		return ErrSnapshotsOnDisk
	}
	if err != nil {
		return err
	}
	// The accounts created through the management API come back as they were: those created
	// since go (their data went with the restore), those deleted since return, with their
	// keys and their data.
	keep := make(map[string]*accountEntry, len(saved.created))
	for _, e := range saved.created {
		keep[e.Name] = e
	}
	order := d.order[:0:0]
	for _, name := range d.order {
		e := d.get(name)
		switch {
		case e == nil:
		case !e.created:
			order = append(order, name)
		case keep[name] != e:
			d.byName.Delete(name)
			liveCreated.Delete(liveNamespace{s.db, e.ns.Name()})
		}
	}
	for _, e := range saved.created {
		d.byName.Store(e.Name, e)
		liveCreated.Store(liveNamespace{s.db, e.ns.Name()}, struct{}{})
		order = append(order, e.Name)
	}
	d.order, d.created = order, len(saved.created)
	return nil
}

// DeleteSnapshot forgets the state saved under name.
func (s *Server) DeleteSnapshot(name string) error {
	st := &s.states
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.m[name]; !ok {
		return ErrSnapshotNotFound
	}
	delete(st.m, name)
	return nil
}

// Snapshots lists the saved states by name.
func (s *Server) Snapshots() []SnapshotInfo {
	st := &s.states
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]SnapshotInfo, 0, len(st.m))
	for name, v := range st.m {
		out = append(out, SnapshotInfo{Name: name, Saved: v.saved})
	}
	slices.SortFunc(out, func(a, b SnapshotInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (s *Server) state(name string) (savedState, bool) {
	st := &s.states
	st.mu.Lock()
	defer st.mu.Unlock()
	v, ok := st.m[name]
	return v, ok
}
