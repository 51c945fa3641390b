// Package entitysink hands the entities of a service's response from package remote to the
// typed reads of package tabula (GetAs, QueryAs), which decode them straight into structs
// rather than into a tabula.Entity's map of boxed values. The hand-off rides on the
// context, so that it adds no API: remote uses a sink only when the typed read was called
// on the remote table itself (Sink.For), not through a TableAPI wrapping it, whose own
// behaviour then holds.
package entitysink

import (
	"context"

	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
)

// Sink takes the entities of a response in place of the Entities a read returns.
type Sink interface {
	// For reports whether the sink was set for table: the table a typed read was given.
	For(table any) bool
	// Property takes one property of the entity being decoded (wire.DecodeEntityTo's
	// visit).
	Property(name string, v odata.Value)
	// Entity ends the entity whose properties came last, with its keys, Timestamp and ETag.
	Entity(e *wire.Entity)
	// End is called once a response's entities are all decoded: the sink hands them on. Its
	// error ends the read, and is returned as it is.
	End() error
}

type key struct{}

// With returns ctx carrying s.
func With(ctx context.Context, s Sink) context.Context { return context.WithValue(ctx, key{}, s) }

// From returns the sink ctx carries for table; nil when it carries none, or one for another
// table.
func From(ctx context.Context, table any) Sink {
	s, _ := ctx.Value(key{}).(Sink)
	if s == nil || !s.For(table) {
		return nil
	}
	return s
}
