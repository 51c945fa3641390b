package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula/partition"
)

// The management API's controls steer the simulation while the server runs, from any
// language that speaks HTTP: the rate limits, fault injection, the query switches, and the
// statistics of the heat report. Each resource is a JSON object; GET reads it, PUT changes
// the fields the body names and leaves the others as they are, and both answer with the
// object now in force. See the package documentation for the shapes and a curl session.

// maxControlBody bounds a control request's body: the objects are a few hundred bytes.
const maxControlBody = 64 << 10

// limitsJSON is the rate limits resource, ReservedPrefix+"api/limits".
type limitsJSON struct {
	Mode           string  `json:"mode"`
	PartitionRate  float64 `json:"partitionRate"`
	PartitionBurst float64 `json:"partitionBurst"`
	AccountRate    float64 `json:"accountRate"`
	AccountBurst   float64 `json:"accountBurst"`
}

// limitsChange is a PUT of the limits: the fields present change.
type limitsChange struct {
	Mode           *string  `json:"mode"`
	PartitionRate  *float64 `json:"partitionRate"`
	PartitionBurst *float64 `json:"partitionBurst"`
	AccountRate    *float64 `json:"accountRate"`
	AccountBurst   *float64 `json:"accountBurst"`
}

// faultsJSON is the fault injection resource, ReservedPrefix+"api/faults".
type faultsJSON struct {
	Seed              uint64   `json:"seed"`
	ServerBusy        float64  `json:"serverBusy"`
	Timeout           float64  `json:"timeout"`
	Kinds             []string `json:"kinds"`
	ContinuationEvery int      `json:"continuationEvery"`
	OfflineOnSplit    bool     `json:"offlineOnSplit"`
	OfflineFor        string   `json:"offlineFor"`
	// TableDeleteDelay is tabula.Options.TableDeleteDelay, the whole server's: how long a
	// deleted table stays in the TableBeingDeleted state ("0s": not at all).
	TableDeleteDelay string `json:"tableDeleteDelay"`
}

// faultsChange is a PUT of the faults: the fields present change.
type faultsChange struct {
	Seed              *uint64   `json:"seed"`
	ServerBusy        *float64  `json:"serverBusy"`
	Timeout           *float64  `json:"timeout"`
	Kinds             *[]string `json:"kinds"`
	ContinuationEvery *int      `json:"continuationEvery"`
	OfflineOnSplit    *bool     `json:"offlineOnSplit"`
	OfflineFor        *string   `json:"offlineFor"`
	TableDeleteDelay  *string   `json:"tableDeleteDelay"`
}

// queriesJSON is the query switches resource, ReservedPrefix+"api/queries".
type queriesJSON struct {
	ForbidFullScans       bool `json:"forbidFullScans"`
	BoundaryContinuations bool `json:"boundaryContinuations"`
}

// queriesChange is a PUT of the query switches: the fields present change.
type queriesChange struct {
	ForbidFullScans       *bool `json:"forbidFullScans"`
	BoundaryContinuations *bool `json:"boundaryContinuations"`
}

// controlError is a refused control request: its status, the JSON field at fault ("" when
// the request as a whole is) and what is wrong, in words.
type controlError struct {
	status  int
	field   string
	message string
}

func (e *controlError) Error() string { return e.message }

// badField refuses a request because of one field's value.
func badField(field, format string, args ...any) *controlError {
	return &controlError{status: http.StatusBadRequest, field: field, message: field + ": " + fmt.Sprintf(format, args...)}
}

// serveControl serves the management API's controls: limits, faults, query switches and the
// reset of statistics.
//
// Each acts on the signed-in account alone; the administrator's act on every account, or on
// the one named by ?account=NAME (see scopeOf).
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request, who principal, path string) {
	switch path {
	case "limits", "faults", "queries", "reset":
	default:
		writeControlError(w, &controlError{status: http.StatusNotFound, message: fmt.Sprintf(
			"%q is not a resource of the management API; it has limits, faults, queries, reset, report, explain, data and accounts", path)})
		return
	}
	k, _, cerr := s.scopeOf(r, who)
	if cerr != nil {
		writeControlError(w, cerr)
		return
	}
	switch path {
	case "limits":
		s.controlResource(w, r, func() any { return limitsView(k) }, func(b []byte) *controlError { return changeLimits(k, b) })
	case "faults":
		if r.Method == http.MethodDelete {
			s.controlMu.Lock()
			k.SetFaults(partition.Faults{})
			v := s.faultsView(k)
			s.controlMu.Unlock()
			writeControlJSON(w, http.StatusOK, v)
			return
		}
		s.controlResource(w, r, func() any { return s.faultsView(k) }, func(b []byte) *controlError { return s.changeFaults(k, b) })
	case "queries":
		s.controlResource(w, r, func() any { return queriesView(k) }, func(b []byte) *controlError { return changeQueries(k, b) })
	case "reset":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, r, "POST")
			return
		}
		k.ResetStats()
		w.WriteHeader(http.StatusNoContent)
	}
}

// runtimeSettings are what the management API steers and reads: the settings that change
// while the DB runs, the whole DB's (*tabula.DB, for the administrator) or one account's
// namespace's (*tabula.Namespace).
type runtimeSettings interface {
	Limits() partition.Limits
	SetRates(partition.Limits)
	SetLimitMode(partition.LimitMode)
	Faults() partition.Faults
	SetFaults(partition.Faults)
	ForbidFullScans() bool
	SetForbidFullScans(bool)
	BoundaryContinuations() bool
	SetBoundaryContinuations(bool)
	HeatReport() partition.Report
	ResetStats()
}

// scopeOf returns what a management request acts on: the signed-in account's namespace, or
// for the administrator every account's (the DB) unless ?account=NAME names one. It also
// returns that account (nil for every account). An account naming another account is refused.
func (s *Server) scopeOf(r *http.Request, who principal) (runtimeSettings, *accountEntry, *controlError) {
	name := r.URL.Query().Get("account")
	if !who.admin {
		if name != "" && name != who.account {
			return nil, nil, &controlError{status: http.StatusForbidden, field: "account",
				message: "an account sees and steers only itself; sign in as " + AdminUser + " with the admin key for another"}
		}
		name = who.account
	} else if name == "" {
		return s.db, nil, nil
	}
	e := s.dir.get(name)
	if e == nil {
		return nil, nil, &controlError{status: http.StatusNotFound, field: "account", message: "account " + name + " is not one this server serves"}
	}
	return e.ns, e, nil
}

// controlResource serves GET and PUT of one resource: view reads it, change applies the body
// of a PUT (with s.controlMu held, so that concurrent PUTs do not lose each other's fields).
func (s *Server) controlResource(w http.ResponseWriter, r *http.Request, view func() any, change func(body []byte) *controlError) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		writeControlJSON(w, http.StatusOK, view())
	case http.MethodPut:
		body, cerr := readControlBody(w, r)
		if cerr != nil {
			writeControlError(w, cerr)
			return
		}
		s.controlMu.Lock()
		defer s.controlMu.Unlock()
		if cerr := change(body); cerr != nil {
			writeControlError(w, cerr)
			return
		}
		writeControlJSON(w, http.StatusOK, view())
	default:
		allow := "GET, HEAD, PUT"
		if strings.HasSuffix(r.URL.Path, "/faults") {
			allow += ", DELETE"
		}
		methodNotAllowed(w, r, allow)
	}
}

func limitsView(k runtimeSettings) any {
	l := k.Limits()
	return limitsJSON{Mode: l.Mode.String(), PartitionRate: l.PartitionRate, PartitionBurst: l.PartitionBurst,
		AccountRate: l.AccountRate, AccountBurst: l.AccountBurst}
}

func changeLimits(k runtimeSettings, body []byte) *controlError {
	var c limitsChange
	if err := decodeControl(body, &c); err != nil {
		return err
	}
	var mode partition.LimitMode
	if c.Mode != nil {
		m, err := partition.ParseLimitMode(*c.Mode)
		if err != nil {
			return settingField(err)
		}
		mode = m
	}
	for _, f := range []struct {
		name  string
		v     *float64
		burst bool
	}{
		{"partitionRate", c.PartitionRate, false},
		{"partitionBurst", c.PartitionBurst, true},
		{"accountRate", c.AccountRate, false},
		{"accountBurst", c.AccountBurst, true},
	} {
		check := partition.CheckRate
		if f.burst {
			check = partition.CheckBurst
		}
		if f.v != nil {
			if err := check(f.name, *f.v); err != nil {
				return settingField(err)
			}
		}
	}
	if c.PartitionRate != nil || c.PartitionBurst != nil || c.AccountRate != nil || c.AccountBurst != nil {
		l := k.Limits()
		pick := func(rate, burst *float64, curRate, curBurst float64) (float64, float64) {
			switch {
			case rate != nil && burst != nil:
				return *rate, *burst
			case rate != nil:
				return *rate, 0 // a second's worth of the new rate
			case burst != nil:
				return curRate, *burst
			}
			return curRate, curBurst
		}
		l.PartitionRate, l.PartitionBurst = pick(c.PartitionRate, c.PartitionBurst, l.PartitionRate, l.PartitionBurst)
		l.AccountRate, l.AccountBurst = pick(c.AccountRate, c.AccountBurst, l.AccountRate, l.AccountBurst)
		k.SetRates(l)
	}
	if c.Mode != nil {
		k.SetLimitMode(mode)
	}
	return nil
}

// apiNames are the management API's JSON names of the settings partition's grammar names
// otherwise.
var apiNames = map[string]string{"busy": "serverBusy", "continuation-every": "continuationEvery", "offline-for": "offlineFor"}

// settingField is a refusal of partition's grammar as a 400 naming the JSON field.
func settingField(err error) *controlError {
	var se *partition.SettingError
	if !errors.As(err, &se) {
		return &controlError{status: http.StatusBadRequest, message: err.Error()}
	}
	field := se.Setting
	if name, ok := apiNames[field]; ok {
		field = name
	}
	problem := strings.NewReplacer("busy + timeout", "serverBusy + timeout").Replace(se.Problem)
	return badField(field, "%s", problem)
}

// kinds lists every operation kind, in order.
func kinds() []partition.Kind {
	var ks []partition.Kind
	for k := partition.Kind(0); k <= partition.KindQueryTables; k++ {
		ks = append(ks, k)
	}
	return ks
}

func (s *Server) faultsView(k runtimeSettings) any {
	f := k.Faults()
	v := faultsJSON{Seed: f.Seed, ServerBusy: f.ServerBusy, Timeout: f.Timeout, Kinds: []string{},
		ContinuationEvery: f.ContinuationEvery, OfflineOnSplit: f.OfflineOnSplit, OfflineFor: f.OfflineFor.String(),
		TableDeleteDelay: s.db.TableDeleteDelay().String()}
	set := f.Kinds
	if set&partition.AllKinds == 0 {
		set = partition.AllKinds
	}
	for _, k := range kinds() {
		if set.Has(k) {
			v.Kinds = append(v.Kinds, k.String())
		}
	}
	if f.OfflineFor <= 0 {
		v.OfflineFor = partition.DefaultOfflineFor.String()
	}
	return v
}

// changeFaults applies a PUT of the faults. tableDeleteDelay is the whole server's, every
// account's tables', so only the administrator, steering every account, may change it.
func (s *Server) changeFaults(k runtimeSettings, body []byte) *controlError {
	var c faultsChange
	if err := decodeControl(body, &c); err != nil {
		return err
	}
	var deleteDelay time.Duration
	if c.TableDeleteDelay != nil {
		d, err := time.ParseDuration(*c.TableDeleteDelay)
		if err != nil || d < 0 {
			return badField("tableDeleteDelay", "must be a duration such as \"40s\", or \"0s\" for none; not %q", *c.TableDeleteDelay)
		}
		if k != runtimeSettings(s.db) {
			return &controlError{status: http.StatusForbidden, field: "tableDeleteDelay", message: "tableDeleteDelay: is the whole " +
				"server's, every account's tables'; sign in as " + AdminUser + " with the admin key, without ?account=, to change it"}
		}
		deleteDelay = d
	}
	f := k.Faults()
	if c.Seed != nil {
		f.Seed = *c.Seed
	}
	if c.ServerBusy != nil {
		f.ServerBusy = *c.ServerBusy
	}
	if c.Timeout != nil {
		f.Timeout = *c.Timeout
	}
	if c.Kinds != nil {
		set, err := partition.ParseKinds(*c.Kinds...)
		if err != nil {
			return settingField(err)
		}
		f.Kinds = set // empty: every kind
	}
	if c.ContinuationEvery != nil {
		f.ContinuationEvery = *c.ContinuationEvery
	}
	if c.OfflineOnSplit != nil {
		f.OfflineOnSplit = *c.OfflineOnSplit
	}
	if c.OfflineFor != nil {
		d, err := partition.ParseOfflineFor(*c.OfflineFor)
		if err != nil {
			return settingField(err)
		}
		f.OfflineFor = d
	}
	if err := f.Check(); err != nil {
		var se *partition.SettingError
		// The sum of the two probabilities is the fault of the one this PUT changed.
		if errors.As(err, &se) && se.Setting == "timeout" && c.Timeout == nil && strings.Contains(se.Problem, "together") {
			se.Setting = "busy"
		}
		return settingField(err)
	}
	k.SetFaults(f)
	if c.TableDeleteDelay != nil {
		s.db.SetTableDeleteDelay(deleteDelay)
	}
	return nil
}

func queriesView(k runtimeSettings) any {
	return queriesJSON{ForbidFullScans: k.ForbidFullScans(), BoundaryContinuations: k.BoundaryContinuations()}
}

func changeQueries(k runtimeSettings, body []byte) *controlError {
	var c queriesChange
	if err := decodeControl(body, &c); err != nil {
		return err
	}
	if c.ForbidFullScans != nil {
		k.SetForbidFullScans(*c.ForbidFullScans)
	}
	if c.BoundaryContinuations != nil {
		k.SetBoundaryContinuations(*c.BoundaryContinuations)
	}
	return nil
}

// readControlBody reads a PUT's body, at most maxControlBody bytes.
func readControlBody(w http.ResponseWriter, r *http.Request) ([]byte, *controlError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxControlBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &controlError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("the body exceeds %d bytes", maxControlBody)}
	case err != nil:
		return nil, &controlError{status: http.StatusBadRequest, message: "reading the body: " + err.Error()}
	}
	return body, nil
}

// decodeControl decodes a JSON object into v, whose fields are the only ones allowed, and
// words what is wrong with it in terms of the JSON a caller sent.
func decodeControl(body []byte, v any) *controlError {
	if len(strings.TrimSpace(string(body))) == 0 {
		return &controlError{status: http.StatusBadRequest, message: "the body is empty; send a JSON object with the fields to change"}
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return badField(typeErr.Field, "must be %s, not a JSON %s", jsonTypeName(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &typeErr):
		return &controlError{status: http.StatusBadRequest, message: "the body must be a JSON object, not a JSON " + typeErr.Value}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, qerr := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		if qerr != nil {
			name = strings.TrimPrefix(err.Error(), "json: unknown field ")
		}
		return badField(name, "is not a field of this resource; it has %s", fieldNames(v))
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return &controlError{status: http.StatusBadRequest, message: "the body is not valid JSON: " + err.Error()}
	}
	return &controlError{status: http.StatusBadRequest, message: "the body is not one JSON object: " + err.Error()}
}

// jsonTypeName names a Go kind the way a JSON user would.
func jsonTypeName(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "float"), strings.HasPrefix(goKind, "int"):
		return "a number"
	case strings.HasPrefix(goKind, "uint"):
		return "a non-negative integer"
	case goKind == "bool":
		return "true or false"
	case goKind == "string":
		return "a string"
	case goKind == "slice":
		return "an array"
	}
	return "a " + goKind
}

// fieldNames lists the JSON fields of the change struct v points to.
func fieldNames(v any) string {
	var names []string
	switch v.(type) {
	case *limitsChange:
		names = []string{"mode", "partitionRate", "partitionBurst", "accountRate", "accountBurst"}
	case *faultsChange:
		names = []string{"seed", "serverBusy", "timeout", "kinds", "continuationEvery", "offlineOnSplit", "offlineFor"}
	case *queriesChange:
		names = []string{"forbidFullScans", "boundaryContinuations"}
	}
	return strings.Join(names, ", ")
}

func writeControlJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeControlError(w, &controlError{status: http.StatusInternalServerError, message: err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeControlError answers {"error": message, "field": field}.
func writeControlError(w http.ResponseWriter, e *controlError) {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
		Field string `json:"field,omitempty"`
	}{e.message, e.field})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(e.status)
	_, _ = w.Write(append(b, '\n'))
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeControlError(w, &controlError{status: http.StatusMethodNotAllowed,
		message: fmt.Sprintf("%s is not allowed here; use %s", r.Method, allow)})
}
