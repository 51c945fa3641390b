package tabula

import (
	"cmp"
	"context"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// Export writes the database's tables to w as an interchange file: every namespace, or
// those opts names, with their service properties and each table's access policies. The
// whole database is read in one consistent view, so the file holds it as it stood at one
// moment (as DB.Snapshot would), while the database goes on serving writes. An export
// resumed (opts.Resume) reads the database as it is when resumed.
func (db *DB) Export(ctx context.Context, w io.Writer, opts *ExportOptions) error {
	if opts == nil {
		opts = &ExportOptions{}
	}
	ctx, stop := db.untilClosed(ctx)
	defer stop()
	err := db.export(ctx, w, opts)
	return closedDuring(ctx, err)
}

func (db *DB) export(ctx context.Context, w io.Writer, opts *ExportOptions) error {
	x, err := newExporter(w, opts)
	if err != nil {
		return err
	}
	var pred *odata.Predicate
	if opts.Filter != "" {
		expr, err := parseFilter(opts.Filter)
		if err != nil {
			return err
		}
		pred = odata.Compile(expr)
	}
	err = db.view(ctx, func(tx *storage.Txn) error {
		namespaces := opts.Namespaces
		if namespaces == nil {
			var err error
			if namespaces, err = namespacesIn(tx); err != nil {
				return err
			}
		}
		for _, name := range namespaces {
			if err := db.exportNamespace(ctx, tx, x, name, pred); err != nil {
				return err
			}
		}
		return nil
	})
	if x.failed != nil {
		return x.failed
	}
	if err != nil {
		return err
	}
	return x.close()
}

// exportNamespace writes a namespace's service properties and tables, read in tx.
func (db *DB) exportNamespace(ctx context.Context, tx *storage.Txn, x *exporter, name string, pred *odata.Predicate) error {
	var props []byte
	if _, err := tx.Get(propertiesKey(name), func(v []byte) error {
		props = append([]byte{}, v...)
		return nil
	}); err != nil {
		return err
	}
	if props != nil && x.resuming == nil {
		if err := x.enc.Account(name, props); err != nil {
			return x.fail(err)
		}
	}
	// Listing the tables is the service's Query Tables, as it was through Namespace.Tables.
	if err := admit(db.service.AdmitTableOp(name, partition.KindQueryTables), "list tables"); err != nil {
		return x.fail(err)
	}
	tables, err := catalogTables(tx, name)
	if err != nil {
		return err
	}
	for _, rec := range tables {
		if !x.wanted(name, rec.Name) {
			continue
		}
		policies := func() ([]AccessPolicy, error) { return readAccessPolicies(tx, rec.ID) }
		entities := func(afterPK, afterRK *string) error {
			return x.scan(ctx, tx, rec.ID, pred, afterPK, afterRK)
		}
		if err := x.table(name, rec.Name, policies, entities); err != nil {
			return err
		}
	}
	return nil
}

// exporter writes one export.
type exporter struct {
	enc      *wire.Encoder
	opts     *ExportOptions
	every    int64
	resuming *Progress // until the table to resume in is reached
	p        Progress
	scratch  wire.Entity
	failed   error // see fail
}

func newExporter(w io.Writer, opts *ExportOptions) (*exporter, error) {
	if opts.Filter != "" {
		if _, err := parseFilter(opts.Filter); err != nil {
			return nil, err
		}
	}
	x := &exporter{opts: opts, every: int64(cmp.Or(opts.ProgressEvery, 10_000))}
	if r := opts.Resume; r != nil {
		x.resuming, x.p = r, *r
		x.enc = wire.ResumeEncoder(w, wire.EncoderState{Tables: r.Tables, Entities: r.Entities, InTable: r.InTable,
			Account: r.Account, Table: r.Table, TableEntities: r.TableEntities})
	} else {
		x.enc = wire.NewEncoder(w)
	}
	return x, nil
}

func (x *exporter) wanted(account, table string) bool {
	if x.opts.Tables != nil && !slices.ContainsFunc(x.opts.Tables, func(t string) bool { return strings.EqualFold(t, table) }) {
		return false
	}
	if r := x.resuming; r != nil {
		if r.Account == account && strings.EqualFold(r.Table, table) {
			x.resuming = nil
			return r.InTable // a table done already is not written again
		}
		return false
	}
	return true
}

// table writes a table: its header line with the access policies policies reads (unless
// the export resumes inside it), the entities that entities writes, after a key when
// resuming (nil: from the start), and its end line.
func (x *exporter) table(account, name string, policies func() ([]AccessPolicy, error), entities func(afterPK, afterRK *string) error) error {
	var afterPK, afterRK *string
	if x.p.InTable && x.p.Account == account && strings.EqualFold(x.p.Table, name) {
		// Resuming inside this table: its header is written already.
		if x.p.TableEntities > 0 {
			afterPK, afterRK = &x.p.PartitionKey, &x.p.RowKey
		}
	} else {
		ps, err := policies()
		if err != nil {
			return err
		}
		if err := x.enc.BeginTable(account, name, interchangePolicies(ps)); err != nil {
			return x.fail(err)
		}
		x.p.Account, x.p.Table, x.p.InTable, x.p.TableEntities = account, name, true, 0
		x.p.PartitionKey, x.p.RowKey = "", ""
	}
	if err := entities(afterPK, afterRK); err != nil {
		return err
	}
	if err := x.enc.EndTable(); err != nil {
		return x.fail(err)
	}
	x.p.Tables++
	x.p.InTable = false
	if x.opts.Progress != nil {
		return x.fail(x.progress())
	}
	return nil
}

// counted counts an entity written, with its keys (which may be views of a scan's bytes),
// and calls Progress when it is time to.
func (x *exporter) counted(pk, rk string) error {
	x.p.Entities++
	x.p.TableEntities++
	if x.p.TableEntities%x.every == 0 && x.opts.Progress != nil {
		x.p.PartitionKey, x.p.RowKey = strings.Clone(pk), strings.Clone(rk)
		return x.fail(x.progress())
	}
	return nil
}

// entity writes an entity the generic way.
func (x *exporter) entity(e *wire.Entity) error {
	if err := x.enc.Entity(e); err != nil {
		return x.fail(err)
	}
	return x.counted(e.PartitionKey, e.RowKey)
}

// fail records err, when there is one, as the export's own: the writer's, Progress's, the
// context's or the service's refusal, returned as it is rather than as the store's.
func (x *exporter) fail(err error) error {
	if err != nil && x.failed == nil {
		x.failed = err
	}
	return err
}

func (x *exporter) progress() error {
	if err := x.enc.Flush(); err != nil {
		return err
	}
	return x.opts.Progress(x.p)
}

// query reads a table through its TableAPI, after a key when resuming.
func (x *exporter) query(ctx context.Context, t TableAPI, afterPK, afterRK *string) error {
	filter := x.opts.Filter
	if afterPK != nil {
		after := Or(Gt("PartitionKey", String(*afterPK)), And(Eq("PartitionKey", String(*afterPK)), Gt("RowKey", String(*afterRK)))).String()
		if filter != "" {
			after = "(" + filter + ") and (" + after + ")"
		}
		filter = after
	}
	e := &x.scratch
	for ent, err := range t.QueryAll(ctx, Query{Filter: filter}) {
		if err != nil {
			return err
		}
		e.PartitionKey, e.RowKey, e.Timestamp = ent.PartitionKey, ent.RowKey, ent.Timestamp
		e.Properties = e.Properties[:0]
		for name, v := range ent.Properties {
			if v != nil {
				e.Properties = append(e.Properties, wire.Property{Name: name, Value: ValueOf(v)})
			}
		}
		if err := x.entity(e); err != nil {
			return err
		}
	}
	return nil
}

func (x *exporter) close() error {
	if x.resuming != nil {
		return ErrInvalidInput.WithDetail("the export to resume was in table %q of account %q, which is gone", x.resuming.Table, x.resuming.Account)
	}
	return x.enc.Close()
}

// scan writes the entities of table id in tx, after a key when resuming: each transcoded
// straight from its stored bytes (see lineTranscoder), or, with a filter or for a record
// the transcoder leaves alone, decoded and written as a wire.Entity.
func (x *exporter) scan(ctx context.Context, tx *storage.Txn, id uint64, pred *odata.Predicate, afterPK, afterRK *string) error {
	lower, upper := tableBounds(id)
	if afterPK != nil {
		lower = storage.SuccessorOf(entityKey(id, *afterPK, *afterRK))
	}
	it := tx.Scan(lower, upper)
	defer it.Close()
	var (
		tc   lineTranscoder
		line []byte
		d    *recordDecoder
		r    scanRecord
		e    wire.Entity
	)
	generic := func(key, v []byte) error {
		if d == nil {
			d = decoderPool.Get().(*recordDecoder)
			r.init()
		}
		r.reset(key)
		var err error
		if r.ticks, err = d.each(v, nil, r.add); err != nil {
			return err
		}
		if pred != nil && !pred.Match(&r) {
			return nil
		}
		if err := r.decodeKeys(); err != nil {
			return err
		}
		e.PartitionKey, e.RowKey, e.Timestamp = r.pk, r.rk, timeOfTicks(r.ticks)
		e.Properties = e.Properties[:0]
		for i, name := range r.names {
			e.Properties = append(e.Properties, wire.Property{Name: name, Value: r.values[i]})
		}
		return x.entity(&e)
	}
	defer func() {
		if d != nil {
			decoderPool.Put(d)
		}
	}()
	n := 0
	each := func(key, v []byte) error {
		if n++; n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return x.fail(err)
			}
		}
		if pred == nil {
			var err error
			if line, err = tc.appendLine(line[:0], key, v); err == nil {
				if err := x.enc.EntityLine(line); err != nil {
					return x.fail(err)
				}
				if cap(line) > 1<<20 {
					line = nil // one huge entity does not keep its buffer for the rest
				}
				return x.counted(bytesView(tc.pk), bytesView(tc.rk))
			}
		}
		return generic(key, v)
	}
	if err := ctx.Err(); err != nil {
		return x.fail(err)
	}
	if runtime.GOMAXPROCS(0) > 1 {
		return scanAhead(it, each)
	}
	for it.Next() {
		key := it.Key()
		if err := it.Value(func(v []byte) error { return each(key, v) }); err != nil {
			return err
		}
	}
	return nil
}
