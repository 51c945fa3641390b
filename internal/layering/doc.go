// Package layering holds no code: its test writes the module's package layering down as
// rules on imports, so that a leak between layers fails CI instead of growing unnoticed
// (pebble's lint tests do the same). The layering, top to bottom:
//
//	cmd/tabula, examples, bench         programs and benchmarks; nothing imports them
//	server, remote, tabulatest          the wire, the client, the fakes for tests
//	github.com/tabuladb/tabula (root)   the engine, composing the three below
//	odata, partition, storage           the filter language, ranges and rates, Badger
//	internal/...                        machinery shared by several of the above
//
// A package imports only from the layers below its own, and the three leaves import none
// of each other. Two packages under internal/ hold only tests of the module as a whole and
// import nothing of it: this one, and internal/apisurface, which lists what each package
// exports. A new package takes its place by a line in the test's rules; a new import
// that breaks one fails `go test ./...`, naming the two packages and the rule's reason.
package layering
