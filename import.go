package tabula

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/storage"
	"github.com/vmihailenco/msgpack/v5"
)

// Existing says what an import does with an entity whose keys a table holds already.
type Existing int

// The policies for entities that exist.
const (
	// ExistingFail stops the import with EntityAlreadyExists, naming the file's line.
	ExistingFail Existing = iota
	// ExistingReplace writes the file's entity over the stored one (an Insert Or Replace).
	ExistingReplace
	// ExistingMerge merges the file's properties into the stored entity (an Insert Or
	// Merge).
	ExistingMerge
	// ExistingSkip keeps the stored entity and leaves the file's out.
	ExistingSkip
)

// ImportOptions says how an import writes. The zero value imports every table of the file,
// fails on an entity that exists, and stamps new Timestamps as the service would.
type ImportOptions struct {
	// Existing is the policy for an entity that exists already.
	Existing Existing
	// KeepTimestamps writes each entity with the file's Timestamp (and so its ETag) rather
	// than a new one; the database's clock then moves past the newest Timestamp imported,
	// so that later writes still get Timestamps no version has had. Only an embedded DB
	// can keep them: a remote service stamps its own.
	KeepTimestamps bool
	// Namespaces maps an account named in the file to the namespace DB.Import writes its
	// tables into; an account not in it goes to the namespace of its own name. ImportService
	// writes every table into its one service.
	Namespaces map[string]string
	// Tables limits the import to the tables of these names (in any letter case); nil
	// imports every table of the file.
	Tables []string
	// BestEffort leaves out an entity line that cannot be imported (counted in
	// Progress.Skipped) rather than stopping; and when the file is cut short or breaks its
	// grammar, the tables read whole before the defect are still imported.
	BestEffort bool
	// Progress, when set, is called after each table and every ProgressEvery entities.
	// An error it returns stops the import.
	Progress func(Progress) error
	// ProgressEvery is how many entities pass between Progress calls; 0 means 10,000.
	ProgressEvery int
	// Resume (ImportService only) continues an import that stopped after the Progress
	// given: the lines up to its Line, written already, are read and not written again.
	Resume *Progress
}

// ImportError is why an import stopped: a line of the file that breaks a rule of the
// format or of the service, or a file cut short. It names the line, the field and the
// rule; Err, when set, is the service's error for it (errors.Is matches its code).
type ImportError struct {
	// Line is the line of the file, from 1.
	Line int
	// Field is the member of the line at fault, when the rule is about one.
	Field string
	// Rule says what the line breaks.
	Rule string
	// Truncated says the file ends before its trailer line: it was cut short.
	Truncated bool
	// Err is the service's error, if any.
	Err error
}

func (e *ImportError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("import: line %d: %s", e.Line, e.Rule)
	}
	return fmt.Sprintf("import: line %d: %s: %s", e.Line, e.Field, e.Rule)
}

func (e *ImportError) Unwrap() error { return e.Err }

// importError converts the decoder's and the engine's errors to an *ImportError at line.
func importError(line int, err error) error {
	var fe *wire.FormatError
	if errors.As(err, &fe) {
		return &ImportError{Line: fe.Line, Field: fe.Field, Rule: fe.Rule, Truncated: errors.Is(err, wire.ErrTruncated),
			Err: ErrInvalidInput.WithDetail("%s", fe.Error())}
	}
	var te *TransactionError
	if errors.As(err, &te) {
		err = te.Err
	}
	var ie *ImportError
	if errors.As(err, &ie) || !isServiceError(err) {
		return err
	}
	return &ImportError{Line: line, Rule: err.Error(), Err: err}
}

// isServiceError says whether err is the service's answer to bad input (as opposed to a
// context's end, a full disk, a broken connection).
func isServiceError(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode >= 400 && e.StatusCode < 500
}

// skippable says whether a best-effort import may leave out the line that gave err.
func skippable(err error) bool {
	var fe *wire.FormatError
	if errors.As(err, &fe) {
		return fe.EntityLine
	}
	return isServiceError(err)
}

// importer is what both import paths share: the file, the options, the progress.
type importer struct {
	dec   *wire.Decoder
	opts  *ImportOptions
	every int64
	p     Progress
}

func newImporter(r io.Reader, opts *ImportOptions) (*importer, error) {
	if opts.Existing < ExistingFail || opts.Existing > ExistingSkip {
		return nil, ErrInvalidInput.WithDetail("import: Existing %d is none of the policies", opts.Existing)
	}
	return &importer{dec: wire.NewDecoder(r), opts: opts, every: int64(cmp.Or(opts.ProgressEvery, 10_000))}, nil
}

func (im *importer) wanted(table string) bool {
	return im.opts.Tables == nil || slices.ContainsFunc(im.opts.Tables, func(t string) bool { return strings.EqualFold(t, table) })
}

func (im *importer) progress() error {
	if im.opts.Progress == nil {
		return nil
	}
	return im.opts.Progress(im.p)
}

// entityOf converts a decoded line to an Entity and checks it by the service's rules.
func entityOf(we *wire.Entity) (Entity, []string, error) {
	e := Entity{PartitionKey: we.PartitionKey, RowKey: we.RowKey, Timestamp: we.Timestamp,
		Properties: make(Properties, len(we.Properties))}
	for _, p := range we.Properties {
		e.Properties[p.Name] = propertyOf(p.Value)
	}
	names, err := validateEntity(&e)
	return e, names, err
}

func policiesOf(ps []wire.InterchangeAccessPolicy) ([]AccessPolicy, error) {
	out := make([]AccessPolicy, 0, len(ps))
	for _, p := range ps {
		ap := AccessPolicy{ID: p.ID, Permission: p.Permission}
		for _, t := range []struct {
			text string
			into *DateTime
		}{{p.Start, (*DateTime)(&ap.Start)}, {p.Expiry, (*DateTime)(&ap.Expiry)}} {
			if t.text != "" {
				tm, err := wire.ParseDateTime(t.text)
				if err != nil {
					return nil, err
				}
				*t.into = DateTime(tm)
			}
		}
		out = append(out, ap)
	}
	return out, nil
}

// stagedTable is a table of the file written into a table ID that no catalog entry names
// yet, with a drop marker, so that a crash before it is published drops it.
type stagedTable struct {
	ns, name string
	id       uint64
	line     int // of its table line
	policies []AccessPolicy
	acl      bool // the file gave its access policies
	done     bool // its end line was read
	maxTicks int64
	maxKey   []byte // the greatest key staged
	target   uint64 // the ID of the table of its name when the import began, 0 for none
}

// stagedEntity is one entity of a batch being staged.
type stagedEntity struct {
	key, record []byte
	line        int
	pk, rk      string
	// check: its key is not after every key before it, so it may be in the table twice
	// (a file in key order, as exports are, never needs the look-up).
	check bool
}

// Import reads an interchange file and writes its tables into the database, each into
// the namespace of its account (see ImportOptions.Namespaces), with their access policies
// and the accounts' service properties.
//
// It is a bulk path: entities are written into a staging area, a table ID no catalog entry
// names, in transactions as large as the store takes, committed while the next lines are
// read (storage.Bulk); nothing is published until the file has been read to its trailer
// with every line checked and every staged write committed. Then each new table is published by one catalog
// write (all of them in one transaction), and the entities of each table that existed are
// applied to it in large transactions, by the Existing policy. So a file cut short, or one
// with a line that breaks a rule, changes nothing (unless BestEffort asks for the whole
// tables read before the defect); the error names the line, the field and the rule. An
// interrupted import leaves nothing behind and starts again from the beginning: the next
// Open drops what was staged. Entities that exist are found while staging too, so
// ExistingFail fails before anything is written; a concurrent writer can still create
// one in between, and then the import stops with the tables applied so far applied.
func (db *DB) Import(ctx context.Context, r io.Reader, opts *ImportOptions) (Progress, error) {
	if opts == nil {
		opts = &ImportOptions{}
	}
	return db.importFile(ctx, r, opts, false)
}

// importAllInto is DB.Import with every account's tables in the root namespace.
func (db *DB) importAllInto(ctx context.Context, r io.Reader, opts *ImportOptions) (Progress, error) {
	return db.importFile(ctx, r, opts, true)
}

func (db *DB) importFile(ctx context.Context, r io.Reader, opts *ImportOptions, root bool) (Progress, error) {
	// Staged table IDs, and the drops of what was staged, must not straddle a Restore (see
	// DB.Restore), which would put back a table-ID counter below them.
	db.restoreMu.RLock()
	defer db.restoreMu.RUnlock()
	nsOf := func(account string) string {
		if root {
			return ""
		}
		return db.namespaceOf(account, opts)
	}
	if opts.Resume != nil {
		return Progress{}, ErrInvalidInput.WithDetail("import: an import into a DB changes nothing until it ends, so it does not resume; start it again")
	}
	im, err := newImporter(r, opts)
	if err != nil {
		return Progress{}, err
	}
	var (
		staged   []*stagedTable
		cur      *stagedTable // the table being read, nil when outside one or skipping it
		skipping bool
		batch    []stagedEntity
		size     int
		props    = map[string][]byte{} // namespaces' service properties, by namespace
	)
	drop := func(tables []*stagedTable) {
		for _, t := range tables {
			db.dropInBackground(t.id)
		}
	}
	// The staged table is private until publish, so its entities go in through a bulk
	// writer (see storage.Bulk): large commits, sent while the next batch is decoded.
	bulk := db.store.NewBulk()
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		defer func() {
			clear(batch)
			batch, size = batch[:0], 0
		}()
		if err := ctx.Err(); err != nil {
			return err
		}
		checks := slices.ContainsFunc(batch, func(e stagedEntity) bool { return e.check })
		if checks || cur.target != 0 && opts.Existing == ExistingFail {
			if err := db.screen(ctx, bulk, cur, batch, checks, opts, &im.p); err != nil {
				return err
			}
		}
		for i := range batch {
			if e := &batch[i]; e.key != nil {
				if err := bulk.Set(e.key, e.record); err != nil {
					return storageError(err)
				}
			}
		}
		return nil
	}
	fail := func(err error) (Progress, error) {
		bulk.Cancel()
		if opts.BestEffort {
			var whole, part []*stagedTable
			for _, t := range staged {
				if t.done {
					whole = append(whole, t)
				} else {
					part = append(part, t)
				}
			}
			drop(part)
			if perr := db.publish(ctx, whole, props, opts, &im.p); perr != nil {
				return im.p, perr
			}
			return im.p, err
		}
		drop(staged)
		return im.p, err
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
			return fail(importError(0, err))
		}
		im.p.Line = rec.Line
		switch rec.Kind {
		case wire.RecordAccount:
			if len(rec.ServiceProperties) > maxPropertiesSize {
				return fail(&ImportError{Line: rec.Line, Field: "serviceProperties", Rule: fmt.Sprintf("%d bytes exceed %d", len(rec.ServiceProperties), maxPropertiesSize), Err: ErrInvalidInput})
			}
			if rec.ServiceProperties != nil {
				props[nsOf(rec.Account)] = rec.ServiceProperties
			}
		case wire.RecordTable:
			skipping = !im.wanted(rec.Table)
			if skipping {
				continue
			}
			if err := validateTableName(rec.Table); err != nil {
				return fail(&ImportError{Line: rec.Line, Field: "table", Rule: err.Error(), Err: err})
			}
			ns := nsOf(rec.Account)
			for _, t := range staged {
				if t.ns == ns && strings.EqualFold(t.name, rec.Table) {
					return fail(&ImportError{Line: rec.Line, Field: "table", Rule: fmt.Sprintf("table %q is in the file twice, at lines %d and %d", rec.Table, t.line, rec.Line), Err: ErrInvalidInput})
				}
			}
			policies, err := policiesOf(rec.AccessPolicies)
			if err != nil {
				return fail(&ImportError{Line: rec.Line, Field: "accessPolicies", Rule: err.Error(), Err: ErrInvalidInput})
			}
			if err := checkPolicies(policies); err != nil {
				return fail(&ImportError{Line: rec.Line, Field: "accessPolicies", Rule: err.Error(), Err: err})
			}
			id, err := db.stageTableID(ctx)
			if err != nil {
				return fail(err)
			}
			cur = &stagedTable{ns: ns, name: rec.Table, id: id, line: rec.Line, policies: policies, acl: rec.AccessPolicies != nil}
			if err := db.view(ctx, func(tx *storage.Txn) error {
				r, err := lookupTableIn(tx, ns, rec.Table)
				if errors.Is(err, ErrTableNotFound) {
					return nil
				}
				cur.target = r.ID
				return err
			}); err != nil {
				return fail(err)
			}
			staged = append(staged, cur)
			im.p.Account, im.p.Table, im.p.InTable, im.p.TableEntities = rec.Account, rec.Table, true, 0
		case wire.RecordEntity:
			if skipping {
				continue
			}
			e, names, err := entityOf(&rec.Entity)
			if err != nil {
				if opts.BestEffort {
					im.p.Skipped++
					continue
				}
				return fail(importError(rec.Line, err))
			}
			ticks := ticksOf(rec.Entity.Timestamp)
			if !opts.KeepTimestamps {
				if ticks, err = db.stamp(); err != nil {
					return fail(err)
				}
			}
			cur.maxTicks = max(cur.maxTicks, ticks)
			key := entityKey(cur.id, e.PartitionKey, e.RowKey)
			// A key after every key before it cannot be a repeat; only the others are
			// looked up.
			check := cur.maxKey != nil && bytes.Compare(key, cur.maxKey) <= 0
			if !check {
				cur.maxKey = append(cur.maxKey[:0], key...)
			}
			record := encodeRecord(ticks, e.Properties, names)
			batch = append(batch, stagedEntity{key: key, record: record, line: rec.Line, pk: e.PartitionKey, rk: e.RowKey, check: check})
			size += len(key) + len(record)
			if len(batch) >= importBatchEntities || size >= importBatchBytes {
				if err := flush(); err != nil {
					return fail(err)
				}
			}
			im.p.Entities++
			im.p.TableEntities++
			if im.p.Entities%im.every == 0 {
				if err := im.progress(); err != nil {
					return fail(err)
				}
			}
		case wire.RecordTableEnd:
			if skipping {
				skipping = false
				continue
			}
			if err := flush(); err != nil {
				return fail(err)
			}
			if err := bulk.Flush(); err != nil {
				return fail(storageError(err))
			}
			cur.done = true
			cur = nil
			im.p.Tables++
			im.p.InTable = false
			if err := im.progress(); err != nil {
				return fail(err)
			}
		}
	}
	if err := bulk.Flush(); err != nil {
		return fail(storageError(err))
	}
	if err := db.publish(ctx, staged, props, opts, &im.p); err != nil {
		return im.p, err
	}
	return im.p, nil
}

// screen finds the entities of a batch that must not be staged: a key staged already
// (checks: some key of the batch is not after every key before it) and, under
// ExistingFail, a key the table of its name holds. Under BestEffort it leaves them out
// (a nil key) and counts them as skipped; otherwise the first one is the import's error.
func (db *DB) screen(ctx context.Context, bulk *storage.Bulk, cur *stagedTable, batch []stagedEntity, checks bool, opts *ImportOptions, p *Progress) error {
	if checks {
		// The keys staged before must be visible to the look-ups.
		if err := bulk.Flush(); err != nil {
			return storageError(err)
		}
	}
	var seen map[string]struct{} // the batch's keys so far, when some are checked
	if checks {
		seen = make(map[string]struct{}, len(batch))
	}
	skipped := 0
	err := db.view(ctx, func(tx *storage.Txn) error {
		for i := range batch {
			e := &batch[i]
			var why string
			var code *Error
			if e.check { // a key not after the one before: it may be staged already
				found, err := tx.Get(e.key, nil)
				if err != nil {
					return err
				}
				if _, twice := seen[string(e.key)]; found || twice {
					why, code = "is in the table twice", ErrInvalidInput
				}
			}
			if why == "" && cur.target != 0 && opts.Existing == ExistingFail {
				found, err := tx.Get(entityKey(cur.target, e.pk, e.rk), nil)
				if err != nil {
					return err
				}
				if found {
					why, code = "exists in the table already, and the policy is ExistingFail", ErrEntityAlreadyExists
				}
			}
			if why == "" {
				if seen != nil {
					seen[string(e.key)] = struct{}{}
				}
				continue
			}
			if !opts.BestEffort {
				return &ImportError{Line: e.line, Field: "PartitionKey, RowKey", Rule: fmt.Sprintf("entity (%q, %q) %s", e.pk, e.rk, why),
					Err: code.WithDetail("entity (%q, %q)", e.pk, e.rk)}
			}
			skipped++
			e.key = nil
		}
		return nil
	})
	p.Skipped += int64(skipped)
	p.Entities -= int64(skipped)
	p.TableEntities -= int64(skipped)
	return err
}

// The size of the import's batches: a staged batch's look-ups (see screen), a transaction
// of applyStaged, and an ImportService's SubmitBulk.
const (
	importBatchEntities = 2000
	importBatchBytes    = 4 << 20
)

// checkPolicies applies SetAccessPolicies' rules without storing anything.
func checkPolicies(ps []AccessPolicy) error {
	_, err := storedPolicies(ps)
	return err
}

func (db *DB) namespaceOf(account string, opts *ImportOptions) string {
	if ns, ok := opts.Namespaces[account]; ok {
		return ns
	}
	return account
}

// stageTableID takes a table ID for a staged table, with its drop marker.
func (db *DB) stageTableID(ctx context.Context) (uint64, error) {
	var id uint64
	err := db.update(ctx, func(tx *storage.Txn) error {
		id = 1
		if _, err := tx.Get(nextTableIDKey, func(v []byte) error {
			id = binary.BigEndian.Uint64(v)
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Set(nextTableIDKey, binary.BigEndian.AppendUint64(nil, id+1)); err != nil {
			return err
		}
		return tx.Set(dropKey(id), nil)
	})
	return id, err
}

// publish makes the staged tables visible: a new table by its catalog entry, all in one
// transaction with the namespaces' service properties; then each table that existed gets
// the staged entities by the policy. Everything staged is dropped at the end.
func (db *DB) publish(ctx context.Context, staged []*stagedTable, props map[string][]byte, opts *ImportOptions, p *Progress) error {
	var existing []*stagedTable
	published := false
	defer func() {
		for _, t := range staged {
			if !published || slices.Contains(existing, t) {
				db.dropInBackground(t.id) // staged only: its drop marker is still there
			}
		}
	}()
	var newest int64
	err := db.update(ctx, func(tx *storage.Txn) error {
		existing = existing[:0]
		for _, t := range staged {
			newest = max(newest, t.maxTicks)
			key := catalogKey(t.ns, t.name)
			found, err := tx.Get(key, nil)
			if err != nil {
				return err
			}
			if found {
				existing = append(existing, t)
				continue
			}
			if err := db.deleting.check(t.ns, t.name, db.clock()); err != nil {
				return &ImportError{Line: t.line, Field: "table", Rule: err.Error(), Err: err}
			}
			created, err := db.stamp()
			if err != nil {
				return err
			}
			if err := tx.Set(key, tableRecord{ID: t.id, Name: t.name, Created: created}.encode()); err != nil {
				return err
			}
			if len(t.policies) > 0 {
				stored, err := storedPolicies(t.policies)
				if err != nil {
					return err
				}
				b, err := msgpack.Marshal(stored)
				if err != nil {
					return err
				}
				if err := tx.Set(aclKey(t.id), b); err != nil {
					return err
				}
			}
			if err := tx.Delete(dropKey(t.id)); err != nil {
				return err
			}
		}
		for ns, doc := range props {
			if err := tx.Set(propertiesKey(ns), doc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	published = true
	for _, t := range existing {
		if err := db.applyStaged(ctx, t, opts.Existing); err != nil {
			return err
		}
		if t.acl {
			if err := db.Namespace(t.ns).Table(t.name).SetAccessPolicies(ctx, t.policies); err != nil {
				return err
			}
		}
	}
	if opts.KeepTimestamps {
		db.advanceClock(newest)
	}
	return nil
}

// applyStaged writes a staged table's entities into the table of its name that existed
// before the import, in large transactions, by the policy.
func (db *DB) applyStaged(ctx context.Context, t *stagedTable, policy Existing) error {
	target := db.Namespace(t.ns).Table(t.name)
	ot, err := target.acquire(ctx)
	if err != nil {
		return err
	}
	defer ot.mu.RUnlock()
	lower, upper := tableBounds(t.id)
	// Half what the store takes in one transaction (Badger counts each entry's metadata and
	// version beside its key and value), at most importBatchBytes.
	maxBytes := int(min(importBatchBytes, db.store.MaxUpdateBytes()/2))
	for {
		var (
			last  []byte
			stats = map[string][2]int64{}
		)
		err := db.update(ctx, func(tx *storage.Txn) error {
			clear(stats)
			last = nil
			it := tx.Scan(lower, upper)
			defer it.Close()
			for n, written := 0, 0; n < importBatchEntities && written < maxBytes && it.Next(); n++ {
				pk, rk, err := decodeEntityKey(it.Key())
				if err != nil {
					return err
				}
				key := entityKey(ot.rec.ID, pk, rk)
				var record []byte
				if err := it.Value(func(v []byte) error { record = append([]byte(nil), v...); return nil }); err != nil {
					return err
				}
				var oldSize int64
				var old Properties
				found, err := tx.Get(key, func(v []byte) error {
					oldSize = int64(len(key) + len(v))
					if policy == ExistingMerge {
						old = Properties{}
						d := decoderPool.Get().(*recordDecoder)
						defer decoderPool.Put(d)
						_, err := d.decode(v, nil, old)
						return err
					}
					return nil
				})
				if err != nil {
					return err
				}
				last = append(last[:0], it.Key()...)
				if found {
					switch policy {
					case ExistingFail:
						return ErrEntityAlreadyExists.WithDetail("entity (%q, %q) of table %q was created during the import", pk, rk, t.name)
					case ExistingSkip:
						continue
					case ExistingMerge:
						d := decoderPool.Get().(*recordDecoder)
						props := Properties{}
						ticks, err := d.decode(record, nil, props)
						decoderPool.Put(d)
						if err != nil {
							return err
						}
						maps := old
						for name, v := range props {
							maps[name] = v
						}
						merged := Entity{PartitionKey: pk, RowKey: rk, Properties: maps}
						names, err := validateEntity(&merged)
						if err != nil {
							return err
						}
						record = encodeRecord(ticks, maps, names)
					}
				}
				if err := tx.Set(key, record); err != nil {
					return err
				}
				s := stats[pk]
				if !found {
					s[0]++
				}
				s[1] += int64(len(key)+len(record)) - oldSize
				stats[pk] = s
				written += len(key) + len(record)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for pk, s := range stats {
			ot.service.RecordWrite(pk, s[0], s[1])
		}
		if last == nil {
			return nil
		}
		lower = storage.SuccessorOf(last)
	}
}

// advanceClock moves the Timestamp clock past ticks, so that a write after an import that
// kept the file's Timestamps gets a newer one than any imported.
func (db *DB) advanceClock(ticks int64) {
	db.stampMu.Lock()
	db.lastTicks = max(db.lastTicks, ticks)
	db.stampMu.Unlock()
}

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
		o := *opts
		o.Namespaces = map[string]string{}
		return e.DB.importAllInto(ctx, r, &o)
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
		t         TableAPI
		created   bool
		skipping  bool
		actions   []Action
		lines     []int
		size      int
		props     []byte // the last account line's service properties
		propsLine int
	)
	setProps := func() error {
		sp, ok := s.(ServicePropertiesAPI)
		if !ok || props == nil {
			return nil
		}
		if err := sp.SetServiceProperties(ctx, props); err != nil && !unavailable(err) {
			var ie *ImportError
			if err = importError(propsLine, err); errors.As(err, &ie) {
				ie.Field = "serviceProperties"
			}
			return err
		}
		return nil
	}
	undo := func(err error) (Progress, error) {
		if created && !opts.BestEffort && t != nil {
			_ = s.DeleteTable(context.WithoutCancel(ctx), t.Name())
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
		defer func() { actions, lines, size = actions[:0], lines[:0], 0 }()
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
					continue
				}
				if opts.BestEffort && isServiceError(err) {
					im.p.Skipped++
					continue
				}
				return importError(lines[i], err)
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
			return undo(importError(0, err))
		}
		if rec.Kind == wire.RecordAccount && rec.ServiceProperties != nil {
			if len(rec.ServiceProperties) > maxPropertiesSize {
				return undo(&ImportError{Line: rec.Line, Field: "serviceProperties", Rule: fmt.Sprintf("%d bytes exceed %d", len(rec.ServiceProperties), maxPropertiesSize), Err: ErrInvalidInput})
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
			created = true
			if t, err = s.CreateTable(ctx, rec.Table); errors.Is(err, ErrTableAlreadyExists) {
				t, created = s.Table(rec.Table), false
			} else if err != nil {
				return undo(importError(rec.Line, err))
			}
			if err := setPolicies(ctx, t, &rec); err != nil {
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
				return undo(importError(rec.Line, err))
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
// is an error naming the line.
func setPolicies(ctx context.Context, t TableAPI, rec *wire.Record) error {
	acl, ok := t.(AccessPoliciesAPI)
	if !ok || rec.AccessPolicies == nil {
		return nil
	}
	policies, err := policiesOf(rec.AccessPolicies)
	if err != nil {
		return &ImportError{Line: rec.Line, Field: "accessPolicies", Rule: err.Error(), Err: ErrInvalidInput}
	}
	if err := checkPolicies(policies); err != nil {
		return &ImportError{Line: rec.Line, Field: "accessPolicies", Rule: err.Error(), Err: err}
	}
	if err := acl.SetAccessPolicies(ctx, policies); err != nil && !unavailable(err) {
		return &ImportError{Line: rec.Line, Field: "accessPolicies", Rule: err.Error(), Err: err}
	}
	return nil
}
