package server

import (
	"errors"
	"net/http"
	"strings"
)

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
