package server

import (
	"errors"
	"net/http"
	"strings"
)

// createdAccountJSON is the answer to POST api/accounts.
type createdAccountJSON struct {
	Name             string `json:"name"`
	Key              string `json:"key"`
	ConnectionString string `json:"connectionString"`
}

// accountNameJSON is an account as GET api/accounts lists it: by name, never with its keys.
type accountNameJSON struct {
	Name string `json:"name"`
}

// serveAccounts serves the accounts resource:
//
//	POST   api/accounts          (admin) create an account: body {"name": …} or none → 201
//	GET    api/accounts          (admin) list the accounts' names
//	DELETE api/accounts/{name}   (admin, or the account itself) drop it and its data → 204
func (s *Server) serveAccounts(w http.ResponseWriter, r *http.Request, who principal, name string) {
	if name == "" {
		switch r.Method {
		case http.MethodPost, http.MethodGet, http.MethodHead:
		default:
			methodNotAllowed(w, r, "GET, HEAD, POST")
			return
		}
		if !who.admin {
			writeControlError(w, errAdminOnly)
			return
		}
		if r.Method == http.MethodPost {
			s.createAccount(w, r)
			return
		}
		out := struct {
			Accounts []accountNameJSON `json:"accounts"`
		}{Accounts: []accountNameJSON{}}
		for _, a := range s.Accounts() {
			out.Accounts = append(out.Accounts, accountNameJSON{a.Name})
		}
		writeControlJSON(w, http.StatusOK, out)
		return
	}
	if r.Method != http.MethodDelete {
		methodNotAllowed(w, r, "DELETE")
		return
	}
	if !who.admin && who.account != name {
		writeControlError(w, &controlError{status: http.StatusForbidden,
			message: "an account can delete only itself; sign in as it, or as " + AdminUser + " with the admin key"})
		return
	}
	err := s.DeleteAccount(r.Context(), name)
	switch {
	case errors.Is(err, ErrUnknownAccount):
		writeControlError(w, &controlError{status: http.StatusNotFound, message: err.Error()})
	case errors.Is(err, errConfiguredAccount):
		writeControlError(w, &controlError{status: http.StatusForbidden, message: err.Error()})
	case err != nil:
		writeControlError(w, &controlError{status: http.StatusInternalServerError, message: err.Error()})
	default:
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
	}
}

// errAdminOnly refuses an account's credential where only the administrator's will do.
var errAdminOnly = &controlError{status: http.StatusForbidden,
	message: "only the administrator may do this: sign in as " + AdminUser + " with the admin key, which tabula serve prints"}

// createAccount serves POST api/accounts.
func (s *Server) createAccount(w http.ResponseWriter, r *http.Request) {
	body, cerr := readControlBody(w, r)
	if cerr != nil {
		writeControlError(w, cerr)
		return
	}
	var req struct {
		Name *string `json:"name"`
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if cerr := decodeControl(body, &req); cerr != nil {
			writeControlError(w, cerr)
			return
		}
	}
	name := ""
	if req.Name != nil {
		name = *req.Name
		if !validCreatedName(name) {
			writeControlError(w, badField("name", "%q is not a storage account name: it must be 3 to 24 lowercase letters and digits, or absent for a generated one", name))
			return
		}
	}
	a, err := s.CreateAccount(name)
	switch {
	case errors.Is(err, errAccountExists):
		writeControlError(w, &controlError{status: http.StatusConflict, field: "name", message: "name: account " + name + " exists"})
		return
	case errors.Is(err, errTooManyAccounts):
		writeControlError(w, &controlError{status: http.StatusServiceUnavailable, message: err.Error()})
		return
	case err != nil:
		writeControlError(w, &controlError{status: http.StatusBadRequest, message: err.Error()})
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	w.Header().Set("Location", ReservedPrefix+"api/accounts/"+a.Name)
	writeControlJSON(w, http.StatusCreated, createdAccountJSON{Name: a.Name, Key: a.Keys[0],
		ConnectionString: a.ConnectionString(scheme + "://" + r.Host)})
}
