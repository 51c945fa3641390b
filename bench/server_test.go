package bench

import (
	"net/http/httptest"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
	"github.com/tabuladb/tabula/tabulatest"
)

// The server benchmarks run the same operations three ways in one process: engine (the
// library called directly), inprocess (the official Go SDK through tabulatest's in-process
// transport: the whole protocol, no socket) and loopback (the SDK over HTTP on 127.0.0.1).
// Each reports entities/s; the SDK runs also report cost-x, how many times the engine's
// time per entity the protocol path takes, when engine ran before them in the process.

// protocolPaths are the two ways an SDK client reaches a server.
var protocolPaths = []string{"inprocess", "loopback"}

// sdkClient returns an aztables service client for db, served by a server.Server over
// path. The server lives until the benchmark ends.
func sdkClient(b *testing.B, db *tabula.DB, path string) *aztables.ServiceClient {
	b.Helper()
	h, err := server.New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	acct := server.DevelopmentAccount()
	opts := &aztables.ClientOptions{}
	endpoint := "http://tabula.invalid"
	if path == "inprocess" {
		opts.ClientOptions = azcore.ClientOptions{Transport: tabulatest.NewTransport(h)}
	} else {
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		endpoint = srv.URL
	}
	svc, err := aztables.NewServiceClientFromConnectionString(acct.ConnectionString(endpoint), opts)
	if err != nil {
		b.Fatal(err)
	}
	return svc
}

// ratio remembers the engine's rate so that the protocol runs can report their cost.
type ratio struct{ engine float64 }

func (r *ratio) reportEngine(b *testing.B, n int) {
	reportRate(b, n, "entities/s")
	if s := b.Elapsed().Seconds(); s > 0 {
		r.engine = float64(n) / s
	}
}

func (r *ratio) reportProtocol(b *testing.B, n int) {
	reportRate(b, n, "entities/s")
	if s := b.Elapsed().Seconds(); s > 0 && r.engine > 0 && n > 0 {
		b.ReportMetric(r.engine/(float64(n)/s), "cost-x")
	}
}

// BenchmarkServerInsert inserts single entities, each its own request, appending to one
// partition (BenchmarkInsert through the protocol).
func BenchmarkServerInsert(b *testing.B) {
	w := NewWorkload(shape, 21)
	pk, prefix := w.GUID(), w.RowPrefix(1, 1)
	var r ratio
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		t := createTable(b, openEngine(b, b.TempDir()), "Insert")
		n := 0
		for b.Loop() {
			if _, err := t.Insert(ctx, w.Entity(pk, RowKey(prefix, n), n)); err != nil {
				b.Fatal(err)
			}
			n++
		}
		r.reportEngine(b, n)
	})
	for _, path := range protocolPaths {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			db := openEngine(b, b.TempDir())
			createTable(b, db, "Insert")
			c := sdkClient(b, db, path).NewClient("Insert")
			n := 0
			for b.Loop() {
				if _, err := c.AddEntity(ctx, server.EncodeEntity(w.Entity(pk, RowKey(prefix, n), n)), nil); err != nil {
					b.Fatal(err)
				}
				n++
			}
			r.reportProtocol(b, n)
		})
	}
}

// BenchmarkServerPointGet reads single entities by key in a random order over the 100,000
// entities of the read fixture (BenchmarkPointGet through the protocol).
func BenchmarkServerPointGet(b *testing.B) {
	fx := sharedFixture(b)
	var r ratio
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			k := fx.keys[n%len(fx.keys)]
			e, err := fx.spread.Get(ctx, k.pk, k.rk)
			if err != nil {
				b.Fatal(err)
			}
			sinkEntity = e
			n++
		}
		r.reportEngine(b, n)
	})
	for _, path := range protocolPaths {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			c := sdkClient(b, fx.engine, path).NewClient("Spread")
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
	}
}

// BenchmarkServerTransaction inserts 100 new entities into one partition per entity group
// transaction (BenchmarkBatchInsert size=100 through the protocol).
func BenchmarkServerTransaction(b *testing.B) {
	const size = tabula.MaxTransactionActions
	w := NewWorkload(shape, 22)
	pk, prefix := w.GUID(), w.RowPrefix(1, 1)
	var r ratio
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		t := createTable(b, openEngine(b, b.TempDir()), "Batch")
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
		r.reportEngine(b, n)
	})
	for _, path := range protocolPaths {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			db := openEngine(b, b.TempDir())
			createTable(b, db, "Batch")
			c := sdkClient(b, db, path).NewClient("Batch")
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
	}
}

// BenchmarkServerPage reads one 1,000-entity page of a 100,000-entity partition per
// operation, following continuation tokens and starting over at the partition's end
// (BenchmarkPartitionScan through the protocol).
func BenchmarkServerPage(b *testing.B) {
	fx := sharedFixture(b)
	filter := partitionFilter(fx.deepPK)
	var r ratio
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		q := tabula.Query{Filter: filter}
		n := 0
		for b.Loop() {
			page, err := fx.deep.Query(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			n += len(page.Entities)
			q.Continuation = page.Continuation
		}
		r.reportEngine(b, n)
	})
	for _, path := range protocolPaths {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			c := sdkClient(b, fx.engine, path).NewClient("Deep")
			opts := &aztables.ListEntitiesOptions{Filter: to.Ptr(filter)}
			pager := c.NewListEntitiesPager(opts)
			n := 0
			for b.Loop() {
				if !pager.More() {
					pager = c.NewListEntitiesPager(opts)
				}
				page, err := pager.NextPage(ctx)
				if err != nil {
					b.Fatal(err)
				}
				n += len(page.Entities)
			}
			r.reportProtocol(b, n)
		})
	}
}
