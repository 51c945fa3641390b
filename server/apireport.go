package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/partition"
)

// serveReport serves the read-only views of the load: the heat report and query plans.
//
//	GET api/report                       the heat report as JSON (reportJSON)
//	GET api/report?format=svg            the same as an SVG heat map (partition.Report.WriteSVG)
//	GET api/explain?table=T&filter=F     the plan of $filter F on table T, run for one page
//
// Neither writes data; explain reads one page, charged to the limits as any query is. Both
// see the signed-in account's tables alone; the administrator's see every account's (each
// table named account/table), or one account's with ?account=NAME.
func (s *Server) serveReport(w http.ResponseWriter, r *http.Request, who principal, path string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeReportError(w, http.StatusMethodNotAllowed, "tabula: "+path+" is read-only; use GET")
		return
	}
	k, e, cerr := s.scopeOf(r, who)
	if cerr != nil {
		writeReportError(w, cerr.status, "tabula: "+cerr.message)
		return
	}
	switch path {
	case "report":
		rep := k.HeatReport()
		if e == nil {
			s.nameByAccount(&rep)
		}
		switch r.URL.Query().Get("format") {
		case "", "json":
			writeReportJSON(w, http.StatusOK, newReportJSON(rep))
		case "svg":
			w.Header().Set("Content-Type", "image/svg+xml")
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			_ = rep.WriteSVG(w)
		default:
			writeReportError(w, http.StatusBadRequest, "tabula: format must be json or svg")
		}
	case "explain":
		s.explain(w, r, e)
	default:
		http.NotFound(w, r)
	}
}

// reportJSON is the heat report as the console reads it: partition.Report with lowerCamel
// names, each range and key marked hot (at or above the per-PartitionKey target) and
// coloured on the heat map's scale, and the throttling history's interval.
type reportJSON struct {
	At                     time.Time   `json:"at"`
	Mode                   string      `json:"mode"`
	PartitionRate          float64     `json:"partitionRate"`
	AccountRate            float64     `json:"accountRate"`
	Entities               int64       `json:"entities"`
	Bytes                  int64       `json:"bytes"`
	Rate                   float64     `json:"rate"`
	Offered                int64       `json:"offered"`
	ThrottledPartition     int64       `json:"throttledPartition"`
	ThrottledAccount       int64       `json:"throttledAccount"`
	HistoryIntervalSeconds float64     `json:"historyIntervalSeconds"`
	PartitionHistory       []int64     `json:"throttledPartitionHistory"`
	AccountHistory         []int64     `json:"throttledAccountHistory"`
	Tables                 []tableJSON `json:"tables"`
}

type tableJSON struct {
	Name      string      `json:"name"`
	Entities  int64       `json:"entities"`
	Bytes     int64       `json:"bytes"`
	Rate      float64     `json:"rate"`
	Offered   int64       `json:"offered"`
	Throttled int64       `json:"throttled"`
	Splits    int64       `json:"splits"`
	Merges    int64       `json:"merges"`
	Ranges    []rangeJSON `json:"ranges"`
	HotKeys   []keyJSON   `json:"hotKeys"`
}

type rangeJSON struct {
	Low       string  `json:"low"`
	High      string  `json:"high"` // "" for the last range: no upper bound
	Entities  int64   `json:"entities"`
	Bytes     int64   `json:"bytes"`
	Rate      float64 `json:"rate"`
	Offered   int64   `json:"offered"`
	Throttled int64   `json:"throttled"`
	Splits    int     `json:"splits"`
	Offline   bool    `json:"offline"`
	Hot       bool    `json:"hot"`
	Color     string  `json:"color"`
	History   []int64 `json:"throttledHistory"`
}

type keyJSON struct {
	PartitionKey string  `json:"partitionKey"`
	Rate         float64 `json:"rate"`
	Offered      int64   `json:"offered"`
	Throttled    int64   `json:"throttled"`
	Hot          bool    `json:"hot"`
}

func newReportJSON(rep partition.Report) reportJSON {
	out := reportJSON{
		At: rep.At.UTC(), Mode: rep.Mode.String(), PartitionRate: rep.PartitionRate, AccountRate: rep.AccountRate,
		Entities: rep.Entities, Bytes: rep.Bytes, Rate: rep.Rate, Offered: rep.Offered,
		ThrottledPartition: rep.ThrottledPartition, ThrottledAccount: rep.ThrottledAccount,
		HistoryIntervalSeconds: partition.HistoryInterval.Seconds(),
		PartitionHistory:       orZeros(rep.ThrottledPartitionHistory),
		AccountHistory:         orZeros(rep.ThrottledAccountHistory),
		Tables:                 make([]tableJSON, 0, len(rep.Tables)),
	}
	for _, t := range rep.Tables {
		tj := tableJSON{
			Name: t.Name, Entities: t.Entities, Bytes: t.Bytes, Rate: t.Rate, Offered: t.Offered,
			Throttled: t.Throttled, Splits: t.Splits, Merges: t.Merges,
			Ranges: make([]rangeJSON, 0, len(t.Ranges)), HotKeys: make([]keyJSON, 0, len(t.HotKeys)),
		}
		for _, rg := range t.Ranges {
			ratio := 0.0
			if rep.PartitionRate > 0 {
				ratio = rg.Rate / rep.PartitionRate
			}
			tj.Ranges = append(tj.Ranges, rangeJSON{
				Low: rg.Low, High: rg.High, Entities: rg.Entities, Bytes: rg.Bytes, Rate: rg.Rate,
				Offered: rg.Offered, Throttled: rg.Throttled, Splits: rg.Splits, Offline: rg.Offline,
				Hot: rep.Hot(rg.Rate), Color: partition.HeatColor(ratio), History: orZeros(rg.ThrottledHistory),
			})
		}
		for _, k := range t.HotKeys {
			tj.HotKeys = append(tj.HotKeys, keyJSON{
				PartitionKey: k.PartitionKey, Rate: k.Rate, Offered: k.Offered, Throttled: k.Throttled, Hot: rep.Hot(k.Rate),
			})
		}
		out.Tables = append(out.Tables, tj)
	}
	return out
}

// orZeros gives clients a series of HistoryLen values always, zeros for no throttling.
func orZeros(s []int64) []int64 {
	if s == nil {
		return make([]int64, partition.HistoryLen)
	}
	return s
}

// explainJSON is the answer of api/explain.
type explainJSON struct {
	Table  string `json:"table"`
	Filter string `json:"filter"`
	// Plan is how Tabula runs the filter; Service how the Azure Table service would.
	Plan    string `json:"plan"`
	Service string `json:"service"`
	// Detail is the plan with the key ranges it scans, as tabula.Plan.String writes them.
	Detail string `json:"detail"`
	// Scanned and Returned count the first page's entities examined and returned, and Ratio
	// is their quotient (examined per entity returned; 0 when none were returned). More is
	// set when the query goes on past that page.
	Scanned  int     `json:"scanned"`
	Returned int     `json:"returned"`
	Ratio    float64 `json:"ratio"`
	More     bool    `json:"more"`
	// RunError is why the page could not run (such as ServerBusy under enforced limits),
	// when the filter could still be planned.
	RunError string `json:"runError,omitempty"`
}

// explain plans the filter on a table of the account e: each account is its own namespace of
// tables, as on the service. With e nil (the administrator, naming no account), the table is
// named account/table, as the administrator's report names it.
func (s *Server) explain(w http.ResponseWriter, r *http.Request, e *accountEntry) {
	q := r.URL.Query()
	name, filter := q.Get("table"), q.Get("filter")
	if name == "" {
		writeReportError(w, http.StatusBadRequest, "tabula: explain needs table=<name>")
		return
	}
	if e == nil {
		account, table, ok := strings.Cut(name, "/")
		if e = s.dir.get(account); !ok || e == nil {
			writeReportError(w, http.StatusBadRequest, "tabula: as the administrator, name the table account/table, or the account with account=<name>")
			return
		}
		name = table
	}
	t := e.ns.Table(name)
	plan, err := t.Explain(tabula.Query{Filter: filter})
	if err != nil {
		writeReportError(w, statusOf(err), err.Error())
		return
	}
	detail, _, _ := strings.Cut(plan.String(), " (service:") // the kind and its key ranges
	out := explainJSON{Table: name, Filter: filter, Plan: plan.Kind.String(), Service: plan.ServiceKind.String(), Detail: detail}
	page, err := t.Query(r.Context(), tabula.Query{Filter: filter})
	switch {
	case errors.Is(err, tabula.ErrTableNotFound):
		writeReportError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		out.RunError = serviceError(err).Error()
	default:
		out.Scanned, out.Returned, out.More = page.Plan.Scanned, page.Plan.Returned, !page.Continuation.IsZero()
		if out.Returned > 0 {
			out.Ratio = float64(out.Scanned) / float64(out.Returned)
		}
	}
	writeReportJSON(w, http.StatusOK, out)
}

// statusOf is the HTTP status a tabula error carries, 400 for other errors.
func statusOf(err error) int {
	var te *tabula.Error
	if errors.As(err, &te) && te.StatusCode > 0 {
		return te.StatusCode
	}
	return http.StatusBadRequest
}

func writeReportJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeReportError(w http.ResponseWriter, status int, msg string) {
	writeReportJSON(w, status, map[string]string{"error": msg})
}

// nameByAccount names each table of a report of every account account/table, by the account
// whose namespace holds it; tables of no account the server serves now (a namespace left out
// of Options.Accounts, or of an account being deleted) are left out.
func (s *Server) nameByAccount(rep *partition.Report) {
	owner := map[string]string{} // namespace → account
	for _, a := range s.Accounts() {
		if e := s.dir.get(a.Name); e != nil {
			owner[e.ns.Name()] = a.Name
		}
	}
	tables := rep.Tables[:0]
	for _, t := range rep.Tables {
		account, ok := owner[t.Account]
		if !ok {
			continue
		}
		if t.Account != "" {
			t.Name = strings.TrimPrefix(t.Name, t.Account+"/")
		}
		t.Name = account + "/" + t.Name
		tables = append(tables, t)
	}
	rep.Tables = tables
}
