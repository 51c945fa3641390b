package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// The fixture format: data a person writes by hand, for tests and for loading a server.
// One JSON document, an object mapping each table's name to the array of its entities, each
// entity an object in the service's own JSON (the form an Insert Entity body takes), with
// its PartitionKey and RowKey, its properties, and <Name>@odata.type wherever JSON alone
// would lose a type. No header line, no counts, no Timestamps (one given is kept, where an
// import keeps Timestamps):
//
//	{
//	  "Orders": [
//	    {"PartitionKey": "alice", "RowKey": "0001", "Paid": true, "Total": 12.5,
//	     "Units@odata.type": "Edm.Int64", "Units": "9223372036854775807"}
//	  ],
//	  "Empty": []
//	}
//
// Tables of several accounts (for a server that serves several) go in an object per
// account, in place of the arrays: {"shop": {"Orders": […]}, "audit": {"Events": […]}}; a
// table beside them, an array at the top, is the account "" (a database's root namespace,
// the first account's on a server).
//
// A file's kind is told by its first line: an interchange file starts with its header
// line ({"@tabula":"export",…}), so anything else is read as a fixture. A defect is a
// *FormatError naming the line and the JSON path of the value at fault ($.Orders[0].Units).

// Records reads the records of an interchange file or a fixture: a Decoder or a
// FixtureDecoder.
type Records interface {
	Next() (Record, error)
}

// NewRecords returns the reader of r's records, by the kind of file r holds: an
// interchange file when its first non-blank bytes are the header line's, else a fixture.
func NewRecords(r io.Reader) Records {
	br := bufio.NewReaderSize(r, 256<<10)
	head, _ := br.Peek(4096) // fewer at the input's end; an error shows again when read
	if bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte(controlPrefix)) {
		return NewDecoder(br)
	}
	return NewFixtureDecoder(br)
}

// MaxFixtureEntity is the longest entity a FixtureDecoder reads, in bytes of JSON: as
// MaxInterchangeLine, the service's largest entity with room to spare.
const MaxFixtureEntity = MaxInterchangeLine

// FixtureDecoder reads a fixture (see NewRecords for the format), yielding the records an
// interchange file of the same tables would: for each table a RecordTable, its entities and
// a RecordTableEnd, of its account ("" for a table at the top). It holds one entity at a
// time.
type FixtureDecoder struct {
	lines *lineCounter
	dec   *json.Decoder
	state int // fixtureStart, fixtureTables, fixtureEntities, fixtureDone
	// account is the account whose object is being read, inAccount whether one is.
	account   string
	inAccount bool
	table     string
	index     int // of the next entity in the table's array
	queue     []Record
	err       error
}

const (
	fixtureStart = iota
	fixtureTables
	fixtureEntities
	fixtureDone
)

// NewFixtureDecoder returns a FixtureDecoder reading r.
func NewFixtureDecoder(r io.Reader) *FixtureDecoder {
	lc := &lineCounter{r: r}
	dec := json.NewDecoder(lc)
	dec.UseNumber()
	return &FixtureDecoder{lines: lc, dec: dec}
}

// lineCounter notes where each line of what it reads begins, so that an offset into the
// input can be named by its line.
type lineCounter struct {
	r      io.Reader
	read   int64
	starts []int64 // offsets of the lines after the first
}

func (l *lineCounter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			l.starts = append(l.starts, l.read+int64(i)+1)
		}
	}
	l.read += int64(n)
	return n, err
}

// line is the line, from 1, of the byte at offset.
func (l *lineCounter) line(offset int64) int {
	return 1 + sort.Search(len(l.starts), func(i int) bool { return l.starts[i] > offset })
}

func (d *FixtureDecoder) fail(offset int64, path, rule string, entity bool) error {
	d.err = &FormatError{Line: d.lines.line(offset), Field: path, Rule: rule, EntityLine: entity}
	if !entity {
		d.state = fixtureDone
	}
	return d.err
}

// syntax converts the JSON decoder's error to a FormatError at the offset it names.
func (d *FixtureDecoder) syntax(err error, path string) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return d.fail(se.Offset, path, "not JSON: "+se.Error(), false)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		d.err = &FormatError{Line: d.lines.line(d.lines.read) + 1, Field: path, Rule: "the document ends early: it was cut short"}
		d.state = fixtureDone
		return d.err
	}
	d.err = err
	return err
}

// Next returns the next record; io.EOF after the whole document has been read.
func (d *FixtureDecoder) Next() (Record, error) {
	for {
		if len(d.queue) > 0 {
			r := d.queue[0]
			d.queue = d.queue[1:]
			return r, nil
		}
		if d.state == fixtureDone {
			if d.err != nil {
				return Record{}, d.err
			}
			return Record{}, io.EOF
		}
		if err := d.step(); err != nil {
			var fe *FormatError
			if errors.As(err, &fe) && fe.EntityLine {
				d.err = nil // the next entity may be read after a bad one
			}
			return Record{}, err
		}
	}
}

// step reads the next part of the document, queueing the records it gives.
func (d *FixtureDecoder) step() error {
	switch d.state {
	case fixtureStart:
		tok, err := d.dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return d.fail(0, "$", "the file is empty: a fixture is a JSON object mapping table names to arrays of entities", false)
			}
			return d.syntax(err, "$")
		}
		if tok != json.Delim('{') {
			return d.fail(d.dec.InputOffset()-1, "$", "a fixture is a JSON object mapping table names to arrays of entities", false)
		}
		d.state = fixtureTables
	case fixtureTables:
		if !d.dec.More() {
			if _, err := d.dec.Token(); err != nil { // the closing brace
				return d.syntax(err, "$")
			}
			if d.inAccount {
				d.account, d.inAccount = "", false
				return nil
			}
			if tok, err := d.dec.Token(); err != io.EOF {
				if err != nil {
					return d.syntax(err, "$")
				}
				return d.fail(d.dec.InputOffset(), "$", fmt.Sprintf("%v follows the document", tok), false)
			}
			d.state = fixtureDone
			return nil
		}
		tok, err := d.dec.Token()
		if err != nil {
			return d.syntax(err, "$")
		}
		name := tok.(string) // an object's keys are strings
		start := d.dec.InputOffset()
		path := d.path(name)
		tok, err = d.dec.Token()
		if err != nil {
			return d.syntax(err, path)
		}
		if tok == json.Delim('{') && !d.inAccount {
			d.account, d.inAccount = name, true
			return nil
		}
		if tok != json.Delim('[') {
			rule := "must be an array of entities, or an account's object of tables"
			if d.inAccount {
				rule = "must be an array of entities"
			}
			return d.fail(start, path, rule, false)
		}
		d.table, d.index = name, 0
		d.queue = append(d.queue, Record{Kind: RecordTable, Line: d.lines.line(start), Account: d.account, Table: name, Path: path})
		d.state = fixtureEntities
	case fixtureEntities:
		path := d.path(d.table)
		if !d.dec.More() {
			if _, err := d.dec.Token(); err != nil { // the closing bracket
				return d.syntax(err, path)
			}
			d.queue = append(d.queue, Record{Kind: RecordTableEnd, Line: d.lines.line(d.dec.InputOffset() - 1), Account: d.account, Table: d.table, Entities: int64(d.index), Path: path})
			d.state = fixtureTables
			return nil
		}
		path += "[" + strconv.Itoa(d.index) + "]"
		d.index++
		var raw json.RawMessage
		if err := d.dec.Decode(&raw); err != nil {
			return d.syntax(err, path)
		}
		start := d.dec.InputOffset() - int64(len(raw))
		rec, err := d.entity(raw, start, path)
		if err != nil {
			return err
		}
		d.queue = append(d.queue, rec)
	}
	return nil
}

// entity reads one entity of the current table.
func (d *FixtureDecoder) entity(raw []byte, start int64, path string) (Record, error) {
	bad := func(field, rule string) (Record, error) {
		p := path
		if field != "" {
			p += "." + field
		}
		return Record{}, d.fail(start, p, rule, true)
	}
	if len(raw) > MaxFixtureEntity {
		return bad("", fmt.Sprintf("the entity is longer than %d bytes of JSON", MaxFixtureEntity))
	}
	if len(raw) == 0 || raw[0] != '{' {
		return bad("", "an entity must be a JSON object")
	}
	ms, err := appendObject(nil, raw)
	if err != nil {
		return bad("", err.Error())
	}
	e, err := decodeMembers(ms, KeysFromBody)
	if err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			if de.Reason == MissingKeys {
				return bad("", "an entity must carry both PartitionKey and RowKey")
			}
			return bad("", de.Detail)
		}
		return bad("", err.Error())
	}
	for _, m := range ms {
		if m.Name != "Timestamp" {
			continue
		}
		if m.Kind != KindString {
			return bad("Timestamp", "must be a DateTime string, or left out")
		}
		t, err := ParseDateTime(m.Text)
		if err != nil {
			return bad("Timestamp", fmt.Sprintf("%q is not a DateTime: %v", m.Text, err))
		}
		e.Timestamp = t
	}
	return Record{Kind: RecordEntity, Line: d.lines.line(start), Account: d.account, Table: d.table, Entity: e, Path: path}, nil
}

// path is the JSON path of the member name of the object being read.
func (d *FixtureDecoder) path(name string) string {
	if d.inAccount {
		return "$." + d.account + "." + name
	}
	return "$." + name
}
