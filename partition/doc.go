// Package partition simulates the parts of Azure Table storage that are about
// load rather than data: range partitions and their statistics, the load
// balancer that splits hot ranges and merges cold ones, the scalability
// targets as token buckets, fault injection, and the exponential backoff the
// service's documentation recommends. It knows nothing of storage: the root
// package tells it what happens, once per operation, and it answers with a
// Decision.
//
// # Model
//
// The service keeps each table sorted by PartitionKey and serves it as range
// partitions, [low, next low), each on one server. Ranges that stay hot for
// minutes are split, cold neighbours are merged. Keys that only grow (the
// append-only pattern) always land in the last range, so splitting never
// spreads them; random keys spread after a few splits. An Account holds one
// Table per table with a B-tree of such ranges, ordered as the service
// orders keys (by UTF-16 code units, which differs from Go's string order
// for supplementary characters).
//
// Limits count entities as the service does: each entity inserted, updated,
// deleted or scanned is one, per PartitionKey (2,000/s) and per account
// (20,000/s). An Account can serve several storage accounts, each with its
// own account bucket: AccountTable(account, name) gives a table of the
// account named, Table(name) one of the default account, "". One account's
// load never throttles another's. LimitObserve, the default, refuses nothing
// and counts what LimitEnforce would refuse.
//
// All time comes from Options.Now and all randomness from seeds, so a test
// can run minutes of simulated load on a fake clock and get the same result
// every time.
//
// # Per operation
//
// Hold t := acct.Table(name) (or acct.AccountTable(account, name)) per table, then:
//
//	insert/update/merge/upsert/delete:  d := t.Admit(pk, KindInsert, 1)   // ... the matching Kind
//	                                    if !d.OK() { return error for d.Fault, d.Message() }
//	                                    ... write ...
//	                                    t.RecordWrite(pk, +1, size)          // insert; delete: -1, -size; replace: 0, size delta
//	get (point query):                  t.Admit(pk, KindGet, 1)
//	batch of N on one PartitionKey:     t.Admit(pk, KindBatch, N), then one RecordWrite per changed entity (or summed)
//	query page starting at pk:          t.Admit(pk, KindQuery, 0)            // refused while the bucket is in debt
//	                                    ... scan, ending the page when acct.MustEndPage(scanned)
//	                                        or, if boundaries are honoured, at t.NextBoundary(pk) ...
//	                                    t.Charge(pk, scanned)                // after the fact, may go into debt
//	create/delete/query tables:         acct.AdmitTableOp(KindCreateTable)
//
// Retry(ctx, Backoff{}, fn, isServerBusyOrTimeout) retries with the backoff of "Design a scalable
// partitioning strategy for Azure Table storage". Account.Report returns the heat report a stress
// test examines.
package partition
