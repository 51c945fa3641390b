package tabula

import (
	"context"
	"errors"
	"unsafe"

	"github.com/tabuladb/tabula/internal/entitysink"
	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
)

// The typed reads of any other TableAPI: the call goes through the table's Get or QueryAll
// with a jsonSink in the context, which package remote fills with the JSON entities of its
// responses, decoded straight into Ts (internal/entitysink). A table that does not (a
// wrapper, or any TableAPI but remote's) returns Entities, which are converted as EntityAs
// does.

// errSinkStopped ends a query whose reader stopped, or was given the misfit that ends it.
var errSinkStopped = errors.New("tabula: typed read stopped")

// jsonSink is an entitysink.Sink decoding into Ts.
type jsonSink[T any] struct {
	c     *structCodec
	table any
	items []T
	open  bool // the last item is the entity being decoded
	// misfit is the property of the entity being decoded that did not fit its field, of the
	// least name (the one EntityAs, going in name order, would report).
	misfit     error
	misfitName string
	err        error // the first misfit of the response, in items[errAt]
	errAt      int
	// yield is QueryAs's, nil for GetAs.
	yield func(T, error) bool
}

func (s *jsonSink[T]) For(table any) bool { return table == s.table }

func (s *jsonSink[T]) item() unsafe.Pointer {
	if !s.open {
		var zero T
		s.items, s.open, s.misfit = append(s.items, zero), true, nil
	}
	return unsafe.Pointer(&s.items[len(s.items)-1])
}

func (s *jsonSink[T]) Property(name string, v odata.Value) {
	base := s.item()
	if err := s.c.put(base, name, v, -1); err != nil && (s.misfit == nil || name < s.misfitName) {
		s.misfit, s.misfitName = err, name
	}
}

func (s *jsonSink[T]) Entity(e *wire.Entity) {
	base := s.item()
	s.c.setKeys(base, e.PartitionKey, e.RowKey)
	s.c.setVersion(base, e.Timestamp, ETag(e.ETag))
	if s.misfit != nil && s.err == nil {
		s.err, s.errAt = s.misfit, len(s.items)-1
	}
	s.open = false
}

func (s *jsonSink[T]) End() error {
	if s.yield == nil {
		return nil
	}
	items := s.items
	if s.err != nil {
		items = items[:s.errAt]
	}
	for i := range items {
		if !s.yield(items[i], nil) {
			return errSinkStopped
		}
	}
	if s.err != nil {
		var zero T
		s.yield(zero, s.err)
		return errSinkStopped
	}
	clear(s.items)
	s.items = s.items[:0]
	return nil
}

// getVia is GetAs on a TableAPI other than the embedded table.
func getVia[T any](ctx context.Context, c *structCodec, t TableAPI, pk, rk string) (T, error) {
	var v T
	s := &jsonSink[T]{c: c, table: t}
	e, err := t.Get(entitysink.With(ctx, s), pk, rk)
	switch {
	case err != nil:
	case len(s.items) > 0: // the table decoded into the sink
		v, err = s.items[0], s.err
	default:
		err = c.fill(unsafe.Pointer(&v), &e)
	}
	return v, err
}

// queryVia is QueryAs on a TableAPI other than the embedded table.
func queryVia[T any](ctx context.Context, c *structCodec, t TableAPI, q Query, yield func(T, error) bool) {
	s := &jsonSink[T]{c: c, table: t, yield: yield}
	for e, err := range t.QueryAll(entitysink.With(ctx, s), q) {
		if err == errSinkStopped {
			return
		}
		var v T
		if err == nil {
			err = c.fill(unsafe.Pointer(&v), &e)
		}
		if !yield(v, err) || err != nil {
			return
		}
	}
}
