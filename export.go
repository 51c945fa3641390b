package tabula

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
	"github.com/tabuladb/tabula/storage"
)

// Export and import move tables in and out of Tabula as an interchange file: JSON Lines,
// one entity a line in the service's own JSON, grouped by table, with a trailer that counts
// what the file holds (the format is documented with package internal/wire, whose example
// file TestInterchangeExample keeps valid). Both are beyond the service, which has no such
// operation.

// ExportOptions says what an export writes. The zero value exports everything.
type ExportOptions struct {
	// Namespaces limits DB.Export to these namespaces ("" is the root one); nil exports
	// every namespace that has a table or service properties. ExportService ignores it.
	Namespaces []string
	// Tables limits the export to the tables of these names (in any letter case), in every
	// exported namespace; nil exports every table.
	Tables []string
	// Filter is a $filter an entity must match to be exported; empty exports all of them.
	Filter string
	// Account is the account name ExportService writes in the file; DB.Export writes each
	// namespace's name.
	Account string
	// Progress, when set, is called after each table and every ProgressEvery entities,
	// with everything before it written through to the writer (so a resumable caller can
	// note the writer's length with it). An error it returns stops the export.
	Progress func(Progress) error
	// ProgressEvery is how many entities pass between Progress calls; 0 means 10,000.
	ProgressEvery int
	// Resume continues an export that stopped after the Progress given: the caller has cut
	// the file back to what was written at that call, and the export writes the rest.
	Resume *Progress
}

// Progress is how far an export or import has got, and where it resumes.
type Progress struct {
	// Tables counts the tables done, Entities the entities written (export) or read
	// (import) in all of them so far.
	Tables, Entities int64
	// Account and Table name the table in progress, or the last one done when InTable is
	// false.
	Account, Table string
	InTable        bool
	// PartitionKey and RowKey are the last entity written of the table in progress
	// (export), and TableEntities the number written of it so far.
	PartitionKey, RowKey string
	TableEntities        int64
	// Line is the last line of the file read (import).
	Line int
	// Skipped counts the entities a best-effort import left out.
	Skipped int64
}

// Export writes the database's tables to w as an interchange file: every namespace, or
// those opts names, with their service properties and each table's access policies. Each
// table is read in one consistent view, so a table is written as it stood at one moment
// while the database goes on serving writes; different tables may be read at different
// moments.
func (db *DB) Export(ctx context.Context, w io.Writer, opts *ExportOptions) error {
	if opts == nil {
		opts = &ExportOptions{}
	}
	namespaces := opts.Namespaces
	if namespaces == nil {
		var err error
		if namespaces, err = db.namespaces(ctx); err != nil {
			return err
		}
	}
	x, err := newExporter(w, opts)
	if err != nil {
		return err
	}
	for _, name := range namespaces {
		ns := db.Namespace(name)
		props, err := ns.ServiceProperties(ctx)
		if err != nil {
			return err
		}
		if props != nil && x.resuming == nil {
			if err := x.enc.Account(name, props); err != nil {
				return err
			}
		}
		for info, err := range ns.Tables(ctx, "") {
			if err != nil {
				return err
			}
			if !x.wanted(name, info.Name) {
				continue
			}
			if err := x.table(ctx, name, info.Name, ns.Table(info.Name), db.exportTable); err != nil {
				return err
			}
		}
	}
	return x.close()
}

// ExportService writes the tables of a service to w as an interchange file, through its
// ServiceAPI: an embedded DB or a remote service (package remote), so that an account of
// Azure Storage, the Cosmos DB Table API or Azurite can be copied down. The service's
// properties are written where s has ServicePropertiesAPI, and each table's access policies
// where its handle has AccessPoliciesAPI (both do, embedded and remote); where the service
// refuses them to the credential (a shared access signature may not read a table's ACL) or
// does not implement them, they are left out. A remote service always has properties (its
// defaults when none were set), so its file has an account line where an embedded DB's
// has none.
func ExportService(ctx context.Context, s ServiceAPI, w io.Writer, opts *ExportOptions) error {
	if opts == nil {
		opts = &ExportOptions{}
	}
	if e, ok := s.(embedded); ok && opts.Account == "" {
		opts2 := *opts
		opts2.Namespaces = []string{""}
		return e.DB.Export(ctx, w, &opts2)
	}
	x, err := newExporter(w, opts)
	if err != nil {
		return err
	}
	if sp, ok := s.(ServicePropertiesAPI); ok && x.resuming == nil {
		props, err := sp.ServiceProperties(ctx)
		if err != nil && !unavailable(err) {
			return err
		}
		if props != nil {
			if err := x.enc.Account(opts.Account, props); err != nil {
				return err
			}
		}
	}
	for info, err := range s.Tables(ctx, "") {
		if err != nil {
			return err
		}
		if !x.wanted(opts.Account, info.Name) {
			continue
		}
		if err := x.table(ctx, opts.Account, info.Name, s.Table(info.Name), nil); err != nil {
			return err
		}
	}
	return x.close()
}

// exporter writes one export.
type exporter struct {
	enc      *wire.Encoder
	opts     *ExportOptions
	every    int64
	resuming *Progress // until the table to resume in is reached
	p        Progress
	scratch  wire.Entity
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

// tableScan reads a table's entities after a key (none: from the start) and gives each to
// emit; the embedded fast path, or nil for the generic one.
type tableScan func(ctx context.Context, t *Table, filter string, afterPK, afterRK *string, emit func(*wire.Entity) error) error

func (x *exporter) table(ctx context.Context, account, name string, t TableAPI, fast tableScan) error {
	var afterPK, afterRK *string
	if x.p.InTable && x.p.Account == account && strings.EqualFold(x.p.Table, name) {
		// Resuming inside this table: its header is written already.
		if x.p.TableEntities > 0 {
			afterPK, afterRK = &x.p.PartitionKey, &x.p.RowKey
		}
	} else {
		var policies []wire.InterchangeAccessPolicy
		if acl, ok := t.(AccessPoliciesAPI); ok {
			ps, err := acl.AccessPolicies(ctx)
			if err != nil && !unavailable(err) {
				return err
			}
			for _, p := range ps {
				ip := wire.InterchangeAccessPolicy{ID: p.ID, Permission: p.Permission}
				if !p.Start.IsZero() {
					ip.Start = formatTime(p.Start)
				}
				if !p.Expiry.IsZero() {
					ip.Expiry = formatTime(p.Expiry)
				}
				policies = append(policies, ip)
			}
		}
		if err := x.enc.BeginTable(account, name, policies); err != nil {
			return err
		}
		x.p.Account, x.p.Table, x.p.InTable, x.p.TableEntities = account, name, true, 0
		x.p.PartitionKey, x.p.RowKey = "", ""
	}
	emit := func(e *wire.Entity) error {
		if err := x.enc.Entity(e); err != nil {
			return err
		}
		x.p.Entities++
		x.p.TableEntities++
		if x.p.TableEntities%x.every == 0 && x.opts.Progress != nil {
			x.p.PartitionKey, x.p.RowKey = e.PartitionKey, e.RowKey
			return x.progress()
		}
		return nil
	}
	var err error
	if tt, ok := t.(*Table); ok && fast != nil {
		err = fast(ctx, tt, x.opts.Filter, afterPK, afterRK, emit)
	} else {
		err = x.query(ctx, t, afterPK, afterRK, emit)
	}
	if err != nil {
		return err
	}
	if err := x.enc.EndTable(); err != nil {
		return err
	}
	x.p.Tables++
	x.p.InTable = false
	if x.opts.Progress != nil {
		return x.progress()
	}
	return nil
}

func (x *exporter) progress() error {
	if err := x.enc.Flush(); err != nil {
		return err
	}
	return x.opts.Progress(x.p)
}

// query reads a table through its TableAPI, after a key when resuming.
func (x *exporter) query(ctx context.Context, t TableAPI, afterPK, afterRK *string, emit func(*wire.Entity) error) error {
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
				e.Properties = append(e.Properties, wire.Property{Name: name, Value: valueOf(v)})
			}
		}
		if err := emit(e); err != nil {
			return err
		}
		x.p.PartitionKey, x.p.RowKey = ent.PartitionKey, ent.RowKey
	}
	return nil
}

func (x *exporter) close() error {
	if x.resuming != nil {
		return ErrInvalidInput.WithDetail("the export to resume was in table %q of account %q, which is gone", x.resuming.Table, x.resuming.Account)
	}
	return x.enc.Close()
}

// exportTable is the embedded fast path: one read view over the table's records, decoded
// straight to the wire form.
func (db *DB) exportTable(ctx context.Context, t *Table, filter string, afterPK, afterRK *string, emit func(*wire.Entity) error) error {
	var pred *odata.Predicate
	if filter != "" {
		expr, err := parseFilter(filter)
		if err != nil {
			return err
		}
		pred = odata.Compile(expr)
	}
	var emitErr error // returned as it is, not as the store's error
	err := t.read(ctx, func(ot *openTable) error {
		return db.view(ctx, func(tx *storage.Txn) error {
			lower, upper := tableBounds(ot.rec.ID)
			if afterPK != nil {
				lower = storage.SuccessorOf(entityKey(ot.rec.ID, *afterPK, *afterRK))
			}
			it := tx.Scan(lower, upper)
			defer it.Close()
			d := decoderPool.Get().(*recordDecoder)
			defer decoderPool.Put(d)
			var r scanRecord
			r.init()
			var e wire.Entity
			for n := 0; it.Next(); n++ {
				if n%1024 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				r.reset(it.Key())
				if err := it.Value(func(v []byte) (err error) {
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
					emitErr = emit(&e)
					return emitErr
				}); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if emitErr != nil {
		return emitErr
	}
	return err
}

// namespaces lists the namespaces that have a table or service properties, the root
// namespace first.
func (db *DB) namespaces(ctx context.Context) ([]string, error) {
	seen := map[string]bool{"": true}
	out := []string{""}
	err := db.view(ctx, func(tx *storage.Txn) error {
		for _, prefix := range []byte{prefixNamespaceTable, prefixProperties} {
			it := tx.Scan([]byte{prefix}, []byte{prefix + 1})
			for it.Next() {
				name, _, _, err := storage.NextPart(it.Key()[1:])
				if err != nil {
					it.Close()
					return errCorrupt(fmt.Sprintf("namespace key %x: %v", it.Key(), err))
				}
				if !seen[name] {
					seen[name] = true
					out = append(out, name)
				}
			}
			it.Close()
		}
		return nil
	})
	slices.Sort(out[1:])
	return out, err
}
