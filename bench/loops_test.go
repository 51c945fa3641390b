package bench

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/server"
)

// The timed loops the server and remote benchmarks share. Each runs one operation per
// b.Loop iteration, through Tabula's API (the engine or package remote) or the bare SDK
// client, and hands the count of entities to report, so that the paths compared in one
// benchmark time the very same work.

// insertLoop inserts single entities through t, appending to partition pk.
func insertLoop(b *testing.B, t tabula.TableAPI, w *Workload, pk, prefix string, report func(*testing.B, int)) {
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

// sdkInsertLoop is insertLoop through the SDK client c.
func sdkInsertLoop(b *testing.B, c *aztables.Client, w *Workload, pk, prefix string, report func(*testing.B, int)) {
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := c.AddEntity(ctx, server.EncodeEntity(w.Entity(pk, RowKey(prefix, n), n)), nil); err != nil {
			b.Fatal(err)
		}
		n++
	}
	report(b, n)
}

// transactionLoop inserts size new entities into partition pk per entity group transaction
// through t.
func transactionLoop(b *testing.B, t tabula.TableAPI, w *Workload, pk, prefix string, size int, report func(*testing.B, int)) {
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

// sdkTransactionLoop is transactionLoop through the SDK client c.
func sdkTransactionLoop(b *testing.B, c *aztables.Client, w *Workload, pk, prefix string, size int, report func(*testing.B, int)) {
	b.ReportAllocs()
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
	report(b, n)
}

// sdkGetLoop reads single entities by key through the SDK client c, cycling through keys.
func sdkGetLoop(b *testing.B, c *aztables.Client, keys []keyPair, report func(*testing.B, int)) {
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		k := keys[n%len(keys)]
		if _, err := c.GetEntity(ctx, k.pk, k.rk, nil); err != nil {
			b.Fatal(err)
		}
		n++
	}
	report(b, n)
}

// pageLoop reads one page of partition pk per operation through t, following continuation
// tokens and starting over at the partition's end.
func pageLoop(b *testing.B, t tabula.TableAPI, pk string, report func(*testing.B, int)) {
	b.ReportAllocs()
	q := tabula.Query{Filter: partitionFilter(pk)}
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

// sdkPageLoop is pageLoop through the SDK client c's pager.
func sdkPageLoop(b *testing.B, c *aztables.Client, pk string, report func(*testing.B, int)) {
	b.ReportAllocs()
	opts := &aztables.ListEntitiesOptions{Filter: to.Ptr(partitionFilter(pk))}
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
	report(b, n)
}

// getLoop reads single entities by key through t, cycling through keys.
func getLoop(b *testing.B, t tabula.TableAPI, keys []keyPair, report func(*testing.B, int)) {
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		k := keys[n%len(keys)]
		e, err := t.Get(ctx, k.pk, k.rk)
		if err != nil {
			b.Fatal(err)
		}
		sinkEntity = e
		n++
	}
	report(b, n)
}
