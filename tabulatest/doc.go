// Package tabulatest runs Tabula as a fake Azure Table service inside Go tests, so that
// code written against the official SDK (github.com/Azure/azure-sdk-for-go/sdk/data/aztables)
// is tested against the service's behaviour without Azurite, a container or hand-written
// mocks.
//
// NewServer is the way in. It starts an in-memory Tabula behind the REST protocol on a
// loopback port and closes it when the test ends. Point a client at it with its connection
// string:
//
//	srv := tabulatest.NewServer(t, nil)
//	svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), nil)
//
// Or skip the network: Transport hands requests straight to the server's handler, and its
// Do method is what azcore's policy.Transporter asks for (this package does not import
// the SDK, so tests that do not use it do not pay for it):
//
//	opts := &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.Transport()}}
//	svc, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), opts)
//
// Options after the engine's choose the rest: InProcess for a server with no listener at
// all, for that second way only (NewInProcess(t, opts) is short for it), and a Fixture for a
// server that starts on a copy of one. Start does what NewServer does for code without a
// testing.TB, such as an Example, and leaves closing the server to it.
//
// The tabula.Options passed in reach the engine unchanged, so a test can inject faults,
// enforce the service's rate limits, end query pages at partition boundaries or forbid
// full scans, and watch its client cope; Server.DB is the engine itself, for arranging
// data and checking outcomes directly.
//
// # Fixtures
//
// A Fixture is a state tests start from, built once per package and copied for each test in
// microseconds whatever it holds, so that parallel tests each write to a copy of their own:
// Seed builds one with a function run on a fresh database, Tables from a Go value (tables of
// entities), File from an interchange file or a hand-written fixture (tabula.DB.Import), FromSnapshot from a
// tabula.Snapshot taken elsewhere. Pass it to NewServer, NewServer(t, nil, movies), for a
// server on a copy; its Open gives the engine alone. BenchmarkFixtureParallel
// (bench/snapshot_test.go) runs 100 tests side by side on copies of a 10,000-entity fixture
// in 37 ms together.
//
// # What a server costs
//
// Little enough for one per test, t.Parallel() and all (see Example_parallelTests). The
// database behind a server is Tabula's in-memory store, an ordered tree that grows with
// the data and nothing else; measured on a shared 2-core machine (bench/fresh_test.go):
//
//   - InProcess: about 13 µs and 3 KB allocated to start and close; an open server holds
//     about 2 KB of heap before its data.
//   - Without InProcess, a loopback listener: one socket and a goroutine serving it.
//   - Data: about 1.2 KB of heap per 1 KiB entity (BenchmarkMemoryFootprint).
//
// It holds whatever the service accepts, 1 MiB entities in any script and 4 MiB
// transactions included, with the same atomic and serializable operations as a database
// on disk.
package tabulatest
