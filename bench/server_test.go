package bench

import (
	"net/http/httptest"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
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
		insertLoop(b, createTable(b, openEngine(b, b.TempDir()), "Insert"), w, pk, prefix, r.reportEngine)
	})
	for _, path := range protocolPaths {
		b.Run(path, func(b *testing.B) {
			db := openEngine(b, b.TempDir())
			createTable(b, db, "Insert")
			sdkInsertLoop(b, sdkClient(b, db, path).NewClient("Insert"), w, pk, prefix, r.reportProtocol)
		})
	}
}

// BenchmarkServerPointGet reads single entities by key in a random order over the 100,000
// entities of the read fixture (BenchmarkPointGet through the protocol).
func BenchmarkServerPointGet(b *testing.B) {
	fx := sharedFixture(b)
	var r ratio
	b.Run("engine", func(b *testing.B) { getLoop(b, fx.spread, fx.keys, r.reportEngine) })
	for _, path := range protocolPaths {
		b.Run(path, func(b *testing.B) {
			sdkGetLoop(b, sdkClient(b, fx.engine, path).NewClient("Spread"), fx.keys, r.reportProtocol)
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
		transactionLoop(b, createTable(b, openEngine(b, b.TempDir()), "Batch"), w, pk, prefix, size, r.reportEngine)
	})
	for _, path := range protocolPaths {
		b.Run(path, func(b *testing.B) {
			db := openEngine(b, b.TempDir())
			createTable(b, db, "Batch")
			sdkTransactionLoop(b, sdkClient(b, db, path).NewClient("Batch"), w, pk, prefix, size, r.reportProtocol)
		})
	}
}

// BenchmarkServerPage reads one 1,000-entity page of a 100,000-entity partition per
// operation, following continuation tokens and starting over at the partition's end
// (BenchmarkPartitionScan through the protocol).
func BenchmarkServerPage(b *testing.B) {
	fx := sharedFixture(b)
	var r ratio
	b.Run("engine", func(b *testing.B) { pageLoop(b, fx.deep, fx.deepPK, r.reportEngine) })
	for _, path := range protocolPaths {
		b.Run(path, func(b *testing.B) {
			sdkPageLoop(b, sdkClient(b, fx.engine, path).NewClient("Deep"), fx.deepPK, r.reportProtocol)
		})
	}
}
