package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"github.com/tabuladb/tabula"
)

// An entity group transaction arrives as POST $batch: a multipart/mixed document holding one change
// set, itself multipart/mixed, whose parts are HTTP requests with absolute URLs (REST docs:
// "Performing entity group transactions"). A batch may instead hold a single point query outside
// any change set.

// subRequest is one HTTP request inside a batch.
type subRequest struct {
	method    string
	res       resource
	header    textproto.MIMEHeader
	query     url.Values
	body      []byte
	base      string // scheme://host/account of its URL, for Location and odata links
	contentID string // the part's Content-ID, echoed in a success part
}

// batchOp is a change-set operation: its request and the engine action it becomes.
type batchOp struct {
	req    *subRequest // nil when the request could not be read at all
	action tabula.Action
	prefer string
	level  level
}

func (c *call) batch() {
	body, err := c.readBody()
	if err != nil {
		c.fail(err)
		return
	}
	mt, params, perr := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if perr != nil || mt != "multipart/mixed" || params["boundary"] == "" {
		c.fail(invalidInput(msgBatchNotMultipart, "Content-Type "+c.r.Header.Get("Content-Type")))
		return
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	part, rerr := mr.NextRawPart()
	if rerr != nil {
		c.fail(invalidInput(msgBatchNotMultipart, "reading the batch: "+rerr.Error()))
		return
	}
	data, rerr := readPart(part, make([]byte, 0, len(body)))
	if rerr != nil {
		c.fail(invalidInput(msgBatchNotMultipart, "reading the batch: "+rerr.Error()))
		return
	}
	inner := part.Header.Get("Content-Type")
	contentID := part.Header.Get("Content-ID")
	if _, rerr := mr.NextRawPart(); rerr != io.EOF {
		c.fail(invalidInput(msgOneChangeSet, "a batch must hold exactly one change set, or one query"))
		return
	}
	pmt, pparams, perr := mime.ParseMediaType(inner)
	switch {
	case perr == nil && pmt == "multipart/mixed" && pparams["boundary"] != "":
		// The request body is read no further: its buffer, at least as long as data,
		// becomes the change set's arena rather than a new one.
		c.changeSet(data, pparams["boundary"], body[:0])
	case perr == nil && pmt == "application/http":
		c.batchQuery(data, contentID)
	default:
		c.fail(invalidInput(msgBatchNotMultipart, "batch part Content-Type "+inner))
	}
}

// actionOperations is the operation a SAS must allow for each kind of change-set action.
var actionOperations = map[tabula.ActionKind]operation{tabula.ActionInsert: opInsert, tabula.ActionUpdate: opUpdate,
	tabula.ActionUpsert: opUpsert, tabula.ActionDelete: opDelete}

// readPart appends a part's bytes to buf, whose capacity is expected to hold them all.
func readPart(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// changeSet runs the operations of a change set as one transaction. arena is an empty
// buffer, no longer in use and not overlapping data, with room for data's length.
func (c *call) changeSet(data []byte, boundary string, arena []byte) {
	mr := multipart.NewReader(bytes.NewReader(data), boundary)
	var ops []batchOp
	// The parts are read into one buffer as long as the change set, which they cannot
	// outgrow: each part's bytes are a slice of it, with no copy per part.
	if cap(arena) < len(data) {
		arena = make([]byte, 0, len(data))
	}
	var (
		table    string
		firstBad = -1 // index of the first operation that could not become an action
		badErr   *tabula.Error
	)
	for {
		part, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		var pdata []byte
		if err == nil {
			pdata, err = readPart(part, arena[len(arena):])
			if cap(pdata) == cap(arena)-len(arena) {
				arena = arena[:len(arena)+len(pdata)]
			}
			pdata = pdata[:len(pdata):len(pdata)]
		}
		if err != nil {
			c.fail(invalidInput(msgBatchNotMultipart, "reading the change set: "+err.Error()))
			return
		}
		op, opErr := c.changeSetOp(pdata, part.Header.Get("Content-ID"))
		if opErr == nil {
			if len(ops) == 0 || table == "" {
				table = op.req.res.table
			} else if !strings.EqualFold(op.req.res.table, table) {
				opErr = withMessage(tabula.ErrCommandsInBatchActOnDifferentPartitions, tabula.ErrCommandsInBatchActOnDifferentPartitions.Message,
					"operation "+strconv.Itoa(len(ops))+" addresses table "+op.req.res.table+", not "+table)
			}
		}
		if opErr == nil && op.req != nil {
			// A SAS must allow every operation; the service refuses the whole batch if not.
			kind := actionOperations[op.action.Kind]
			if err := c.checkEntityAccess(kind, op.req.res.table, op.action.Entity.PartitionKey, op.action.Entity.RowKey); err != nil {
				c.fail(err)
				return
			}
		}
		if opErr != nil && firstBad < 0 {
			firstBad, badErr = len(ops), opErr
		}
		ops = append(ops, op)
	}
	if firstBad == 0 {
		c.changeSetFailure(ops, 0, badErr)
		return
	}
	n := len(ops)
	if firstBad > 0 {
		n = firstBad
	}
	actions := make([]tabula.Action, n, n+1)
	for i := range actions {
		actions[i] = ops[i].action
	}
	if firstBad > 0 {
		// The service reads the whole change set before it runs any of it, so an earlier
		// operation's broken rule is reported before this one's unreadable request. The
		// engine checks every rule before writing anything and refuses an Action without a
		// Kind at its index: ending the actions with one makes it report any earlier
		// failure, or else fail at firstBad, with nothing written.
		actions = append(actions, tabula.Action{})
	}
	results, err := c.ns.Table(table).SubmitTransaction(c.r.Context(), actions)
	var te *tabula.TransactionError
	switch {
	case errors.As(err, &te):
		e := te.Err
		if te.Index == firstBad {
			e = badErr
		}
		c.changeSetFailure(ops, te.Index, e)
	case err != nil:
		c.fail(serviceError(err))
	default:
		c.changeSetSuccess(ops, results)
	}
}

// changeSetOp reads one change-set request into an action.
func (c *call) changeSetOp(data []byte, contentID string) (batchOp, *tabula.Error) {
	req, err := c.parseSubRequest(data)
	if err != nil {
		return batchOp{}, err
	}
	req.contentID = contentID
	op := batchOp{req: req, prefer: preferenceOf(req.header)}
	if op.level, err = negotiateCommon(req.query.Get("$format"), req.header.Get("Accept")); err != nil {
		return op, err
	}
	switch {
	case req.res.kind == resEntitySet && req.method == http.MethodPost:
		if err := checkBodyType(req.header.Get("Content-Type")); err != nil {
			return op, err
		}
		e, err := decodeEntity(req.body, keysFromBody)
		if err != nil {
			return op, err
		}
		op.action = tabula.InsertAction(e)
	case req.res.kind == resEntity && (req.method == http.MethodPut || req.method == "MERGE" || req.method == http.MethodPatch):
		mode, verb := tabula.Replace, "PUT"
		if req.method != http.MethodPut {
			mode, verb = tabula.Merge, "MERGE"
		}
		ifMatch, err := conditions(http.Header(req.header), verb)
		if err != nil {
			return op, err
		}
		if err := checkBodyType(req.header.Get("Content-Type")); err != nil {
			return op, err
		}
		e, err := decodeEntity(req.body, keysFromURL)
		if err != nil {
			return op, err
		}
		e.PartitionKey, e.RowKey = req.res.pk, req.res.rk
		if ifMatch != "" {
			op.action = tabula.UpdateAction(e, mode, ifMatch)
		} else {
			op.action = tabula.UpsertAction(e, mode)
		}
	case req.res.kind == resEntity && req.method == http.MethodDelete:
		ifMatch, err := conditions(http.Header(req.header), "DELETE")
		if err != nil {
			return op, err
		}
		if ifMatch == "" {
			return op, invalidInput(msgIfMatchMandatory, "DELETE needs If-Match (an ETag, or *)")
		}
		op.action = tabula.DeleteAction(req.res.pk, req.res.rk, ifMatch)
	case req.res.kind == resEntity && req.method == http.MethodGet:
		return op, invalidInput(msgQueryInChangeSet, "a GET inside a change set")
	default:
		return op, withDetail(errMethodNotAllowed, req.method+" on this resource cannot be part of a change set")
	}
	return op, nil
}

// parseSubRequest reads "METHOD URL HTTP/1.1", headers, a blank line and the body. The body
// is everything after the headers: clients differ on Content-Length and on blank lines
// around the JSON, which the JSON reader skips.
func (c *call) parseSubRequest(data []byte) (*subRequest, *tabula.Error) {
	bad := func(why string) (*subRequest, *tabula.Error) {
		return nil, invalidInput("", "batch operation: "+why)
	}
	src := bytes.NewReader(data)
	// One reader serves all of a batch's sub-requests: its 1 KiB buffer is reused, not made
	// per operation. Longer lines are read in pieces.
	if c.subReader == nil {
		c.subReader = bufio.NewReaderSize(src, 1024)
	} else {
		c.subReader.Reset(src)
	}
	br := c.subReader
	tp := textproto.NewReader(br)
	var line string
	for line == "" {
		l, err := tp.ReadLine()
		if err != nil {
			return bad("no request line")
		}
		line = strings.TrimSpace(l)
	}
	fields := strings.Fields(line)
	if len(fields) != 3 || !strings.HasPrefix(fields[2], "HTTP/") {
		return bad("malformed request line " + strconv.Quote(line))
	}
	header, err := tp.ReadMIMEHeader()
	if err != nil && err != io.EOF {
		return bad("malformed headers: " + err.Error())
	}
	// The body is the rest of data, after what the header reader consumed.
	body := data[len(data)-src.Len()-br.Buffered():]
	u, err := url.ParseRequestURI(fields[1])
	if err != nil {
		return bad("malformed URL " + strconv.Quote(fields[1]))
	}
	account, rest, perr := splitAccount(u.EscapedPath())
	if perr != nil {
		return nil, perr
	}
	if account != c.account {
		return nil, invalidInput(msgBatchAccountMissing, "the operation's URL is for account "+account)
	}
	res, perr := parseResource(rest)
	if perr != nil {
		return nil, perr
	}
	query, err := parseQuery(u.RawQuery)
	if err != nil {
		return bad("malformed query string")
	}
	req := &subRequest{method: fields[0], res: res, header: header, query: query, body: body, base: c.base}
	if u.Host != "" {
		req.base = u.Scheme + "://" + u.Host + "/" + url.PathEscape(account)
	}
	if values := header.Values("X-Http-Method"); len(values) > 0 {
		// The same tunnelling rules as a request of its own (Cosmos-style clients use it).
		r := &http.Request{Method: req.method, Header: http.Header(header)}
		if req.method, perr = effectiveMethod(r); perr != nil {
			return nil, perr
		}
	}
	return req, nil
}

func preferenceOf(h textproto.MIMEHeader) string {
	return preferenceIn(http.Header(h))
}

// batchWriter writes the multipart response of a batch, byte for byte in the service's layout (REST
// docs: "Performing entity group transactions"): CRLF line ends, a blank line after each part's
// HTTP headers, and the inner Content-Type without spaces.
type batchWriter struct {
	c        *call
	buf      bytes.Buffer
	batch    string
	changes  string // empty for a query batch, whose part is not in a change set
	boundary string // the boundary parts are written under
}

func (c *call) newBatchWriter(changeSet bool) *batchWriter {
	w := &batchWriter{c: c, batch: "batchresponse_" + c.s.newID()}
	w.boundary = w.batch
	if changeSet {
		w.changes = "changesetresponse_" + c.s.newID()
		w.boundary = w.changes
		w.buf.WriteString("--" + w.batch + "\r\nContent-Type: multipart/mixed; boundary=" + w.changes + "\r\n\r\n")
	}
	return w
}

// part writes one HTTP response as a part: status, headers (name, value pairs) and body.
func (w *batchWriter) part(contentID string, status int, headers []string, body []byte) {
	b := &w.buf
	b.WriteString("--")
	b.WriteString(w.boundary)
	b.WriteString("\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n")
	if contentID != "" {
		b.WriteString("Content-ID: ")
		b.WriteString(contentID)
		b.WriteString("\r\n")
	}
	b.WriteString("\r\nHTTP/1.1 ")
	b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(status), 10))
	b.WriteString(" ")
	b.WriteString(http.StatusText(status))
	b.WriteString("\r\n")
	for i := 0; i+1 < len(headers); i += 2 {
		b.WriteString(headers[i])
		b.WriteString(": ")
		b.WriteString(headers[i+1])
		b.WriteString("\r\n")
	}
	w.buf.WriteString("\r\n")
	w.buf.Write(body)
	w.buf.WriteString("\r\n")
}

// finish closes the document and sends it: 202 Accepted, whatever the parts say.
func (w *batchWriter) finish() {
	if w.changes != "" {
		w.buf.WriteString("--" + w.changes + "--\r\n")
	}
	w.buf.WriteString("--" + w.batch + "--\r\n")
	w.c.send(http.StatusAccepted, "multipart/mixed; boundary="+w.batch, w.buf.Bytes())
}

func (c *call) changeSetSuccess(ops []batchOp, results []tabula.ActionResult) {
	noteEntities(c.w, len(ops))
	w := c.newBatchWriter(true)
	w.buf.Grow(512 * len(ops)) // a no-content part is about 400 bytes
	var scratch []string       // each part's headers, reused
	for i, op := range ops {
		a, r := &op.action, results[i]
		var headers []string
		switch a.Kind {
		case tabula.ActionInsert:
			location := op.req.base + "/" + op.req.res.table + keyPredicate(a.Entity.PartitionKey, a.Entity.RowKey)
			headers = append(scratch[:0], "X-Content-Type-Options", "nosniff", "Cache-Control", "no-cache")
			scratch = headers
			if op.prefer == "return-no-content" {
				headers = append(headers, "Preference-Applied", "return-no-content", "DataServiceVersion", "3.0;",
					"Location", location, "DataServiceId", location, "ETag", string(r.ETag))
				scratch = headers
				w.part(op.req.contentID, http.StatusNoContent, headers, nil)
				continue
			}
			if op.prefer == "return-content" {
				headers = append(headers, "Preference-Applied", "return-content")
			}
			headers = append(headers, "DataServiceVersion", "3.0;", "Content-Type", op.level.partContentType(),
				"Location", location, "ETag", string(r.ETag))
			e := a.Entity
			e.Timestamp, e.ETag = r.Timestamp, r.ETag
			ew := &entityWriter{level: op.level, base: op.req.base, account: c.account, table: op.req.res.table}
			w.part(op.req.contentID, http.StatusCreated, headers, ew.appendEntity(nil, &e, true))
		case tabula.ActionDelete:
			headers = []string{"X-Content-Type-Options", "nosniff", "Cache-Control", "no-cache", "DataServiceVersion", "1.0;"}
			w.part(op.req.contentID, http.StatusNoContent, headers, nil)
		default:
			headers = []string{"X-Content-Type-Options", "nosniff", "Cache-Control", "no-cache", "DataServiceVersion", "1.0;",
				"ETag", string(r.ETag)}
			w.part(op.req.contentID, http.StatusNoContent, headers, nil)
		}
	}
	w.finish()
}

// changeSetFailure answers a failed change set: still 202, with one part, the failing operation's
// own status and its message prefixed with its index (REST docs: "Performing entity group
// transactions").
func (c *call) changeSetFailure(ops []batchOp, index int, e *tabula.Error) {
	noteError(c.w, e.Code)
	w := c.newBatchWriter(true)
	headers := []string{"X-Content-Type-Options", "nosniff"}
	if e.Code != tabula.ErrTableNotFound.Code { // as recorded: a missing table's part has neither
		headers = append(headers, "Cache-Control", "no-cache")
		if index < len(ops) && ops[index].prefer != "" && ops[index].action.Kind == tabula.ActionInsert {
			headers = append(headers, "Preference-Applied", ops[index].prefer)
		}
	}
	headers = append(headers, "DataServiceVersion", "3.0;", "Content-Type", levelMinimal.partContentType())
	if e.Detail != "" {
		c.w.Header().Set("X-Tabula-Error-Detail", detailHeader("operation "+strconv.Itoa(index)+": "+e.Detail))
	}
	body := appendErrorJSON(nil, e.Code, strconv.Itoa(index)+":"+e.Message, c.id, c.now)
	w.part("", e.StatusCode, headers, body)
	w.finish()
}

// batchQuery serves a batch whose only part is a point query.
func (c *call) batchQuery(data []byte, contentID string) {
	req, err := c.parseSubRequest(data)
	if err == nil && (req.res.kind != resEntity || req.method != http.MethodGet) {
		err = invalidInput("", "only a point query may stand outside a change set")
	}
	if err == nil {
		err = c.checkEntityAccess(opGetEntity, req.res.table, req.res.pk, req.res.rk)
	}
	if err != nil {
		c.fail(err)
		return
	}
	w := c.newBatchWriter(false)
	headers := []string{"X-Content-Type-Options", "nosniff", "Cache-Control", "no-cache", "DataServiceVersion", "3.0;"}
	lvl, err := negotiate(req.query.Get("$format"), req.header.Get("Accept"))
	var e tabula.Entity
	if err == nil {
		sel := selectList(req.query.Get("$select"))
		if containsStar(sel) {
			sel = nil
		}
		// The batch's single query is the engine's Retrieve action.
		results, gerr := c.ns.Table(req.res.table).SubmitTransaction(c.r.Context(), []tabula.Action{tabula.RetrieveAction(req.res.pk, req.res.rk, sel...)})
		var te *tabula.TransactionError
		switch {
		case errors.As(gerr, &te):
			err = te.Err
		case gerr != nil:
			err = serviceError(gerr)
		default:
			e = *results[0].Entity
			ew := &entityWriter{level: lvl, base: req.base, account: c.account, table: req.res.table}
			if len(sel) > 0 {
				ew.selected = sel
			}
			headers = append(headers, "Content-Type", lvl.partContentType(), "ETag", string(e.ETag))
			w.part(contentID, http.StatusOK, headers, ew.appendEntity(nil, &e, true))
		}
	}
	if err != nil {
		headers = append(headers, "Content-Type", levelMinimal.partContentType())
		w.part(contentID, err.StatusCode, headers, appendErrorJSON(nil, err.Code, err.Message, c.id, c.now))
	}
	w.finish()
}
