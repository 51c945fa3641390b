package server

import (
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tabuladb/tabula"
)

// The console's data view reads a table's entities through the management API, beyond the
// service (whose own query API needs a signed request a browser cannot make without code):
//
//	GET api/data?table=T[&filter=F][&top=N][&nextPartitionKey=…&nextRowKey=…]
//	    one page of at most N (1 to 1,000; default 50) entities of table T matching $filter F,
//	    each property with its EDM type, and the continuation of the next page
//	GET api/data/export?table=T[&filter=F]
//	    every entity of T matching F as an interchange file (tabula.DB.Export), a download
//
// Both read the signed-in account's tables alone; the administrator names a table
// account/table, or the account with ?account=NAME, as for api/explain. A page is one query
// page, charged to the limits as any query is; the export streams the table and stops when
// the client goes away.

// defaultDataTop and maxDataTop bound a page of the data view.
const (
	defaultDataTop = 50
	maxDataTop     = 1000
)

// dataPageJSON is the answer of api/data.
type dataPageJSON struct {
	Table    string           `json:"table"`
	Filter   string           `json:"filter"`
	Entities []dataEntityJSON `json:"entities"`
	// Next is the continuation of the next page; absent on the last page.
	Next *dataNextJSON `json:"next,omitempty"`
}

type dataNextJSON struct {
	NextPartitionKey string `json:"nextPartitionKey"`
	NextRowKey       string `json:"nextRowKey"`
}

// dataEntityJSON is an entity as the data view shows it: its keys, Timestamp and ETag, and
// its properties in name order, each with its EDM type and its value as text (the
// service's text form: Int64 in full, Binary in base64, Double's NaN and infinities by name).
type dataEntityJSON struct {
	PartitionKey string             `json:"partitionKey"`
	RowKey       string             `json:"rowKey"`
	Timestamp    string             `json:"timestamp"`
	ETag         string             `json:"etag"`
	Properties   []dataPropertyJSON `json:"properties"`
}

type dataPropertyJSON struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// serveData serves api/data and api/data/export; path is what follows "api/".
func (s *Server) serveData(w http.ResponseWriter, r *http.Request, who principal, path string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeReportError(w, http.StatusMethodNotAllowed, "tabula: "+path+" is read-only; use GET")
		return
	}
	if path != "data" && path != "data/export" {
		http.NotFound(w, r)
		return
	}
	_, e, cerr := s.scopeOf(r, who)
	if cerr != nil {
		writeReportError(w, cerr.status, "tabula: "+cerr.message)
		return
	}
	q := r.URL.Query()
	name, filter := q.Get("table"), q.Get("filter")
	if name == "" {
		writeReportError(w, http.StatusBadRequest, "tabula: table: name the table with table=<name>")
		return
	}
	if e == nil {
		account, table, ok := strings.Cut(name, "/")
		if e = s.dir.get(account); !ok || e == nil {
			writeReportError(w, http.StatusBadRequest, "tabula: table: as the administrator, name the table account/table, or the account with account=<name>")
			return
		}
		name = table
	}
	t := e.ns.Table(name)
	// The filter is parsed before anything runs, so a bad one is a 400 naming its fault.
	if _, err := t.Explain(tabula.Query{Filter: filter}); err != nil {
		writeReportError(w, statusOf(err), err.Error())
		return
	}
	if path == "data/export" {
		s.exportData(w, r, e, name, filter)
		return
	}
	top := defaultDataTop
	if v := q.Get("top"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDataTop {
			writeReportError(w, http.StatusBadRequest, "tabula: top: "+strconv.Quote(v)+" must be a whole number from 1 to "+strconv.Itoa(maxDataTop))
			return
		}
		top = n
	}
	page, err := t.Query(r.Context(), tabula.Query{Filter: filter, Top: top,
		Continuation: tabula.Continuation{NextPartitionKey: q.Get("nextPartitionKey"), NextRowKey: q.Get("nextRowKey")}})
	if err != nil {
		writeReportError(w, statusOf(err), serviceError(err).Error())
		return
	}
	out := dataPageJSON{Table: name, Filter: filter, Entities: make([]dataEntityJSON, 0, len(page.Entities))}
	for _, ent := range page.Entities {
		out.Entities = append(out.Entities, dataEntity(ent))
	}
	if !page.Continuation.IsZero() {
		out.Next = &dataNextJSON{page.Continuation.NextPartitionKey, page.Continuation.NextRowKey}
	}
	writeReportJSON(w, http.StatusOK, out)
}

// exportData writes table name of account e, the entities matching filter, as an
// interchange file. The table must exist; once the file has started, an error (or the
// client going away, which cancels the request's context) ends it without its trailer,
// which the format's readers report as a file cut short.
func (s *Server) exportData(w http.ResponseWriter, r *http.Request, e *accountEntry, name, filter string) {
	if _, err := e.ns.Table(name).Query(r.Context(), tabula.Query{Top: 1}); errors.Is(err, tabula.ErrTableNotFound) {
		writeReportError(w, http.StatusNotFound, err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Content-Disposition", `attachment; filename="`+name+`.jsonl"`) // table names are letters and digits
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	_ = s.db.Export(r.Context(), w, &tabula.ExportOptions{
		Namespaces: []string{e.ns.Name()}, Tables: []string{name}, Filter: filter})
}

// dataEntity converts an entity to the data view's form.
func dataEntity(ent tabula.Entity) dataEntityJSON {
	out := dataEntityJSON{PartitionKey: ent.PartitionKey, RowKey: ent.RowKey,
		Timestamp: tabula.DateTime(ent.Timestamp).String(), ETag: string(ent.ETag),
		Properties: make([]dataPropertyJSON, 0, len(ent.Properties))}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for k := range ent.Properties {
			if !yield(k) {
				return
			}
		}
	}) {
		v := ent.Properties[n]
		if v == nil {
			continue
		}
		out.Properties = append(out.Properties, dataPropertyJSON{Name: n, Type: string(v.EdmType()), Value: propertyText(v)})
	}
	return out
}

// propertyText is a value's text, as the service's JSON writes it (without quotes).
func propertyText(v tabula.Property) string {
	switch v := v.(type) {
	case tabula.String:
		return string(v)
	case tabula.Binary:
		return base64.StdEncoding.EncodeToString(v)
	case tabula.Boolean:
		return strconv.FormatBool(bool(v))
	case tabula.DateTime:
		return v.String()
	case tabula.Double:
		f := float64(v)
		switch {
		case math.IsNaN(f):
			return "NaN"
		case math.IsInf(f, 1):
			return "Infinity"
		case math.IsInf(f, -1):
			return "-Infinity"
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case tabula.Guid:
		return v.String()
	case tabula.Int32:
		return strconv.FormatInt(int64(v), 10)
	case tabula.Int64:
		return strconv.FormatInt(int64(v), 10)
	}
	return ""
}
