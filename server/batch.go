package server

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/wire"
)

// An entity group transaction arrives as POST $batch: a multipart/mixed document holding one change
// set, itself multipart/mixed, whose parts are HTTP requests with absolute URLs (REST docs:
// "Performing entity group transactions"). A batch may instead hold a single point query outside
// any change set.

// subRequest is one HTTP request inside a batch.
type subRequest struct {
	method    string
	res       resource
	header    mimeHeader // valid until the next sub-request is read
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

func (c *call) batch() error {
	// Once answered, nothing holds a part of the body (strings are copied out of it), so its
	// buffer goes back to the pool.
	body, err := c.readBodyInto(c.s.buffers.get(int(min(max(c.r.ContentLength+1, 0), presizedBody))))
	if err != nil {
		return err
	}
	defer c.s.buffers.put(body)
	mt, params, perr := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if perr != nil || mt != "multipart/mixed" || params["boundary"] == "" {
		return invalidInput(msgBatchNotMultipart, "Content-Type "+c.r.Header.Get("Content-Type"))
	}
	// The parts are slices of body, which nothing else reuses (see multipart.go).
	mr := newMultipartReader(body, params["boundary"])
	part, rerr := mr.next()
	if rerr != nil {
		return invalidInput(msgBatchNotMultipart, "reading the batch: "+rerr.Error())
	}
	inner := part.header.Get("Content-Type")
	contentID := part.header.Get("Content-ID")
	if _, rerr := mr.next(); rerr != io.EOF {
		return invalidInput(msgOneChangeSet, "a batch must hold exactly one change set, or one query")
	}
	pmt, pparams, perr := mime.ParseMediaType(inner)
	switch {
	case perr == nil && pmt == "multipart/mixed" && pparams["boundary"] != "":
		return c.changeSet(part.body, pparams["boundary"])
	case perr == nil && pmt == "application/http":
		return c.batchQuery(part.body, contentID)
	}
	return invalidInput(msgBatchNotMultipart, "batch part Content-Type "+inner)
}

// actionOperations is the operation a SAS must allow for each kind of change-set action.
var actionOperations = map[tabula.ActionKind]operation{tabula.ActionInsert: opInsert, tabula.ActionUpdate: opUpdate,
	tabula.ActionUpsert: opUpsert, tabula.ActionDelete: opDelete}

// changeSet runs the operations of a change set as one transaction. A change set that
// fails in the engine is still answered (202, with the failing operation's part); what it
// returns is a failure of the request itself.
func (c *call) changeSet(data []byte, boundary string) error {
	mr := newMultipartReader(data, boundary)
	// Operations past the most a transaction takes are read and checked, but not kept:
	// the engine refuses the change set for its length whatever they hold, and what a
	// request holds in memory stays bounded however many parts it has.
	const kept = tabula.MaxTransactionActions + 1
	ops := make([]batchOp, 0, min(bytes.Count(data, []byte(mr.dashBoundary)), kept))
	read := 0
	var (
		table    string
		firstBad = -1 // index of the first operation that could not become an action
		badErr   *tabula.Error
	)
	for {
		part, err := mr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return invalidInput(msgBatchNotMultipart, "reading the change set: "+err.Error())
		}
		op, opErr := c.changeSetOp(part.body, part.header.Get("Content-ID"))
		if opErr == nil {
			if read == 0 || table == "" {
				table = op.req.res.table
			} else if !strings.EqualFold(op.req.res.table, table) {
				opErr = withDetail(tabula.ErrCommandsInBatchActOnDifferentPartitions,
					"operation "+strconv.Itoa(read)+" addresses table "+op.req.res.table+", not "+table)
			}
		}
		if opErr == nil && op.req != nil {
			// A SAS must allow every operation; the service refuses the whole batch if not.
			kind := actionOperations[op.action.Kind]
			if err := c.checkEntityAccess(kind, op.req.res.table, op.action.Entity.PartitionKey, op.action.Entity.RowKey); err != nil {
				return err
			}
		}
		if opErr != nil && firstBad < 0 {
			firstBad, badErr = read, opErr
		}
		if len(ops) < kept {
			ops = append(ops, op)
		}
		read++
	}
	if firstBad == 0 {
		c.changeSetFailure(ops, 0, badErr, false)
		return nil
	}
	n := len(ops)
	if firstBad > 0 && firstBad < n {
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
		e, ran := te.Err, true
		if te.Index == firstBad {
			e, ran = badErr, false
		}
		c.changeSetFailure(ops, te.Index, settingsOverWire(e), ran && read == 1)
	case err != nil:
		return err
	default:
		c.changeSetSuccess(ops, results)
	}
	return nil
}

// changeSetOp reads one change-set request into an action.
func (c *call) changeSetOp(data []byte, contentID string) (batchOp, *tabula.Error) {
	req, err := c.parseSubRequest(data)
	if err != nil {
		return batchOp{}, err
	}
	req.contentID = contentID
	op := batchOp{req: req, prefer: preferenceIn(req.header)}
	if op.level, err = negotiateCommon(req.query.Get("$format"), req.header.Get("Accept")); err != nil {
		return op, err
	}
	switch {
	case req.res.kind == resEntitySet && req.method == http.MethodPost:
		if err := checkBodyType(req.header.Get("Content-Type")); err != nil {
			return op, err
		}
		e, err := c.decodeRequestEntity(req.body, wire.KeysFromBody)
		if err != nil {
			return op, err
		}
		op.action = tabula.InsertAction(e)
	case req.res.kind == resEntity && (req.method == http.MethodPut || req.method == "MERGE" || req.method == http.MethodPatch):
		mode, verb := tabula.Replace, "PUT"
		if req.method != http.MethodPut {
			mode, verb = tabula.Merge, "MERGE"
		}
		ifMatch, err := conditions(req.header, verb)
		if err != nil {
			return op, err
		}
		if err := checkBodyType(req.header.Get("Content-Type")); err != nil {
			return op, err
		}
		e, err := c.decodeRequestEntity(req.body, wire.KeysFromURL)
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
		ifMatch, err := conditions(req.header, "DELETE")
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
	var line string
	for line == "" {
		if len(data) == 0 {
			return bad("no request line")
		}
		raw := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = strings.TrimSpace(string(raw))
	}
	fields := strings.Fields(line)
	if len(fields) != 3 || !strings.HasPrefix(fields[2], "HTTP/") {
		return bad("malformed request line " + strconv.Quote(line))
	}
	// Each sub-request's fields reuse the last one's array.
	header, n, err := readHeader(c.subFields[:0], data)
	c.subFields = header
	if err != nil && err != io.EOF {
		return bad("malformed headers: " + err.Error())
	}
	body := data[n:]
	scheme, host, path, rawQuery, ok := splitTarget(fields[1])
	if !ok {
		u, err := url.ParseRequestURI(fields[1])
		if err != nil {
			return bad("malformed URL " + strconv.Quote(fields[1]))
		}
		scheme, host, path, rawQuery = u.Scheme, u.Host, u.EscapedPath(), u.RawQuery
	}
	// A URL without a host is read as if it had the batch request's.
	onHost := host
	if onHost == "" {
		onHost = c.r.Host
	}
	account, rest, inHost, perr := c.s.accountOf(onHost, path)
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
	if rawQuery != c.subQuery.raw || c.subQuery.values == nil && rawQuery != "" {
		query, err := parseQuery(rawQuery)
		if err != nil {
			return bad("malformed query string")
		}
		c.subQuery.raw, c.subQuery.values = rawQuery, query
	}
	req := &subRequest{method: fields[0], res: res, header: header, query: c.subQuery.values, body: body, base: c.base}
	pathAccount := account // the account segment of the base URL, none when the host names it
	if inHost {
		pathAccount = ""
	}
	switch {
	case host == "":
	case scheme == "http" || scheme == "https":
		req.base = baseFor(scheme == "https", host, pathAccount)
	case inHost:
		req.base = scheme + "://" + host
	default:
		req.base = scheme + "://" + host + "/" + url.PathEscape(account)
	}
	if values := header.Values("X-Http-Method"); len(values) > 0 {
		// The same tunnelling rules as a request of its own (Cosmos-style clients use it).
		if req.method, perr = tunnelledMethod(req.method, values); perr != nil {
			return nil, perr
		}
	}
	return req, nil
}

// splitTarget splits the absolute or origin-form URL of a sub-request into what
// url.ParseRequestURI would make of it, for the URLs SDKs send: an http or https scheme, a
// plain host name and port, and a path of characters that stand for themselves, which is
// then also its escaped form. For anything else ok is false, and url.ParseRequestURI reads it.
func splitTarget(target string) (scheme, host, path, query string, ok bool) {
	rest := target
	switch {
	case strings.HasPrefix(rest, "http://"):
		scheme, rest = "http", rest[len("http://"):]
	case strings.HasPrefix(rest, "https://"):
		scheme, rest = "https", rest[len("https://"):]
	case strings.HasPrefix(rest, "/") && !strings.HasPrefix(rest, "//"):
	default:
		return "", "", "", "", false
	}
	if scheme != "" {
		i := strings.IndexByte(rest, '/')
		if i <= 0 || !plainHost(rest[:i]) {
			return "", "", "", "", false
		}
		host, rest = rest[:i], rest[i:]
	}
	path, query, _ = strings.Cut(rest, "?")
	for i := 0; i < len(path); i++ {
		if !plainPathByte(path[i]) {
			return "", "", "", "", false
		}
	}
	for i := 0; i < len(query); i++ {
		if c := query[i]; c < 0x20 || c == 0x7f {
			return "", "", "", "", false
		}
	}
	return scheme, host, path, query, true
}

// plainHost says whether host is a name or IPv4 address, with a port or none.
func plainHost(host string) bool {
	name, port, hasPort := strings.Cut(host, ":")
	if name == "" || hasPort && port == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	return true
}

// plainPathByte says whether c stands for itself in a path, escaped or not (RFC 3986,
// section 3.3), so that a path of them is its own escaped form.
func plainPathByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0
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

// newBatchWriter starts a response of about size bytes.
func (c *call) newBatchWriter(changeSet bool, size int) *batchWriter {
	w := &batchWriter{c: c, batch: "batchresponse_" + c.s.newID()}
	w.buf = *bytes.NewBuffer(c.s.buffers.get(size))
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
	w.begin(contentID, status)
	for i := 0; i+1 < len(headers); i += 2 {
		w.header(headers[i], headers[i+1])
	}
	w.end(body)
}

// begin starts a part: its delimiter, its MIME header and its response's status line.
func (w *batchWriter) begin(contentID string, status int) {
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
}

// header writes one header of the part's response.
func (w *batchWriter) header(name, value string) {
	w.buf.WriteString(name)
	w.buf.WriteString(": ")
	w.buf.WriteString(value)
	w.buf.WriteString("\r\n")
}

// location writes a header whose value is the entity's URL, as Location is.
func (w *batchWriter) location(name string, op *batchOp) {
	b := &w.buf
	b.WriteString(name)
	b.WriteString(": ")
	b.WriteString(op.req.base)
	b.WriteString("/")
	b.WriteString(op.req.res.table)
	b.Write(wire.AppendKeyPredicate(b.AvailableBuffer(), op.action.Entity.PartitionKey, op.action.Entity.RowKey))
	b.WriteString("\r\n")
}

// end ends the part's headers and writes its body.
func (w *batchWriter) end(body []byte) {
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
	w.c.s.buffers.put(w.buf.Bytes()) // written: the ResponseWriter keeps no part of it
}

func (c *call) changeSetSuccess(ops []batchOp, results []tabula.ActionResult) {
	noteEntities(c.w, len(ops))
	w := c.newBatchWriter(true, 768*len(ops)) // a no-content part is about 600 bytes
	for i := range ops {
		op := &ops[i]
		a, r := &op.action, results[i]
		switch a.Kind {
		case tabula.ActionInsert:
			if op.prefer == "return-no-content" {
				w.begin(op.req.contentID, http.StatusNoContent)
				w.header("X-Content-Type-Options", "nosniff")
				w.header("Cache-Control", "no-cache")
				w.header("Preference-Applied", "return-no-content")
				w.header("DataServiceVersion", "3.0;")
				w.location("Location", op)
				w.location("DataServiceId", op)
				w.header("ETag", string(r.ETag))
				w.end(nil)
				continue
			}
			w.begin(op.req.contentID, http.StatusCreated)
			w.header("X-Content-Type-Options", "nosniff")
			w.header("Cache-Control", "no-cache")
			if op.prefer == "return-content" {
				w.header("Preference-Applied", "return-content")
			}
			w.header("DataServiceVersion", "3.0;")
			w.header("Content-Type", op.level.partContentType())
			w.location("Location", op)
			w.header("ETag", string(r.ETag))
			e := a.Entity
			e.Timestamp, e.ETag = r.Timestamp, r.ETag
			ew := &entityWriter{level: op.level, base: op.req.base, account: c.account, table: op.req.res.table}
			w.end(ew.appendEntity(nil, &e, true))
		case tabula.ActionDelete:
			w.part(op.req.contentID, http.StatusNoContent, []string{"X-Content-Type-Options", "nosniff", "Cache-Control", "no-cache", "DataServiceVersion", "1.0;"}, nil)
		default:
			w.part(op.req.contentID, http.StatusNoContent, []string{"X-Content-Type-Options", "nosniff", "Cache-Control", "no-cache", "DataServiceVersion", "1.0;",
				"ETag", string(r.ETag)}, nil)
		}
	}
	w.finish()
}

// changeSetFailure answers a failed change set: still 202, with one part, the failing
// operation's own status and its message prefixed with its index (REST docs: "Performing
// entity group transactions"), unless failedMessage says otherwise for the change set's only
// operation failing as it ran (alone).
func (c *call) changeSetFailure(ops []batchOp, index int, e *tabula.Error, alone bool) {
	noteError(c.w, e.Code)
	w := c.newBatchWriter(true, 1024)
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
	body := appendErrorJSON(nil, e.Code, failedMessage(alone, index, e), c.id, c.now)
	w.part("", e.StatusCode, headers, body)
	w.finish()
}

// failedMessage is the message of a failed change set's part. The service does not name the
// index of a change set's only operation when that operation fails on its entity, as the Azure
// SDK for Python's tests recorded: one PATCH under a stale If-Match was answered 412 "The
// update condition specified in the request was not satisfied." with no index
// (test_batch_update_if_doesnt_match), and lone merges and deletes likewise. A missing table
// keeps the index even alone: one insert into a table that does not exist was answered 404
// "0:The table specified does not exist." (test_new_non_existent_table). Tabula reads that as
// a failure of the table, not of the operation, and keeps the index for a table being deleted
// too; and for an operation refused as it was read (no If-Match on a delete, a query in the
// change set), of which no lone answer is recorded.
func failedMessage(alone bool, index int, e *tabula.Error) string {
	if alone && e.Code != tabula.ErrTableNotFound.Code && e.Code != tabula.ErrTableBeingDeleted.Code {
		return e.Message
	}
	return strconv.Itoa(index) + ":" + e.Message
}

// batchQuery serves a batch whose only part is a point query. Its request's failures are
// the batch's; the query's own go into the part, under 202.
func (c *call) batchQuery(data []byte, contentID string) error {
	req, err := c.parseSubRequest(data)
	if err == nil && (req.res.kind != resEntity || req.method != http.MethodGet) {
		err = invalidInput("", "only a point query may stand outside a change set")
	}
	if err == nil {
		err = c.checkEntityAccess(opGetEntity, req.res.table, req.res.pk, req.res.rk)
	}
	if err != nil {
		return err
	}
	w := c.newBatchWriter(false, 2048)
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
				ew.selected, ew.selectEcho = sel, selectEcho(req.query.Get("$select"))
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
	return nil
}
