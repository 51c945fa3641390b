package tabula

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/tabuladb/tabula/internal/wire"
)

// Moving an interchange file to and from any ServiceAPI: an embedded DB (which takes
// DB.Import's and DB.Export's paths) or a remote service (package remote).

// ImportService reads an interchange file and writes its tables into a service through
// its ServiceAPI: an embedded DB (which takes DB.Import's path, into its root namespace) or
// a remote service (package remote), so that a file can be loaded into Azure Storage, the
// Cosmos DB Table API or Azurite. Entities go in entity group transactions of one
// partition each (SubmitBulk), inserted, or upserted by the Existing policy, and the
// service stamps their Timestamps.
//
// A table's access policies are set after the table is created (or found), where its
// handle has AccessPoliciesAPI, and the file's service properties (the last account line's,
// as every table goes into one service) are set once the file has been read, where s has
// ServicePropertiesAPI; where the service refuses them to the credential (a shared access
// signature may not set a table's ACL) or does not implement them, they are left out.
//
// A remote service has no staging area: a table the import creates is deleted again when
// the import fails (unless BestEffort), but entities written into a table that existed
// stay written. Resume continues after the last line a Progress call reported.
func ImportService(ctx context.Context, s ServiceAPI, r io.Reader, opts *ImportOptions) (Progress, error) {
	if opts == nil {
		opts = &ImportOptions{}
	}
	if e, ok := s.(embedded); ok {
		return e.DB.importInto(ctx, r, opts, func(string) string { return "" })
	}
	if opts.KeepTimestamps {
		return Progress{}, ErrInvalidInput.WithDetail("import: a remote service stamps its own Timestamps; keeping the file's needs an embedded DB")
	}
	im, err := newImporter(r, opts)
	if err != nil {
		return Progress{}, err
	}
	si := &serviceImport{importer: im, ctx: ctx, s: s, uncertain: opts.Resume != nil}
	if opts.Resume != nil {
		si.resume = opts.Resume.Line
		im.p = *opts.Resume
	}
	return si.run()
}

// serviceImport is one ImportService into a remote service.
type serviceImport struct {
	*importer
	ctx        context.Context
	s          ServiceAPI
	resume     int // the line a resumed import continues after
	t          TableAPI
	created    bool // this run created t
	skipping   bool
	actions    []Action
	lines      []int
	size       int
	props      []byte   // the last account line's service properties
	propsLine  int      //
	tableStart Progress // the progress before the table in progress
	// uncertain: the first batch after a resumed line, which the interrupted run may have
	// written in part after its last Progress (see flush).
	uncertain bool
}

func (si *serviceImport) run() (Progress, error) {
	for {
		rec, err := si.dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if si.opts.BestEffort && skippable(err) {
				si.p.Skipped++
				continue
			}
			return si.undo(readError(si.p.Line, err))
		}
		if err := si.record(&rec); err != nil {
			return si.undo(err)
		}
	}
	return si.p, si.setProps()
}

func (si *serviceImport) record(rec *wire.Record) error {
	if rec.Kind == wire.RecordAccount && rec.ServiceProperties != nil {
		if err := checkServiceProperties(rec); err != nil {
			return err
		}
		si.props, si.propsLine = rec.ServiceProperties, rec.Line
	}
	if rec.Line <= si.resume {
		if rec.Kind == wire.RecordTable {
			si.t, si.skipping = si.s.Table(rec.Table), !si.wanted(rec.Table)
		}
		return nil
	}
	switch rec.Kind {
	case wire.RecordTable:
		return si.beginTable(rec)
	case wire.RecordEntity:
		if !si.skipping {
			return si.entity(rec)
		}
	case wire.RecordTableEnd:
		if si.skipping {
			si.skipping = false
			return nil
		}
		if err := si.flush(); err != nil {
			return err
		}
		si.p.Line = rec.Line
		si.p.Tables++
		si.p.InTable = false
		si.created = false
		return si.progress()
	}
	return nil
}

func (si *serviceImport) beginTable(rec *wire.Record) error {
	if si.skipping = !si.wanted(rec.Table); si.skipping {
		return nil
	}
	si.tableStart = si.p
	si.tableStart.Line = rec.Line - 1
	var err error
	si.created = true
	if si.t, err = si.s.CreateTable(si.ctx, rec.Table); errors.Is(err, ErrTableAlreadyExists) {
		si.t, si.created = si.s.Table(rec.Table), false
	} else if err != nil {
		si.created = false
		return importError(rec.Line, "", err)
	}
	if err := setPolicies(si.ctx, si.t, rec, si.opts.BestEffort); err != nil {
		return err
	}
	si.p.Account, si.p.Table, si.p.InTable, si.p.TableEntities = rec.Account, rec.Table, true, 0
	return nil
}

func (si *serviceImport) entity(rec *wire.Record) error {
	e, _, err := entityOf(&rec.Entity)
	if err != nil {
		if si.opts.BestEffort {
			si.p.Skipped++
			return nil
		}
		return importError(rec.Line, rec.Path, err)
	}
	if !si.wants(&e) {
		return nil
	}
	var a Action
	switch si.opts.Existing {
	case ExistingReplace:
		a = UpsertAction(e, Replace)
	case ExistingMerge:
		a = UpsertAction(e, Merge)
	default:
		a = InsertAction(e)
	}
	si.actions, si.lines = append(si.actions, a), append(si.lines, rec.Line)
	si.size += EntitySize(&e)
	si.p.Entities++
	si.p.TableEntities++
	if len(si.actions) < importBatchEntities && si.size < importBatchBytes {
		return nil
	}
	if err := si.flush(); err != nil {
		return err
	}
	si.p.Line = rec.Line
	return si.progress()
}

// flush writes the batch in transactions of one partition (SubmitBulk); the actions of a
// transaction that fails are applied one at a time, to find the line at fault and to
// leave out the entities a policy or best effort leaves out.
func (si *serviceImport) flush() error {
	if len(si.actions) == 0 {
		return nil
	}
	defer func() { si.actions, si.lines, si.size, si.uncertain = si.actions[:0], si.lines[:0], 0, false }()
	results, err := SubmitBulk(si.ctx, si.t, si.actions)
	if err == nil {
		return nil
	}
	if si.ctx.Err() != nil {
		return si.ctx.Err()
	}
	for _, r := range results {
		if r.Err == nil {
			continue
		}
		for _, i := range r.Actions {
			if err := si.one(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// one applies action i of the batch alone.
func (si *serviceImport) one(i int) error {
	_, err := si.t.SubmitTransaction(si.ctx, si.actions[i:i+1])
	switch {
	case err == nil:
	case si.uncertain && errors.Is(err, ErrEntityAlreadyExists) && writtenAlready(si.ctx, si.t, &si.actions[i].Entity):
		// the interrupted run's write, after its last Progress
	case si.opts.Existing == ExistingSkip && errors.Is(err, ErrEntityAlreadyExists),
		si.opts.BestEffort && isServiceError(err):
		si.p.Skipped++
		si.p.Entities--
		si.p.TableEntities--
	default:
		return importError(si.lines[i], "", err)
	}
	return nil
}

// undo ends a failed import. A table this run created goes with a failure, and the
// progress goes back to the line before it, so that a resume creates it again; an
// interrupted run (ctx ended) keeps it, for the resume to finish.
func (si *serviceImport) undo(err error) (Progress, error) {
	ctx, opts := si.ctx, si.opts
	if si.created && !opts.BestEffort && ctx.Err() == nil {
		if derr := si.s.DeleteTable(context.WithoutCancel(ctx), si.t.Name()); derr == nil {
			si.p = si.tableStart
			if opts.Progress != nil {
				if perr := opts.Progress(si.p); perr != nil {
					return si.p, errors.Join(err, perr)
				}
			}
		}
	}
	if opts.BestEffort && ctx.Err() == nil {
		if perr := si.setProps(); perr != nil {
			return si.p, perr
		}
	}
	return si.p, err
}

// setProps sets the file's service properties, where the service takes them.
func (si *serviceImport) setProps() error {
	sp, ok := si.s.(ServicePropertiesAPI)
	if !ok || si.props == nil {
		return nil
	}
	if err := sp.SetServiceProperties(si.ctx, si.props); err != nil && !unavailable(err) {
		var ie *ImportError
		if err = importError(si.propsLine, "", err); errors.As(err, &ie) {
			ie.Field = "serviceProperties"
		}
		return err
	}
	return nil
}

// setPolicies sets the access policies a table line of the file gives on t, where its
// handle has AccessPoliciesAPI, checked first by the service's rules so that a bad policy
// is an error naming the line. Policies the service refuses are left out under bestEffort.
func setPolicies(ctx context.Context, t TableAPI, rec *wire.Record, bestEffort bool) error {
	acl, ok := t.(AccessPoliciesAPI)
	if !ok || rec.AccessPolicies == nil {
		return nil
	}
	policies, err := tablePolicies(rec)
	if err != nil {
		return err
	}
	err = acl.SetAccessPolicies(ctx, policies)
	if err == nil || unavailable(err) || bestEffort && isServiceError(err) {
		return nil
	}
	rule := ruleOf(err)
	if isServiceError(err) {
		rule = "the service refused the table's access policies (an emulator such as Azurite may refuse a policy without a Start or Expiry time; a best-effort import leaves refused policies out): " + rule
	}
	return &ImportError{Line: rec.Line, Field: "accessPolicies", Rule: rule, Err: err}
}

// writtenAlready says whether t holds e with e's properties: an entity that a resumed
// import finds existing, written by the run it resumes after that run's last Progress.
func writtenAlready(ctx context.Context, t TableAPI, e *Entity) bool {
	stored, err := t.Get(ctx, e.PartitionKey, e.RowKey)
	if err != nil {
		return false
	}
	return sameProperties(stored.Properties, e.Properties)
}

// sameProperties says whether two entities' properties are equal, value and type.
func sameProperties(a, b Properties) bool {
	ea, eb := Entity{PartitionKey: "p", RowKey: "r", Properties: a}, Entity{PartitionKey: "p", RowKey: "r", Properties: b}
	na, err := validateEntity(&ea)
	if err != nil {
		return false
	}
	nb, err := validateEntity(&eb)
	if err != nil {
		return false
	}
	return bytes.Equal(encodeRecord(0, a, na), encodeRecord(0, b, nb))
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
		t := s.Table(info.Name)
		policies := func() ([]AccessPolicy, error) {
			acl, ok := t.(AccessPoliciesAPI)
			if !ok {
				return nil, nil
			}
			ps, err := acl.AccessPolicies(ctx)
			if err != nil && unavailable(err) {
				return nil, nil
			}
			return ps, err
		}
		entities := func(afterPK, afterRK *string) error { return x.query(ctx, t, afterPK, afterRK) }
		if err := x.table(opts.Account, info.Name, policies, entities); err != nil {
			return err
		}
	}
	return x.close()
}
