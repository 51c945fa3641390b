package server

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/wire"
)

// The JSON of entities is the wire codec's (internal/wire); this file is the edge where the
// engine's tabula.Entity becomes a wire.Entity.

// EncodeEntity returns the JSON body an SDK sends for e: the keys, then every non-nil
// property in name order, each annotated only where the service needs the annotation to
// know the type (Int64, DateTime, Guid, Binary, and Doubles that are NaN or infinite).
// Timestamp and ETag are left out, as the service ignores them on input. It lets a test
// that holds tabula.Entity values hand them to an SDK that takes JSON.
func EncodeEntity(e tabula.Entity) []byte {
	we := wire.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Properties: appendWireProperties(nil, e.Properties)}
	return wire.AppendBody(nil, &we, false)
}

// entityWriter writes entities at one metadata level for one table.
type entityWriter struct {
	level   level
	base    string // scheme://host/account, the root of odata.* links
	account string
	table   string
	// selected is the $select list, nil for every property. The keys and Timestamp are only
	// written when selected; odata.etag always is.
	selected []string
	// selectEcho is the $select text odata.metadata repeats (see selectEcho).
	selectEcho string

	w     wire.Writer     // made from the fields above at the first entity
	ready bool            // w is made
	props []wire.Property // scratch for each entity's properties
}

// entitySize estimates the bytes of an entity's JSON at most metadata levels, so that
// its buffer is allocated once rather than grown as it is written.
func entitySize(e *tabula.Entity) int {
	n := 256 + len(e.PartitionKey) + len(e.RowKey)
	for name, v := range e.Properties {
		n += 2*len(name) + 48
		switch v := v.(type) {
		case tabula.String:
			n += len(v) + len(v)/16
		case tabula.Binary:
			n += len(v)*4/3 + 4
		}
	}
	return n
}

// appendEntity writes one entity object. A single entity (not an element of a feed) starts
// with odata.metadata.
func (w *entityWriter) appendEntity(b []byte, e *tabula.Entity, single bool) []byte {
	if b == nil {
		b = make([]byte, 0, entitySize(e)+len(w.base)+len(w.table))
	}
	if !w.ready {
		w.w = wire.Writer{Level: w.level.wire(), Base: w.base, Account: w.account, Table: w.table, Selected: w.selected, SelectText: w.selectEcho}
		w.ready = true
	}
	w.props = appendWireProperties(w.props[:0], e.Properties)
	we := wire.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Timestamp: e.Timestamp, ETag: string(e.ETag), Properties: w.props}
	return w.w.AppendEntity(b, &we, single)
}

// entitiesPerCheck is how many entities appendEntities encodes between two looks at its
// context: often enough that a page of 1,000 stops within a small fraction of its cost,
// rarely enough that the look costs nothing.
const entitiesPerCheck = 64

// appendEntities writes the entities of a feed, comma-separated, and stops with ctx's error
// when ctx ends (the client went away) rather than encoding for no one.
func (w *entityWriter) appendEntities(ctx context.Context, b []byte, entities []tabula.Entity) ([]byte, error) {
	for i := range entities {
		if i%entitiesPerCheck == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = w.appendEntity(b, &entities[i], false)
	}
	return b, nil
}

// appendWireProperties appends the non-nil properties of props as the wire codec's.
func appendWireProperties(ps []wire.Property, props tabula.Properties) []wire.Property {
	for name, v := range props {
		if v != nil {
			ps = append(ps, wire.Property{Name: name, Value: tabula.ValueOf(v)})
		}
	}
	return ps
}

// formatDate is the HTTP Date header, as the service sends it.
func formatDate(t time.Time) string {
	sec := t.Unix()
	if d := lastDate.Load(); d != nil && d.sec == sec {
		return d.text
	}
	text := t.UTC().Format(http1123)
	lastDate.Store(&dateStamp{sec: sec, text: text})
	return text
}

// lastDate holds the last second formatted by formatDate: every response carries a Date
// header, and all those within one second read the same.
var lastDate atomic.Pointer[dateStamp]

type dateStamp struct {
	sec  int64
	text string
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"
