package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/tabuladb/tabula/odata"
)

// The interchange format: Tabula's export and import files (see the package documentation
// for the format and an example file).

// InterchangeVersion is the version of the interchange format this build writes and reads.
const InterchangeVersion = 1

// MaxInterchangeLine is the longest line a Decoder reads, in bytes: an entity of the
// service's largest size (1 MiB of UTF-16, or 1 MiB of binaries, which base64 makes 4/3
// as long) in JSON, with room to spare. A longer line is an error, not an allocation.
const MaxInterchangeLine = 4 << 20

// controlPrefix starts every line that is not an entity. "@tabula" is not a valid property
// name, so no entity line can start with it.
const controlPrefix = `{"@tabula":`

// The kinds of control line, the value of their "@tabula" member.
const (
	lineHeader  = "export"
	lineAccount = "account"
	lineTable   = "table"
	lineEnd     = "end"
	lineTrailer = "eof"
)

// InterchangeAccessPolicy is a table's stored access policy as the interchange format
// carries it: the fields of the service's SignedIdentifier, times in the service's
// DateTime text, empty when unset.
type InterchangeAccessPolicy struct {
	ID         string `json:"Id"`
	Start      string `json:"Start,omitempty"`
	Expiry     string `json:"Expiry,omitempty"`
	Permission string `json:"Permission,omitempty"`
}

// control is every control line's members; each kind uses some of them.
type control struct {
	Kind              string                    `json:"@tabula"`
	Version           *int                      `json:"version,omitempty"`
	Account           *string                   `json:"account,omitempty"`
	Table             string                    `json:"table,omitempty"`
	ServiceProperties *string                   `json:"serviceProperties,omitempty"`
	AccessPolicies    []InterchangeAccessPolicy `json:"accessPolicies,omitempty"`
	Tables            *int64                    `json:"tables,omitempty"`
	Entities          *int64                    `json:"entities,omitempty"`
}

// Encoder writes an interchange file. Its calls must follow the file's grammar: Account
// (optional) and tables, each BeginTable, Entity…, EndTable; Close writes the trailer. It
// buffers; Close flushes. A written line is never partial in what Close or Flush leaves.
type Encoder struct {
	w        *bufio.Writer
	buf      []byte
	writer   Writer
	started  bool
	inTable  bool
	table    string
	account  string
	tables   int64 // tables ended
	entities int64 // entities written, in the file
	inTab    int64 // entities of the open table
	err      error
}

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder {
	return &Encoder{w: bufio.NewWriterSize(w, 256<<10), writer: Writer{Level: MinimalMetadata}}
}

// EncoderState is where an Encoder stands, to resume a file: the counts its trailer will
// hold and the table open at the time, if any.
type EncoderState struct {
	Tables, Entities int64
	// Account and Table name the open table, if InTable; TableEntities counts its entities.
	InTable        bool
	Account, Table string
	TableEntities  int64
}

// State returns the Encoder's state after the lines written so far.
func (e *Encoder) State() EncoderState {
	return EncoderState{Tables: e.tables, Entities: e.entities, InTable: e.inTable,
		Account: e.account, Table: e.table, TableEntities: e.inTab}
}

// ResumeEncoder returns an Encoder that continues a file whose lines up to a point are
// written already (the header included), at the state State returned there.
func ResumeEncoder(w io.Writer, s EncoderState) *Encoder {
	e := NewEncoder(w)
	e.started = true
	e.tables, e.entities, e.inTable, e.account, e.table, e.inTab = s.Tables, s.Entities, s.InTable, s.Account, s.Table, s.TableEntities
	return e
}

func (e *Encoder) line(c *control) error {
	if e.err != nil {
		return e.err
	}
	if !e.started && c.Kind != lineHeader {
		v := InterchangeVersion
		if err := e.line(&control{Kind: lineHeader, Version: &v}); err != nil {
			return err
		}
	}
	e.started = true
	// json.Encoder ends the line with its newline; HTML escaping would only obscure XML.
	enc := json.NewEncoder(e.w)
	enc.SetEscapeHTML(false)
	e.err = enc.Encode(c)
	return e.err
}

// Account writes an account's line, with its service-properties document when it has one
// (nil for none). It may come anywhere between tables.
func (e *Encoder) Account(account string, serviceProperties []byte) error {
	if e.inTable {
		return errors.New("wire: Account inside a table")
	}
	c := control{Kind: lineAccount, Account: &account}
	if serviceProperties != nil {
		s := string(serviceProperties)
		c.ServiceProperties = &s
	}
	return e.line(&c)
}

// BeginTable writes a table's header line: its account (the empty string for the root
// namespace), its name, its stored access policies.
func (e *Encoder) BeginTable(account, table string, policies []InterchangeAccessPolicy) error {
	if e.inTable {
		return errors.New("wire: BeginTable inside a table")
	}
	if err := e.line(&control{Kind: lineTable, Account: &account, Table: table, AccessPolicies: policies}); err != nil {
		return err
	}
	e.inTable, e.account, e.table, e.inTab = true, account, table, 0
	return nil
}

// Entity writes one entity of the open table, in the form of an entity of a query
// response at minimal metadata: odata.etag (derived from the Timestamp), the keys, the
// Timestamp, the properties in name order, each annotated where JSON cannot carry its type.
func (e *Encoder) Entity(ent *Entity) error {
	if e.err != nil {
		return e.err
	}
	if !e.inTable {
		return errors.New("wire: Entity outside a table")
	}
	ticks := odata.TicksFromTime(ent.Timestamp)
	etag := ent.ETag
	ent.ETag = string(AppendETag(e.buf[:0], ticks))
	e.buf = append(e.writer.AppendEntity(e.buf[:0], ent, false), '\n')
	ent.ETag = etag
	if _, e.err = e.w.Write(e.buf); e.err != nil {
		return e.err
	}
	if cap(e.buf) > 1<<20 {
		e.buf = nil // one huge entity does not keep its buffer for the rest of the file
	}
	e.entities++
	e.inTab++
	return nil
}

// EntityLine writes one entity of the open table that the caller encoded itself, as
// Entity would have: AppendEntityHead, AppendEntityProperty for each property in name
// order, then "}\n". It is for a caller that transcodes stored entities without building
// an Entity; the line is copied, so it may be reused at once.
func (e *Encoder) EntityLine(line []byte) error {
	if e.err != nil {
		return e.err
	}
	if !e.inTable {
		return errors.New("wire: Entity outside a table")
	}
	if _, e.err = e.w.Write(line); e.err != nil {
		return e.err
	}
	e.entities++
	e.inTab++
	return nil
}

// AppendEntityHead writes the start of an entity line as Entity writes it, up to its
// Timestamp: {"odata.etag":…,"PartitionKey":…,"RowKey":…,"Timestamp":…, for an entity
// written at ticks.
func AppendEntityHead(b []byte, pk, rk string, ticks int64) []byte {
	// The time's text, written once: the ETag is AppendETag's, the same text with its colons
	// percent-encoded, JSON-escaped (only its quotes need it, unless the ticks are beyond the
	// years 0 to 9999, as only a corrupt record's can be: then the generic way escapes).
	var scratch [48]byte
	text := AppendTime(scratch[:0], ticks)
	if !plainText(text) {
		b = append(b, `{"odata.etag":`...)
		b = AppendString(b, string(AppendETag(nil, ticks)))
	} else {
		b = append(b, `{"odata.etag":"W/\"datetime'`...)
		// YYYY-MM-DDTHH:MM:SS…: the colons are at 13 and 16, whatever the digits hold.
		b = append(b, text[:13]...)
		b = append(b, "%3A"...)
		b = append(b, text[14:16]...)
		b = append(b, "%3A"...)
		b = append(b, text[17:]...)
		b = append(b, `'\""`...)
	}
	b = append(b, `,"PartitionKey":`...)
	b = AppendString(b, pk)
	b = append(b, `,"RowKey":`...)
	b = AppendString(b, rk)
	b = append(b, `,"Timestamp":"`...)
	b = append(b, text...)
	return append(b, '"')
}

// plainText reports whether no byte of b needs escaping in a JSON string.
func plainText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// AppendEntityProperty writes one property of an entity line after AppendEntityHead, as
// Entity writes it: a comma, then the member with its type annotation where JSON cannot
// carry its type.
func AppendEntityProperty(b []byte, name string, v *odata.Value) []byte {
	return appendProperty(b, true, name, v, annotateNeeded)
}

// EndTable writes the open table's end line, with its count of entities.
func (e *Encoder) EndTable() error {
	if !e.inTable {
		return errors.New("wire: EndTable outside a table")
	}
	n := e.inTab
	if err := e.line(&control{Kind: lineEnd, Account: &e.account, Table: e.table, Entities: &n}); err != nil {
		return err
	}
	e.inTable = false
	e.tables++
	return nil
}

// Flush writes the buffered lines through, so that the file holds whole lines only.
func (e *Encoder) Flush() error {
	if e.err != nil {
		return e.err
	}
	e.err = e.w.Flush()
	return e.err
}

// Close ends the open table, if any, writes the trailer with the file's counts, and
// flushes. It does not close the underlying writer.
func (e *Encoder) Close() error {
	if e.inTable {
		if err := e.EndTable(); err != nil {
			return err
		}
	}
	t, n := e.tables, e.entities
	if err := e.line(&control{Kind: lineTrailer, Tables: &t, Entities: &n}); err != nil {
		return err
	}
	return e.Flush()
}

// RecordKind is what a line of an interchange file is.
type RecordKind uint8

// The kinds of record a Decoder returns.
const (
	// RecordAccount: an account, with its service properties when the file has them.
	RecordAccount RecordKind = iota + 1
	// RecordTable: a table begins; Account, Table and AccessPolicies are set.
	RecordTable
	// RecordEntity: an entity of the current table.
	RecordEntity
	// RecordTableEnd: the current table ends, all its entities read and counted.
	RecordTableEnd
)

// Record is one record of an interchange file.
type Record struct {
	Kind RecordKind
	// Line is the record's line number, from 1.
	Line int
	// Account and Table name the table of a RecordTable, RecordEntity and RecordTableEnd,
	// and the account of a RecordAccount.
	Account, Table string
	// ServiceProperties is a RecordAccount's document, nil when the file has none.
	ServiceProperties []byte
	// AccessPolicies are a RecordTable's stored access policies.
	AccessPolicies []InterchangeAccessPolicy
	// Entity is a RecordEntity's entity; ETag is left empty (it is the Timestamp's).
	Entity Entity
	// Entities counts a RecordTableEnd's entities.
	Entities int64
	// Path is the JSON path of a fixture's table or entity ($.Orders[3]); empty in an
	// interchange file, whose lines name them.
	Path string
}

// FormatError is a line of an interchange file that breaks its rules, or a file that ends
// early. It names the line, the field and the rule.
type FormatError struct {
	// Line is the line's number, from 1; for a truncated file, the line after the last.
	Line int
	// Field is the member at fault, when the rule is about one.
	Field string
	// Rule says what the line breaks.
	Rule string
	// EntityLine says the line is an entity line of a table, counted as one: the Decoder
	// can go on with the next line, for a caller that leaves bad entities out.
	EntityLine bool
}

func (e *FormatError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Rule)
	}
	return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Rule)
}

// ErrTruncated is matched (errors.Is) by the FormatError of a file that ends before its
// trailer: a file cut short.
var ErrTruncated = errors.New("interchange file truncated")

// Is makes a truncation's FormatError match ErrTruncated.
func (e *FormatError) Is(target error) bool {
	return target == ErrTruncated && e.Field == "" && e.Rule == truncatedRule
}

const truncatedRule = "the file ends before its trailer line (" + controlPrefix + `"eof",…}): it was cut short`

// Decoder reads an interchange file line by line, checking its grammar and counts, holding
// one line at a time.
type Decoder struct {
	r        *bufio.Reader
	line     int
	buf      []byte
	unended  bool // the last line read has no newline: the input ended within it
	started  bool
	done     bool
	inTable  bool
	account  string
	table    string
	inTab    int64
	tables   int64
	entities int64
	members  []Member // the last entity line's, reused for the next
}

// NewDecoder returns a Decoder reading r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 256<<10)}
}

func (d *Decoder) fail(field, rule string) error {
	return &FormatError{Line: d.line, Field: field, Rule: rule}
}

// readLine reads the next line without its end, or io.EOF at the end of the input.
func (d *Decoder) readLine() ([]byte, error) {
	d.buf = d.buf[:0]
	for {
		chunk, err := d.r.ReadSlice('\n')
		d.buf = append(d.buf, chunk...)
		if len(d.buf) > MaxInterchangeLine+1 {
			d.line++
			return nil, d.fail("", fmt.Sprintf("the line is longer than %d bytes", MaxInterchangeLine))
		}
		switch {
		case err == nil:
			d.line++
			return bytes.TrimSuffix(bytes.TrimSuffix(d.buf, []byte{'\n'}), []byte{'\r'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(d.buf) == 0 {
				return nil, io.EOF
			}
			d.line++
			d.unended = true
			return d.buf, nil // a last line without its newline
		default:
			return nil, err
		}
	}
}

// Next returns the next record. At the end of a whole file, one that ends with its trailer
// and whose counts all agree, it returns io.EOF; any other defect is a *FormatError, and
// a file cut short one that matches ErrTruncated. An error from the reader is returned as
// it is.
func (d *Decoder) Next() (Record, error) {
	for {
		line, err := d.readLine()
		if err == io.EOF {
			if !d.done {
				return Record{}, &FormatError{Line: d.line + 1, Rule: truncatedRule}
			}
			return Record{}, io.EOF
		}
		if err != nil {
			return Record{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue // blank lines are allowed, and mean nothing
		}
		if d.done {
			return Record{}, d.fail("", "a line follows the trailer")
		}
		trimmed := bytes.TrimLeft(line, " \t")
		if d.unended && !bytes.HasPrefix(trimmed, []byte(controlPrefix+`"`+lineTrailer+`"`)) {
			// Only the trailer may lack its newline; any other line was cut.
			return Record{}, &FormatError{Line: d.line, Rule: truncatedRule}
		}
		if !bytes.HasPrefix(trimmed, []byte(controlPrefix)) {
			return d.entity(line)
		}
		rec, skip, err := d.control(line)
		if err != nil || !skip {
			return rec, err
		}
	}
}

func (d *Decoder) entity(line []byte) (Record, error) {
	if !d.started {
		return Record{}, d.fail("", `the file must start with its header line (`+controlPrefix+`"export","version":1})`)
	}
	if !d.inTable {
		return Record{}, d.fail("", "an entity outside a table: a table line must come first")
	}
	// The line counts as one of the table's entities, good or bad.
	d.inTab++
	d.entities++
	bad := func(field, rule string) (Record, error) {
		return Record{}, &FormatError{Line: d.line, Field: field, Rule: rule, EntityLine: true}
	}
	// The members are read into the last line's slice: a line's entity holds their strings,
	// not the slice.
	clear(d.members)
	ms, err := appendObject(d.members[:0], line)
	if err != nil {
		return bad("", err.Error())
	}
	d.members = ms
	e, err := decodeMembers(ms, KeysFromBody)
	if err != nil {
		var de *DecodeError
		if errors.As(err, &de) && de.Reason == MissingKeys {
			return bad("PartitionKey, RowKey", "an entity must carry both keys")
		}
		return bad("", err.Error())
	}
	// The Timestamp, which a body's decoding ignores, is required here and read strictly.
	found := false
	for _, m := range ms {
		if m.Name != "Timestamp" {
			continue
		}
		found = true
		if m.Kind != KindString {
			return bad("Timestamp", "must be a DateTime string")
		}
		t, err := ParseDateTime(m.Text)
		if err != nil {
			return bad("Timestamp", fmt.Sprintf("%q is not a DateTime: %v", m.Text, err))
		}
		e.Timestamp = t
	}
	if !found {
		return bad("Timestamp", "an entity must carry its Timestamp")
	}
	return Record{Kind: RecordEntity, Line: d.line, Account: d.account, Table: d.table, Entity: e}, nil
}

// control reads a control line; skip says it is one the caller does not see (the header).
func (d *Decoder) control(line []byte) (Record, bool, error) {
	var c control
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return Record{}, false, d.fail(ute.Field, "must be a JSON "+ute.Type.String())
		}
		return Record{}, false, d.fail("", "not a control line: "+err.Error())
	}
	if dec.More() {
		return Record{}, false, d.fail("", "text follows the line's object")
	}
	if !d.started && c.Kind != lineHeader {
		return Record{}, false, d.fail("@tabula", `the file must start with its header line (`+controlPrefix+`"export","version":1})`)
	}
	need := func(ok bool, field string) error {
		if !ok {
			return d.fail(field, "required in a "+strconv.Quote(c.Kind)+" line")
		}
		return nil
	}
	switch c.Kind {
	case lineHeader:
		if d.started {
			return Record{}, false, d.fail("@tabula", "a second header line")
		}
		if err := need(c.Version != nil, "version"); err != nil {
			return Record{}, false, err
		}
		if *c.Version != InterchangeVersion {
			return Record{}, false, d.fail("version", fmt.Sprintf("version %d is not %d, the one this build reads", *c.Version, InterchangeVersion))
		}
		d.started = true
		return Record{}, true, nil
	case lineAccount:
		if d.inTable {
			return Record{}, false, d.fail("@tabula", "an account line inside table "+strconv.Quote(d.table))
		}
		if err := need(c.Account != nil, "account"); err != nil {
			return Record{}, false, err
		}
		r := Record{Kind: RecordAccount, Line: d.line, Account: *c.Account}
		if c.ServiceProperties != nil {
			r.ServiceProperties = []byte(*c.ServiceProperties)
		}
		return r, false, nil
	case lineTable:
		if d.inTable {
			return Record{}, false, d.fail("@tabula", "table "+strconv.Quote(c.Table)+" begins inside table "+strconv.Quote(d.table)+", which has no end line")
		}
		if err := need(c.Account != nil, "account"); err != nil {
			return Record{}, false, err
		}
		if err := need(c.Table != "", "table"); err != nil {
			return Record{}, false, err
		}
		for i, p := range c.AccessPolicies {
			field := fmt.Sprintf("accessPolicies[%d]", i)
			if p.ID == "" {
				return Record{}, false, d.fail(field+".Id", "required")
			}
			for _, t := range []struct{ name, v string }{{"Start", p.Start}, {"Expiry", p.Expiry}} {
				if t.v != "" {
					if _, err := ParseDateTime(t.v); err != nil {
						return Record{}, false, d.fail(field+"."+t.name, fmt.Sprintf("%q is not a DateTime", t.v))
					}
				}
			}
		}
		d.inTable, d.account, d.table, d.inTab = true, *c.Account, c.Table, 0
		return Record{Kind: RecordTable, Line: d.line, Account: d.account, Table: d.table, AccessPolicies: c.AccessPolicies}, false, nil
	case lineEnd:
		if !d.inTable {
			return Record{}, false, d.fail("@tabula", "an end line outside a table")
		}
		if (c.Account != nil && *c.Account != d.account) || c.Table != d.table {
			return Record{}, false, d.fail("table", fmt.Sprintf("the end line names %q, not %q, the table it ends", c.Table, d.table))
		}
		if err := need(c.Entities != nil, "entities"); err != nil {
			return Record{}, false, err
		}
		if *c.Entities != d.inTab {
			return Record{}, false, d.fail("entities", fmt.Sprintf("the table's end line counts %d entities, but %d were read: lines are missing or extra", *c.Entities, d.inTab))
		}
		d.inTable = false
		d.tables++
		return Record{Kind: RecordTableEnd, Line: d.line, Account: d.account, Table: d.table, Entities: d.inTab}, false, nil
	case lineTrailer:
		if d.inTable {
			return Record{}, false, d.fail("@tabula", "the trailer inside table "+strconv.Quote(d.table)+", which has no end line")
		}
		if err := need(c.Tables != nil, "tables"); err != nil {
			return Record{}, false, err
		}
		if err := need(c.Entities != nil, "entities"); err != nil {
			return Record{}, false, err
		}
		if *c.Tables != d.tables || *c.Entities != d.entities {
			return Record{}, false, d.fail("tables, entities", fmt.Sprintf("the trailer counts %d tables and %d entities, but %d and %d were read", *c.Tables, *c.Entities, d.tables, d.entities))
		}
		d.done = true
		return Record{}, true, nil
	}
	return Record{}, false, d.fail("@tabula", fmt.Sprintf("%q is not a kind of line (export, account, table, end, eof)", c.Kind))
}
