package server

import (
	"context"
	"errors"
	"net/http"
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
// API (api/accounts) then; not the management API's knobs (limits, faults,
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

// serveSnapshots serves the saved states, path being what follows "api/snapshots":
//
//	GET    api/snapshots                 list them: {"snapshots":[{"name":…,"saved":…}]}
//	POST   api/snapshots/{name}          save the server's state as name (201, replacing)
//	GET    api/snapshots/{name}          describe it
//	POST   api/snapshots/{name}/restore  put the server back to it (204)
//	DELETE api/snapshots/{name}          forget it (204)
//
// Each is the administrator's alone: the state is every account's.
func (s *Server) serveSnapshots(w http.ResponseWriter, r *http.Request, admin bool, path string) {
	if !admin {
		writeControlError(w, errAdminOnly)
		return
	}
	path = strings.TrimPrefix(path, "/")
	name, action, _ := strings.Cut(path, "/")
	switch {
	case name == "":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, r, "GET, HEAD")
			return
		}
		writeControlJSON(w, http.StatusOK, struct {
			Snapshots []SnapshotInfo `json:"snapshots"`
		}{s.Snapshots()})
		return
	case !validSnapshotName(name):
		writeControlError(w, &controlError{status: http.StatusBadRequest, field: "name", message: "name: " + errSnapshotName.Error()})
		return
	case action == "restore":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, r, "POST")
			return
		}
		if err := s.RestoreSnapshot(r.Context(), name); err != nil {
			writeSnapshotError(w, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
		return
	case action != "":
		writeControlError(w, &controlError{status: http.StatusNotFound, message: "a saved state has one action, restore"})
		return
	}
	switch r.Method {
	case http.MethodPost:
		st, err := s.SaveSnapshot(r.Context(), name)
		if err != nil {
			writeSnapshotError(w, err)
			return
		}
		w.Header().Set("Location", ReservedPrefix+"api/snapshots/"+name)
		writeControlJSON(w, http.StatusCreated, st)
	case http.MethodGet, http.MethodHead:
		saved, ok := s.state(name)
		if !ok {
			writeSnapshotError(w, ErrSnapshotNotFound)
			return
		}
		writeControlJSON(w, http.StatusOK, SnapshotInfo{Name: name, Saved: saved.saved})
	case http.MethodDelete:
		if err := s.DeleteSnapshot(name); err != nil {
			writeSnapshotError(w, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, r, "GET, HEAD, POST, DELETE")
	}
}

// writeSnapshotError answers a saved-state error with its status.
func writeSnapshotError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrSnapshotNotFound):
		status = http.StatusNotFound
	case errors.Is(err, ErrSnapshotsOnDisk):
		status = http.StatusConflict
	case errors.Is(err, errTooManySnapshots):
		status = http.StatusConflict
	case errors.Is(err, errSnapshotName):
		status = http.StatusBadRequest
	}
	writeControlError(w, &controlError{status: status, message: err.Error()})
}
