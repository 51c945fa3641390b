package bench

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/remote"
	"github.com/tabuladb/tabula/server"
	"github.com/tabuladb/tabula/tabulatest"
)

// The remote benchmarks run the operations of the server benchmarks a third way: through
// package remote, Tabula's own API over the protocol, against tabula serve in process (no
// socket). Each runs engine (the embedded table, the figure code moving to remote starts
// from), sdk (the bare aztables client, the protocol's floor) and remote, and reports
// entities/s and, for sdk and remote, cost-x against engine in the same run. The gap
// between sdk and remote is what the remote backend adds: encoding tabula.Entity, keeping
// each response whole to read its types and ETags, and decoding it again.

// remoteTable returns the named table of db through package remote, served in process.
func remoteTable(b *testing.B, db *tabula.DB, name string) tabula.TableAPI {
	b.Helper()
	h, err := server.New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	c, err := remote.Dial(server.DevelopmentAccount().ConnectionString("http://tabula.invalid"),
		&remote.Options{ClientOptions: azcore.ClientOptions{Transport: tabulatest.NewTransport(h)}})
	if err != nil {
		b.Fatal(err)
	}
	return c.Table(name)
}

// BenchmarkRemotePointGet reads single entities by key over the read fixture.
func BenchmarkRemotePointGet(b *testing.B) {
	fx := sharedFixture(b)
	var r ratio
	get := func(b *testing.B, t tabula.TableAPI, report func(*testing.B, int)) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			k := fx.keys[n%len(fx.keys)]
			e, err := t.Get(ctx, k.pk, k.rk)
			if err != nil {
				b.Fatal(err)
			}
			sinkEntity = e
			n++
		}
		report(b, n)
	}
	b.Run("engine", func(b *testing.B) { get(b, fx.spread, r.reportEngine) })
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		c := sdkClient(b, fx.engine, "inprocess").NewClient("Spread")
		n := 0
		for b.Loop() {
			k := fx.keys[n%len(fx.keys)]
			if _, err := c.GetEntity(ctx, k.pk, k.rk, nil); err != nil {
				b.Fatal(err)
			}
			n++
		}
		r.reportProtocol(b, n)
	})
	b.Run("remote", func(b *testing.B) { get(b, remoteTable(b, fx.engine, "Spread"), r.reportProtocol) })
}

// BenchmarkRemoteInsert inserts single entities, appending to one partition.
func BenchmarkRemoteInsert(b *testing.B) {
	w := NewWorkload(shape, 31)
	pk, prefix := w.GUID(), w.RowPrefix(1, 1)
	var r ratio
	insert := func(b *testing.B, t tabula.TableAPI, report func(*testing.B, int)) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if _, err := t.Insert(ctx, w.Entity(pk, RowKey(prefix, n), n)); err != nil {
				b.Fatal(err)
			}
			n++
		}
		report(b, n)
	}
	b.Run("engine", func(b *testing.B) {
		insert(b, createTable(b, openEngine(b, b.TempDir()), "Insert"), r.reportEngine)
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		db := openEngine(b, b.TempDir())
		createTable(b, db, "Insert")
		c := sdkClient(b, db, "inprocess").NewClient("Insert")
		n := 0
		for b.Loop() {
			if _, err := c.AddEntity(ctx, server.EncodeEntity(w.Entity(pk, RowKey(prefix, n), n)), nil); err != nil {
				b.Fatal(err)
			}
			n++
		}
		r.reportProtocol(b, n)
	})
	b.Run("remote", func(b *testing.B) {
		db := openEngine(b, b.TempDir())
		createTable(b, db, "Insert")
		insert(b, remoteTable(b, db, "Insert"), r.reportProtocol)
	})
}

// BenchmarkRemoteTransaction inserts 100 new entities into one partition per entity group
// transaction.
func BenchmarkRemoteTransaction(b *testing.B) {
	const size = tabula.MaxTransactionActions
	w := NewWorkload(shape, 32)
	pk, prefix := w.GUID(), w.RowPrefix(1, 1)
	var r ratio
	submit := func(b *testing.B, t tabula.TableAPI, report func(*testing.B, int)) {
		b.ReportAllocs()
		actions := make([]tabula.Action, size)
		n := 0
		for b.Loop() {
			for i := range actions {
				actions[i] = tabula.InsertAction(w.Entity(pk, RowKey(prefix, n+i), n+i))
			}
			if _, err := t.SubmitTransaction(ctx, actions); err != nil {
				b.Fatal(err)
			}
			n += size
		}
		report(b, n)
	}
	b.Run("engine", func(b *testing.B) {
		submit(b, createTable(b, openEngine(b, b.TempDir()), "Batch"), r.reportEngine)
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		db := openEngine(b, b.TempDir())
		createTable(b, db, "Batch")
		c := sdkClient(b, db, "inprocess").NewClient("Batch")
		actions := make([]aztables.TransactionAction, size)
		n := 0
		for b.Loop() {
			for i := range actions {
				actions[i] = aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
					Entity: server.EncodeEntity(w.Entity(pk, RowKey(prefix, n+i), n+i))}
			}
			if _, err := c.SubmitTransaction(ctx, actions, nil); err != nil {
				b.Fatal(err)
			}
			n += size
		}
		r.reportProtocol(b, n)
	})
	b.Run("remote", func(b *testing.B) {
		db := openEngine(b, b.TempDir())
		createTable(b, db, "Batch")
		submit(b, remoteTable(b, db, "Batch"), r.reportProtocol)
	})
}

// BenchmarkRemotePage reads one 1,000-entity page of a 100,000-entity partition per
// operation, following continuation tokens and starting over at the partition's end.
func BenchmarkRemotePage(b *testing.B) {
	fx := sharedFixture(b)
	var r ratio
	page := func(b *testing.B, t tabula.TableAPI, report func(*testing.B, int)) {
		b.ReportAllocs()
		q := tabula.Query{Filter: partitionFilter(fx.deepPK)}
		n := 0
		for b.Loop() {
			p, err := t.Query(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			n += len(p.Entities)
			q.Continuation = p.Continuation
		}
		report(b, n)
	}
	b.Run("engine", func(b *testing.B) { page(b, fx.deep, r.reportEngine) })
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		c := sdkClient(b, fx.engine, "inprocess").NewClient("Deep")
		opts := &aztables.ListEntitiesOptions{Filter: to.Ptr(partitionFilter(fx.deepPK))}
		pager := c.NewListEntitiesPager(opts)
		n := 0
		for b.Loop() {
			if !pager.More() {
				pager = c.NewListEntitiesPager(opts)
			}
			p, err := pager.NextPage(ctx)
			if err != nil {
				b.Fatal(err)
			}
			n += len(p.Entities)
		}
		r.reportProtocol(b, n)
	})
	b.Run("remote", func(b *testing.B) { page(b, remoteTable(b, fx.engine, "Deep"), r.reportProtocol) })
}
