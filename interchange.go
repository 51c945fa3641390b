package tabula

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
)

// Export and import move tables in and out of Tabula as an interchange file: JSON Lines,
// one entity a line in the service's own JSON, grouped by table, with a trailer that counts
// what the file holds (the format is documented with package internal/wire, whose example
// file TestInterchangeExample keeps valid). Import also reads a fixture, one JSON document
// a person writes, mapping table names to arrays of entities (see Import). Both are beyond
// the service, which has no such operation. This file holds what export and import share;
// DB.Import is in import.go, DB.Export in export.go, and the moves to and from any
// ServiceAPI in transfer.go.

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
	// Tables counts the tables done, Entities the entities written (export) or imported
	// (import, not counting those Skipped) in all of them so far.
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
	// Skipped counts the entities an import left out: the lines a best-effort import
	// could not import, and the entities ExistingSkip kept as stored.
	Skipped int64
}

// Existing says what an import does with an entity whose keys a table holds already.
type Existing int

// The policies for entities that exist.
const (
	// ExistingFail stops the import with EntityAlreadyExists, naming the file's line.
	// It is the zero value.
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
	// Filter is a $filter an entity of the file must match to be imported, as the file has
	// it (its Timestamp is the file's); the others are left out, counted nowhere. Empty
	// imports every entity.
	Filter string
	// BestEffort leaves out an entity line that cannot be imported (counted in
	// Progress.Skipped) rather than stopping; and when the file is cut short or breaks its
	// grammar, the tables read whole before the defect are still imported.
	BestEffort bool
	// Exclusive says nothing else uses the DB while DB.Import runs: it was opened for the
	// import (tabula import --data, tabula serve --import before it listens, a new database
	// filled with fixtures). A table of the file that is new, or replaced (ExistingReplace),
	// and large (32,768 entities or 32 MiB) is then written straight into a level of the
	// store's tree, each byte once: on disk at less than half the CPU of the ordinary way
	// (BENCHMARKS.md, "Export and import"). A table in key order (as exports write it) is
	// written as it is read; what comes out of key order is sorted first, in runs of an
	// eighth of the MemoryBudget written to temporary files in the database's directory
	// (removed when the table is written, or the import fails), and written at the table's
	// end. Meanwhile every other use of the DB waits, so Progress must not use it. Each load
	// takes a level of the store's tree (there are six) until Badger's compactions move it
	// down. The rest of a table that leaves key order after its load began, with BestEffort
	// set; a database in memory or opened with SyncWrites; one whose tree has no level left;
	// and one whose writes since the last load would make a load rewrite much of what is
	// stored take the ordinary way. The guarantees are the same either way.
	Exclusive bool
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
		return fmt.Sprintf("line %d: %s", e.Line, e.Rule)
	}
	return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Rule)
}

func (e *ImportError) Unwrap() error { return e.Err }

// importError converts the decoder's and the engine's errors to an *ImportError at line,
// naming path (a fixture's JSON path of the entity) when there is one.
func importError(line int, path string, err error) error {
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
	return &ImportError{Line: line, Field: path, Rule: ruleOf(err), Err: err}
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
	dec   wire.Records
	opts  *ImportOptions
	every int64
	p     Progress
	pred  *odata.Predicate // Filter's, nil for none
}

// wants says whether the import keeps e, by the Filter.
func (im *importer) wants(e *Entity) bool {
	return im.pred == nil || im.pred.Match(fileEntity{e})
}

// fileEntity is an entity of a file as an import's Filter sees it.
type fileEntity struct{ e *Entity }

func (r fileEntity) Property(name string) (odata.Value, bool) {
	switch name {
	case propPartitionKey:
		return odata.StringValue(r.e.PartitionKey), true
	case propRowKey:
		return odata.StringValue(r.e.RowKey), true
	case propTimestamp:
		if r.e.Timestamp.IsZero() {
			return odata.Value{}, false
		}
		return odata.DateTimeValue(ticksOf(r.e.Timestamp)), true
	}
	p, ok := r.e.Properties[name]
	if !ok {
		return odata.Value{}, false
	}
	return ValueOf(p), true
}

func newImporter(r io.Reader, opts *ImportOptions) (*importer, error) {
	if opts.Existing < ExistingFail || opts.Existing > ExistingSkip {
		return nil, ErrInvalidInput.WithDetail("import: the policy for existing entities (%d) is none of fail, replace, merge and skip", opts.Existing)
	}
	im := &importer{dec: wire.NewRecords(r), opts: opts, every: int64(cmp.Or(opts.ProgressEvery, 10_000))}
	if opts.Filter != "" {
		expr, err := parseFilter(opts.Filter)
		if err != nil {
			return nil, err
		}
		im.pred = odata.Compile(expr)
	}
	return im, nil
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
		e.Properties[p.Name] = PropertyOf(p.Value)
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

// interchangePolicies converts a table's access policies to the interchange form.
func interchangePolicies(ps []AccessPolicy) []wire.InterchangeAccessPolicy {
	var out []wire.InterchangeAccessPolicy
	for _, p := range ps {
		ip := wire.InterchangeAccessPolicy{ID: p.ID, Permission: p.Permission}
		if !p.Start.IsZero() {
			ip.Start = formatTime(p.Start)
		}
		if !p.Expiry.IsZero() {
			ip.Expiry = formatTime(p.Expiry)
		}
		out = append(out, ip)
	}
	return out
}

// checkPolicies applies SetAccessPolicies' rules without storing anything.
func checkPolicies(ps []AccessPolicy) error {
	_, err := storedPolicies(ps)
	return err
}

// tablePolicies reads and checks the access policies of a table line, as an error naming
// the line.
func tablePolicies(rec *wire.Record) ([]AccessPolicy, error) {
	policies, err := policiesOf(rec.AccessPolicies)
	if err != nil {
		return nil, &ImportError{Line: rec.Line, Field: "accessPolicies", Rule: ruleOf(err), Err: ErrInvalidInput}
	}
	if err := checkPolicies(policies); err != nil {
		return nil, &ImportError{Line: rec.Line, Field: "accessPolicies", Rule: ruleOf(err), Err: err}
	}
	return policies, nil
}

// checkServiceProperties applies Set Table Service Properties' size limit to an account
// line's document.
func checkServiceProperties(rec *wire.Record) error {
	if len(rec.ServiceProperties) > maxPropertiesSize {
		return &ImportError{Line: rec.Line, Field: "serviceProperties", Rule: fmt.Sprintf("%d bytes exceed %d", len(rec.ServiceProperties), maxPropertiesSize), Err: ErrInvalidInput}
	}
	return nil
}

// The size of the import's batches: a staged batch's look-ups (see
// loader.checkRepeatsAndStored), and an ImportService's SubmitBulk.
const (
	importBatchEntities = 2000
	importBatchBytes    = 4 << 20
)

// ruleOf is err's text as the rule of an ImportError, without the package's prefix.
func ruleOf(err error) string {
	return strings.TrimPrefix(err.Error(), "tabula: ")
}

// readError is the error of the file's decoder after line: a defect of the file (an
// *ImportError), or one of the reader beneath it, named by the line it stopped after (a
// compressed file cut short ends in the middle of one).
func readError(line int, err error) error {
	var fe *wire.FormatError
	if errors.As(err, &fe) || isServiceError(err) {
		return importError(0, "", err)
	}
	return &ImportError{Line: line + 1, Rule: "reading the file: " + err.Error(), Truncated: errors.Is(err, io.ErrUnexpectedEOF), Err: err}
}
