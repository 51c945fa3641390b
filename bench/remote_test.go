package bench

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

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
	b.Run("engine", func(b *testing.B) { getLoop(b, fx.spread, fx.keys, r.reportEngine) })
	b.Run("sdk", func(b *testing.B) {
		sdkGetLoop(b, sdkClient(b, fx.engine, "inprocess").NewClient("Spread"), fx.keys, r.reportProtocol)
	})
	b.Run("remote", func(b *testing.B) { getLoop(b, remoteTable(b, fx.engine, "Spread"), fx.keys, r.reportProtocol) })
}

// BenchmarkRemoteInsert inserts single entities, appending to one partition.
func BenchmarkRemoteInsert(b *testing.B) {
	w := NewWorkload(shape, 31)
	pk, prefix := w.GUID(), w.RowPrefix(1, 1)
	var r ratio
	b.Run("engine", func(b *testing.B) {
		insertLoop(b, createTable(b, openEngine(b, b.TempDir()), "Insert"), w, pk, prefix, r.reportEngine)
	})
	b.Run("sdk", func(b *testing.B) {
		db := openEngine(b, b.TempDir())
		createTable(b, db, "Insert")
		sdkInsertLoop(b, sdkClient(b, db, "inprocess").NewClient("Insert"), w, pk, prefix, r.reportProtocol)
	})
	b.Run("remote", func(b *testing.B) {
		db := openEngine(b, b.TempDir())
		createTable(b, db, "Insert")
		insertLoop(b, remoteTable(b, db, "Insert"), w, pk, prefix, r.reportProtocol)
	})
}

// BenchmarkRemoteTransaction inserts 100 new entities into one partition per entity group
// transaction.
func BenchmarkRemoteTransaction(b *testing.B) {
	const size = tabula.MaxTransactionActions
	w := NewWorkload(shape, 32)
	pk, prefix := w.GUID(), w.RowPrefix(1, 1)
	var r ratio
	b.Run("engine", func(b *testing.B) {
		transactionLoop(b, createTable(b, openEngine(b, b.TempDir()), "Batch"), w, pk, prefix, size, r.reportEngine)
	})
	b.Run("sdk", func(b *testing.B) {
		db := openEngine(b, b.TempDir())
		createTable(b, db, "Batch")
		sdkTransactionLoop(b, sdkClient(b, db, "inprocess").NewClient("Batch"), w, pk, prefix, size, r.reportProtocol)
	})
	b.Run("remote", func(b *testing.B) {
		db := openEngine(b, b.TempDir())
		createTable(b, db, "Batch")
		transactionLoop(b, remoteTable(b, db, "Batch"), w, pk, prefix, size, r.reportProtocol)
	})
}

// BenchmarkRemotePage reads one 1,000-entity page of a 100,000-entity partition per
// operation, following continuation tokens and starting over at the partition's end.
func BenchmarkRemotePage(b *testing.B) {
	fx := sharedFixture(b)
	var r ratio
	b.Run("engine", func(b *testing.B) { pageLoop(b, fx.deep, fx.deepPK, r.reportEngine) })
	b.Run("sdk", func(b *testing.B) {
		sdkPageLoop(b, sdkClient(b, fx.engine, "inprocess").NewClient("Deep"), fx.deepPK, r.reportProtocol)
	})
	b.Run("remote", func(b *testing.B) { pageLoop(b, remoteTable(b, fx.engine, "Deep"), fx.deepPK, r.reportProtocol) })
}
