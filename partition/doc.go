// Package partition simulates the parts of Azure Table storage that are about
// load rather than data: range partitions and their statistics, the load
// balancer that splits hot ranges and merges cold ones, the scalability
// targets as token buckets, and fault injection. It knows nothing of storage.
//
// # Who uses what
//
// Users name this package for three things, which they hand to or get from
// the root package (tabula.Options, DB.SetFaults, DB.HeatReport) and which
// server's management API and cmd/tabula's flags speak:
//
//   - the limits: Limits, LimitMode, and Balance for the load balancer;
//   - the faults: Faults, aimed at operation kinds with Kind and KindSet;
//   - the heat report: Report, with its text (WriteTo) and SVG (WriteSVG)
//     forms.
//
// The rest is the engine half, for the root package alone, which tells the
// simulated service what happens, once per operation, and gets a Decision
// back: NewService and its Options, Service, Table, Decision with its
// FaultKind and Cause. A user never needs them.
//
// # Model
//
// The service keeps each table sorted by PartitionKey and serves it as range
// partitions, [low, next low), each on one server. Ranges that stay hot for
// minutes are split, cold neighbours are merged. Keys that only grow (the
// append-only pattern) always land in the last range, so splitting never
// spreads them; random keys spread after a few splits. A Service holds one
// Table per table with a B-tree of such ranges, ordered as the service
// orders keys (by UTF-16 code units, which differs from Go's string order
// for supplementary characters).
//
// Limits count entities as the service does: each entity inserted, updated,
// deleted or scanned is one, per PartitionKey (2,000/s) and per account
// (20,000/s). A Service hosts several storage accounts, each with its own
// account bucket: Table(account, name) gives a table of the account named.
// One account's load never throttles another's. LimitObserve, the default,
// refuses nothing and counts what LimitEnforce would refuse.
//
// All time comes from Options.Now and all randomness from seeds, so a test
// can run minutes of simulated load on a fake clock and get the same result
// every time.
//
// # Per operation
//
// The root package holds t := svc.Table(account, name) per table, then:
//
//	insert/update/merge/upsert/delete:  d := t.Admit(pk, KindInsert, 1)   // ... the matching Kind
//	                                    if d.Fault != FaultNone { return error for d.Fault, d.Message() }
//	                                    ... write ...
//	                                    t.RecordWrite(pk, +1, size)          // insert; delete: -1, -size; replace: 0, size delta
//	get (point query):                  t.Admit(pk, KindGet, 1)
//	batch of N on one PartitionKey:     t.Admit(pk, KindBatch, N), then one RecordWrite per changed entity (or summed)
//	query page starting at pk:          t.Admit(pk, KindQuery, 0)            // refused while the bucket is in debt
//	                                    ... scan, ending the page when t.MustEndPage(scanned)
//	                                        or, if boundaries are honoured, at t.NextBoundary(pk) ...
//	                                    t.Charge(pk, scanned)                // after the fact, may go into debt
//	create/delete/query tables:         svc.AdmitTableOp(account, KindCreateTable)
//
// Service.Report returns the heat report a stress test examines. Each storage account also has
// limits, fault injection and statistics of its own (the Account… methods: SetAccountFaults,
// AccountReport …), which the service-wide setters change for every account at once.
package partition
