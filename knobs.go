package tabula

import "github.com/tabuladb/tabula/partition"

// SetLimitMode switches what the rate limits do (see Options.Limits) while the DB runs.
func (db *DB) SetLimitMode(m partition.LimitMode) { db.service.SetLimitMode(m) }

// SetFaults replaces the fault injection (see Options.Faults) while the DB runs; the zero
// Faults turns it off.
func (db *DB) SetFaults(f partition.Faults) { db.service.SetFaults(f) }

// SetRates replaces the rate limits' rates and bursts (see Options.Limits) while the DB runs;
// l.Mode and l.MaxKeys are ignored (SetLimitMode switches the mode), and zero fields take their
// defaults. Every bucket starts full under the new rates.
func (db *DB) SetRates(l partition.Limits) { db.service.SetRates(l) }

// Limits returns the rate limits in force, defaults filled in.
func (db *DB) Limits() partition.Limits { return db.service.Limits() }

// Faults returns the fault injection in force (see Options.Faults).
func (db *DB) Faults() partition.Faults { return db.service.Faults() }

// SetForbidFullScans switches Options.ForbidFullScans while the DB runs; queries prepared from
// then on follow it.
func (db *DB) SetForbidFullScans(on bool) { db.forbidFullScans.Store(on) }

// ForbidFullScans reports whether queries the service would run as full table scans fail.
func (db *DB) ForbidFullScans() bool { return db.forbidFullScans.Load() }

// SetBoundaryContinuations switches Options.BoundaryContinuations while the DB runs; query
// pages started from then on follow it.
func (db *DB) SetBoundaryContinuations(on bool) { db.boundaries.Store(on) }

// BoundaryContinuations reports whether query pages end where their scan crosses into another
// range partition.
func (db *DB) BoundaryContinuations() bool { return db.boundaries.Load() }
