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
		return Progress{}, ErrInvalidInput.WithDetail("import: a remote service stamps its own Timestamps; KeepTimestamps needs an embedded DB")
	}
	im, err := newImporter(r, opts)
	if err != nil {
		return Progress{}, err
	}
	resume := 0
	if opts.Resume != nil {
		resume = opts.Resume.Line
		im.p = *opts.Resume
	}
	var (
		t          TableAPI
		created    bool
		skipping   bool
		actions    []Action
		lines      []int
		size       int
		props      []byte   // the last account line's service properties
		propsLine  int      //
		tableStart Progress // the progress before the table in progress
		// uncertain: the first batch after a resumed line, which the interrupted run may have
		// written in part after its last Progress (see flush).
		uncertain = opts.Resume != nil
	)
	setProps := func() error {
		sp, ok := s.(ServicePropertiesAPI)
		if !ok || props == nil {
			return nil
		}
		if err := sp.SetServiceProperties(ctx, props); err != nil && !unavailable(err) {
			var ie *ImportError
			if err = importError(propsLine, "", err); errors.As(err, &ie) {
				ie.Field = "serviceProperties"
			}
			return err
		}
		return nil
	}
	undo := func(err error) (Progress, error) {
		// A table this run created goes with a failure, and the progress goes back to the
		// line before it, so that a resume creates it again; an interrupted run (ctx ended)
		// keeps it, for the resume to finish.
		if created && !opts.BestEffort && t != nil && ctx.Err() == nil {
			if derr := s.DeleteTable(context.WithoutCancel(ctx), t.Name()); derr == nil {
				im.p = tableStart
				if opts.Progress != nil {
					if perr := opts.Progress(im.p); perr != nil {
						return im.p, errors.Join(err, perr)
					}
				}
			}
		}
		if opts.BestEffort && ctx.Err() == nil {
			if perr := setProps(); perr != nil {
				return im.p, perr
			}
		}
		return im.p, err
	}
	flush := func() error {
		if len(actions) == 0 {
			return nil
		}
		defer func() { actions, lines, size, uncertain = actions[:0], lines[:0], 0, false }()
		results, err := SubmitBulk(ctx, t, actions)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Apply the failed transactions' actions one at a time, to find the lines at fault
		// and to leave out the entities a policy or best effort leaves out.
		for _, r := range results {
			if r.Err == nil {
				continue
			}
			for _, i := range r.Actions {
				_, err := t.SubmitTransaction(ctx, actions[i:i+1])
				if err == nil {
					continue
				}
				if opts.Existing == ExistingSkip && errors.Is(err, ErrEntityAlreadyExists) {
					im.p.Skipped++
					im.p.Entities--
					im.p.TableEntities--
					continue
				}
				if uncertain && errors.Is(err, ErrEntityAlreadyExists) && writtenAlready(ctx, t, &actions[i].Entity) {
					continue // the interrupted run's write, after its last Progress
				}
				if opts.BestEffort && isServiceError(err) {
					im.p.Skipped++
					im.p.Entities--
					im.p.TableEntities--
					continue
				}
				return importError(lines[i], "", err)
			}
		}
		return nil
	}
	for {
		rec, err := im.dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if opts.BestEffort && skippable(err) {
				im.p.Skipped++
				continue
			}
			return undo(readError(im.p.Line, err))
		}
		if rec.Kind == wire.RecordAccount && rec.ServiceProperties != nil {
			if err := checkServiceProperties(&rec); err != nil {
				return undo(err)
			}
			props, propsLine = rec.ServiceProperties, rec.Line
		}
		if rec.Line <= resume {
			if rec.Kind == wire.RecordTable {
				t, skipping = s.Table(rec.Table), !im.wanted(rec.Table)
			}
			continue
		}
		switch rec.Kind {
		case wire.RecordTable:
			skipping = !im.wanted(rec.Table)
			if skipping {
				continue
			}
			tableStart = im.p
			tableStart.Line = rec.Line - 1
			created = true
			if t, err = s.CreateTable(ctx, rec.Table); errors.Is(err, ErrTableAlreadyExists) {
				t, created = s.Table(rec.Table), false
			} else if err != nil {
				return undo(importError(rec.Line, "", err))
			}
			if err := setPolicies(ctx, t, &rec, opts.BestEffort); err != nil {
				return undo(err)
			}
			im.p.Account, im.p.Table, im.p.InTable, im.p.TableEntities = rec.Account, rec.Table, true, 0
		case wire.RecordEntity:
			if skipping {
				continue
			}
			e, _, err := entityOf(&rec.Entity)
			if err != nil {
				if opts.BestEffort {
					im.p.Skipped++
					continue
				}
				return undo(importError(rec.Line, rec.Path, err))
			}
			var a Action
			switch opts.Existing {
			case ExistingReplace:
				a = UpsertAction(e, Replace)
			case ExistingMerge:
				a = UpsertAction(e, Merge)
			default:
				a = InsertAction(e)
			}
			actions, lines = append(actions, a), append(lines, rec.Line)
			size += EntitySize(&e)
			im.p.Entities++
			im.p.TableEntities++
			if len(actions) >= importBatchEntities || size >= importBatchBytes {
				if err := flush(); err != nil {
					return undo(err)
				}
				im.p.Line = rec.Line
				if err := im.progress(); err != nil {
					return undo(err)
				}
			}
		case wire.RecordTableEnd:
			if skipping {
				skipping = false
				continue
			}
			if err := flush(); err != nil {
				return undo(err)
			}
			im.p.Line = rec.Line
			im.p.Tables++
			im.p.InTable = false
			created = false
			if err := im.progress(); err != nil {
				return undo(err)
			}
		}
	}
	if err := setProps(); err != nil {
		return im.p, err
	}
	return im.p, nil
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
