package tabula

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/tabuladb/tabula/partition"
)

// The settings that change while the DB runs: the simulated service's limits and faults, and the query switches, for
// the whole DB (every namespace at once) or for one namespace (the REST front end's storage
// account) alone. A namespace has the DB's settings until it is given its own; a DB-wide
// setter then changes every namespace's again.

// SetLimitMode switches what the rate limits do (see Options.Limits) while the DB runs, in
// every namespace.
func (db *DB) SetLimitMode(m partition.LimitMode) { db.service.SetLimitMode(m) }

// SetFaults replaces the fault injection (see Options.Faults) while the DB runs, in every
// namespace; the zero Faults turns it off.
func (db *DB) SetFaults(f partition.Faults) { db.service.SetFaults(f) }

// SetRates replaces the rate limits' rates and bursts (see Options.Limits) while the DB runs,
// in every namespace; l.Mode and l.MaxKeys are ignored (SetLimitMode switches the mode), and
// zero fields take their defaults. Every bucket starts full under the new rates.
func (db *DB) SetRates(l partition.Limits) { db.service.SetRates(l) }

// Limits returns the rate limits the DB was given or last set to, defaults filled in.
func (db *DB) Limits() partition.Limits { return db.service.Limits() }

// Faults returns the fault injection the DB was given or last set to (see Options.Faults).
func (db *DB) Faults() partition.Faults { return db.service.Faults() }

// querySwitches are the query switches of a namespace, or the DB's.
type querySwitches struct {
	forbidFullScans atomic.Bool // see SetForbidFullScans
	boundaries      atomic.Bool // see SetBoundaryContinuations
}

// switches returns the query switches of the namespace called ns.
func (db *DB) switches(ns string) *querySwitches {
	if v, ok := db.nsQueries.Load(ns); ok {
		return v.(*querySwitches)
	}
	return &db.queries
}

// namespaceSwitches returns the namespace's own query switches, made from the DB's on first
// use. Called with db.settingsMu held.
func (db *DB) namespaceSwitches(ns string) *querySwitches {
	if v, ok := db.nsQueries.Load(ns); ok {
		return v.(*querySwitches)
	}
	s := &querySwitches{}
	s.forbidFullScans.Store(db.queries.forbidFullScans.Load())
	s.boundaries.Store(db.queries.boundaries.Load())
	db.nsQueries.Store(ns, s)
	return s
}

// setSwitch sets one query switch, of the namespace called ns or (all) of every namespace.
func (db *DB) setSwitch(ns string, all bool, on bool, which func(*querySwitches) *atomic.Bool) {
	db.settingsMu.Lock()
	defer db.settingsMu.Unlock()
	if all {
		which(&db.queries).Store(on)
		db.nsQueries.Range(func(_, v any) bool { which(v.(*querySwitches)).Store(on); return true })
		return
	}
	which(db.namespaceSwitches(ns)).Store(on)
}

func forbidSwitch(s *querySwitches) *atomic.Bool     { return &s.forbidFullScans }
func boundariesSwitch(s *querySwitches) *atomic.Bool { return &s.boundaries }

// SetForbidFullScans switches Options.ForbidFullScans while the DB runs, in every namespace;
// queries prepared from then on follow it.
func (db *DB) SetForbidFullScans(on bool) { db.setSwitch("", true, on, forbidSwitch) }

// ForbidFullScans reports whether queries the service would run as full table scans fail, in
// the namespaces not given their own setting.
func (db *DB) ForbidFullScans() bool { return db.queries.forbidFullScans.Load() }

// SetBoundaryContinuations switches Options.BoundaryContinuations while the DB runs, in every
// namespace; query pages started from then on follow it.
func (db *DB) SetBoundaryContinuations(on bool) { db.setSwitch("", true, on, boundariesSwitch) }

// BoundaryContinuations reports whether query pages end where their scan crosses into another
// range partition, in the namespaces not given their own setting.
func (db *DB) BoundaryContinuations() bool { return db.queries.boundaries.Load() }

// SetLimitMode switches what the rate limits do for the namespace's tables alone.
func (n *Namespace) SetLimitMode(m partition.LimitMode) { n.db.service.SetAccountLimitMode(n.name, m) }

// SetRates replaces the rates and bursts of the namespace's limits alone, as DB.SetRates
// does for every namespace: the namespace's buckets start full under the new rates.
func (n *Namespace) SetRates(l partition.Limits) { n.db.service.SetAccountRates(n.name, l) }

// Limits returns the rate limits in force for the namespace.
func (n *Namespace) Limits() partition.Limits { return n.db.service.AccountLimits(n.name) }

// SetFaults replaces the fault injection of the namespace's operations alone.
func (n *Namespace) SetFaults(f partition.Faults) { n.db.service.SetAccountFaults(n.name, f) }

// Faults returns the fault injection in force for the namespace.
func (n *Namespace) Faults() partition.Faults { return n.db.service.AccountFaults(n.name) }

// SetForbidFullScans switches Options.ForbidFullScans for the namespace's queries alone.
func (n *Namespace) SetForbidFullScans(on bool) { n.db.setSwitch(n.name, false, on, forbidSwitch) }

// ForbidFullScans reports whether the namespace's queries that the service would run as
// full table scans fail.
func (n *Namespace) ForbidFullScans() bool { return n.db.switches(n.name).forbidFullScans.Load() }

// SetBoundaryContinuations switches Options.BoundaryContinuations for the namespace's queries
// alone.
func (n *Namespace) SetBoundaryContinuations(on bool) {
	n.db.setSwitch(n.name, false, on, boundariesSwitch)
}

// BoundaryContinuations reports whether the namespace's query pages end at range boundaries.
func (n *Namespace) BoundaryContinuations() bool { return n.db.switches(n.name).boundaries.Load() }

// HeatReport is DB.HeatReport for the namespace's tables alone, under its limits, each
// named as in the namespace.
func (n *Namespace) HeatReport() partition.Report {
	_ = n.db.resolveAll(context.Background(), &n.name) // as DB.HeatReport
	rep := n.db.service.AccountReport(n.name)
	if n.name != "" {
		for i := range rep.Tables {
			rep.Tables[i].Name = strings.TrimPrefix(rep.Tables[i].Name, n.name+"/")
		}
	}
	return rep
}

// ResetStats is DB.ResetStats for the namespace's tables alone.
func (n *Namespace) ResetStats() { n.db.service.ResetAccountStats(n.name) }
