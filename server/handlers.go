package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/odata"
)

// The operations on tables (REST docs: the pages of the Table service operations).

func (c *call) createTable() error {
	lvl, body, err := c.jsonRequest(opCreateTable, "")
	if err != nil {
		return err
	}
	members, perr := wire.ParseObject(body)
	if perr != nil {
		return invalidInput("", perr.Error())
	}
	name, found := "", false
	for _, m := range members {
		if m.Name == "TableName" {
			if m.Kind != wire.KindString || found {
				return invalidInput("", "TableName must be given once, as a string")
			}
			name, found = m.Text, true
		}
	}
	if !found {
		return invalidInput("", "the body has no TableName")
	}
	if _, err := c.ns.CreateTable(c.r.Context(), name); err != nil {
		return err
	}
	location := c.base + "/Tables('" + wire.EscapeKey(name) + "')"
	h := c.w.Header()
	h.Set("Location", location)
	switch preference(c.r) {
	case "return-no-content":
		h.Set("Preference-Applied", "return-no-content")
		setHeader(h, "DataServiceId", location)
		c.noContent()
		return nil
	case "return-content":
		h.Set("Preference-Applied", "return-content")
	}
	c.send(http.StatusCreated, lvl.contentType(), c.appendTable(nil, lvl, name, true))
	return nil
}

func (c *call) deleteTable(name string) error {
	if err := c.grant.authorize(opDeleteTable, name); err != nil {
		return err
	}
	if err := c.ns.DeleteTable(c.r.Context(), name); err != nil {
		return err
	}
	c.noContent()
	return nil
}

// getTable answers GET Tables('name') with the table's entry, or ResourceNotFound.
func (c *call) getTable(name string) error {
	if err := c.grant.authorize(opQueryTables, name); err != nil {
		return err
	}
	lvl, err := c.negotiate()
	if err != nil {
		return err
	}
	// Names are case-insensitive: the first table at or after name, in the catalog's
	// case-insensitive order, is the one if it has the same name in any case.
	page, qerr := c.ns.ListTables(c.r.Context(), tabula.TableQuery{NextTableName: name, Top: 1})
	if qerr != nil {
		return qerr
	}
	if len(page.Tables) == 0 || !strings.EqualFold(page.Tables[0].Name, name) {
		return withDetail(tabula.ErrResourceNotFound, "table "+strconv.Quote(name)+" does not exist")
	}
	c.send(http.StatusOK, lvl.contentType(), c.appendTable(nil, lvl, page.Tables[0].Name, true))
	return nil
}

func (c *call) queryTables() error {
	if err := c.grant.authorize(opQueryTables, ""); err != nil {
		return err
	}
	lvl, err := c.negotiate()
	if err == nil {
		err = checkQueryOptions(c.query)
	}
	if err != nil {
		return err
	}
	top, err := parseTop(c.query)
	if err != nil {
		return err
	}
	q := tabula.TableQuery{Filter: c.query.Get("$filter"), Top: top}
	if top == topNone {
		q.Top = 1
	}
	if t := c.query.Get("NextTableName"); t != "" {
		var terr error
		if q.NextTableName, terr = wire.DecodeToken(t); terr != nil {
			return invalidInput("", "NextTableName "+strconv.Quote(t)+" is not a continuation token")
		}
	}
	page, qerr := c.ns.ListTables(c.r.Context(), q)
	if qerr != nil {
		return qerr
	}
	if top == topNone {
		page = tabula.TablePage{}
	}
	b := append(make([]byte, 0, 64+48*len(page.Tables)), '{')
	if lvl != levelNone {
		b = append(b, `"odata.metadata":`...)
		b = wire.AppendString(b, c.base+"/$metadata#Tables")
		b = append(b, ',')
	}
	b = append(b, `"value":[`...)
	for i, t := range page.Tables {
		if i > 0 {
			b = append(b, ',')
		}
		b = c.appendTable(b, lvl, t.Name, false)
	}
	b = append(b, "]}"...)
	if page.NextTableName != "" {
		setHeader(c.w.Header(), "x-ms-continuation-NextTableName", wire.EncodeToken(page.NextTableName))
	}
	c.send(http.StatusOK, lvl.contentType(), b)
	return nil
}

// appendTable writes a table's JSON entry; a single one (not in a feed) carries
// odata.metadata.
func (c *call) appendTable(b []byte, lvl level, name string, single bool) []byte {
	b = append(b, '{')
	if single && lvl != levelNone {
		b = append(b, `"odata.metadata":`...)
		b = wire.AppendString(b, c.base+"/$metadata#Tables/@Element")
		b = append(b, ',')
	}
	if lvl == levelFull {
		link := "Tables('" + wire.EscapeKey(name) + "')"
		b = append(b, `"odata.type":`...)
		b = wire.AppendString(b, c.account+".Tables")
		b = append(b, `,"odata.id":`...)
		b = wire.AppendString(b, c.base+"/"+link)
		b = append(b, `,"odata.editLink":`...)
		b = wire.AppendString(b, link)
		b = append(b, ',')
	}
	b = append(b, `"TableName":`...)
	b = wire.AppendString(b, name)
	return append(b, '}')
}

// The operations on entities (REST docs: the pages of the Table service operations).

func (c *call) getEntity(res resource) error {
	if err := c.checkEntityAccess(opGetEntity, res.table, res.pk, res.rk); err != nil {
		return err
	}
	lvl, err := c.negotiate()
	if err != nil {
		return err
	}
	sel := selectList(c.query.Get("$select"))
	if containsStar(sel) {
		sel = nil
	}
	e, gerr := c.ns.Table(res.table).Get(c.r.Context(), res.pk, res.rk, sel...)
	if gerr != nil {
		return gerr
	}
	w := c.entityWriter(lvl, res.table, sel)
	c.put(c.w.Header(), "ETag", string(e.ETag))
	c.send(http.StatusOK, lvl.contentType(), w.appendEntity(nil, &e, true))
	return nil
}

func (c *call) queryEntities(table string) error {
	if err := c.grant.authorize(opQueryEntities, table); err != nil {
		return err
	}
	lvl, err := c.negotiate()
	if err == nil {
		err = checkQueryOptions(c.query)
	}
	if err != nil {
		return err
	}
	q := tabula.Query{Filter: c.query.Get("$filter"), Select: selectList(c.query.Get("$select"))}
	if q.Top, err = parseTop(c.query); err != nil {
		return err
	}
	none := q.Top == topNone
	if none {
		q.Top = 1
	}
	q.Continuation = tabula.Continuation{NextPartitionKey: c.query.Get("NextPartitionKey"), NextRowKey: c.query.Get("NextRowKey")}
	if c.grant.hasRange() {
		// A table SAS limited to a key range sees only that range: its bounds join the
		// filter, after the client's own filter is checked alone, so that a syntax error
		// names positions in the text the client sent.
		if q.Filter != "" {
			if _, perr := odata.Parse(q.Filter); perr != nil {
				return filterError(perr)
			}
			q.Filter = "(" + q.Filter + ") and " + c.grant.rangeFilter()
		} else {
			q.Filter = c.grant.rangeFilter()
		}
	}
	page, qerr := c.ns.Table(table).Query(c.r.Context(), q)
	if qerr != nil {
		return qerr
	}
	if none {
		page = tabula.Page{}
	}
	w := c.entityWriter(lvl, table, q.Select)
	size := 256
	for i := range page.Entities {
		size += entitySize(&page.Entities[i])
	}
	b := c.s.buffers.get(size)
	b = append(b, '{')
	if lvl != levelNone {
		meta := c.base + "/$metadata#" + table
		if w.selected != nil {
			meta += "&$select=" + w.selectEcho
		}
		b = append(b, `"odata.metadata":`...)
		b = wire.AppendString(b, meta)
		b = append(b, ',')
	}
	b = append(b, `"value":[`...)
	b, gone := w.appendEntities(c.r.Context(), b, page.Entities)
	if gone != nil {
		return nil // the client went away; there is no one to answer
	}
	b = append(b, "]}"...)
	noteEntities(c.w, len(page.Entities))
	if next := page.Continuation; !next.IsZero() {
		h := c.w.Header()
		setHeader(h, "x-ms-continuation-NextPartitionKey", next.NextPartitionKey)
		if next.NextRowKey != "" {
			setHeader(h, "x-ms-continuation-NextRowKey", next.NextRowKey)
		}
	}
	c.send(http.StatusOK, lvl.contentType(), b)
	c.s.buffers.put(b) // written: the ResponseWriter keeps no part of it
	return nil
}

func (c *call) insertEntity(table string) error {
	lvl, body, jerr := c.jsonRequest(opInsert, table)
	if jerr != nil {
		return jerr
	}
	e, err := c.decodeRequestEntity(body, wire.KeysFromBody)
	if err == nil {
		err = c.grant.authorizeKeys(e.PartitionKey, e.RowKey)
	}
	if err != nil {
		return err
	}
	stored, ierr := c.ns.Table(table).Insert(c.r.Context(), e)
	if ierr != nil {
		return ierr
	}
	location := c.base + "/" + table + wire.KeyPredicate(stored.PartitionKey, stored.RowKey)
	h := c.w.Header()
	c.put(h, "ETag", string(stored.ETag))
	c.set(h, "Location", location)
	switch preference(c.r) {
	case "return-no-content":
		h.Set("Preference-Applied", "return-no-content")
		setHeader(h, "DataServiceId", location)
		c.noContent()
		return nil
	case "return-content":
		h.Set("Preference-Applied", "return-content")
	}
	w := c.entityWriter(lvl, table, nil)
	c.send(http.StatusCreated, lvl.contentType(), w.appendEntity(nil, &stored, true))
	return nil
}

// writeEntity serves PUT and MERGE (or PATCH): with If-Match a conditional Update, without
// it an upsert (REST docs: the pages of the Table service operations).
func (c *call) writeEntity(res resource, mode tabula.UpdateMode) error {
	verb := "PUT"
	if mode == tabula.Merge {
		verb = "MERGE"
	}
	ifMatch, err := conditions(c.r.Header, verb)
	if err != nil {
		return err
	}
	op := opUpsert
	if ifMatch != "" {
		op = opUpdate
	}
	if err := c.checkEntityAccess(op, res.table, res.pk, res.rk); err != nil {
		return err
	}
	body, err := c.jsonBody()
	if err != nil {
		return err
	}
	e, err := c.decodeRequestEntity(body, wire.KeysFromURL)
	if err != nil {
		return err
	}
	e.PartitionKey, e.RowKey = res.pk, res.rk
	t := c.ns.Table(res.table)
	var etag tabula.ETag
	var werr error
	if ifMatch != "" {
		etag, werr = t.Update(c.r.Context(), e, mode, ifMatch)
	} else {
		etag, werr = t.Upsert(c.r.Context(), e, mode)
	}
	if werr != nil {
		return werr
	}
	c.put(c.w.Header(), "ETag", string(etag))
	c.noContent()
	return nil
}

func (c *call) deleteEntity(res resource) error {
	ifMatch, err := conditions(c.r.Header, "DELETE")
	if err != nil {
		return err
	}
	if ifMatch == "" {
		return invalidInput(msgIfMatchMandatory, "DELETE needs If-Match (an ETag, or *)")
	}
	if err := c.checkEntityAccess(opDelete, res.table, res.pk, res.rk); err != nil {
		return err
	}
	if err := c.ns.Table(res.table).Delete(c.r.Context(), res.pk, res.rk, ifMatch); err != nil {
		return err
	}
	c.noContent()
	return nil
}

// jsonRequest authorizes a request that carries a JSON body and answers with one,
// negotiates the response's format and reads the body.
func (c *call) jsonRequest(op operation, table string) (level, []byte, *tabula.Error) {
	err := c.grant.authorize(op, table)
	var (
		lvl  level
		body []byte
	)
	if err == nil {
		lvl, err = c.negotiate()
	}
	if err == nil {
		body, err = c.jsonBody()
	}
	if err != nil {
		return lvl, nil, err
	}
	return lvl, body, nil
}

// jsonBody checks the request body's Content-Type and reads the body.
func (c *call) jsonBody() ([]byte, *tabula.Error) {
	if ct := c.r.Header.Get("Content-Type"); ct != "application/json" { // what SDKs send, accepted as is
		if err := checkBodyType(ct); err != nil {
			return nil, err
		}
	}
	return c.readBody()
}

func (c *call) checkEntityAccess(op operation, table, pk, rk string) *tabula.Error {
	if err := c.grant.authorize(op, table); err != nil {
		return err
	}
	return c.grant.authorizeKeys(pk, rk)
}

func (c *call) negotiate() (level, *tabula.Error) {
	return negotiateCommon(c.query.Get("$format"), c.r.Header.Get("Accept"))
}

// negotiateCommon is negotiate, answering the media types SDKs send without parsing them.
func negotiateCommon(format, accept string) (level, *tabula.Error) {
	mt := format
	if mt == "" {
		mt = accept
	}
	// The media types SDKs send, spelled exactly so, without parsing them again.
	if lvl, ok := commonMediaTypes[mt]; ok {
		return lvl, nil
	}
	return negotiate(format, accept)
}

// commonMediaTypes are the levels of the $format and Accept values SDKs send, as negotiate
// reads them.
var commonMediaTypes = map[string]level{
	"application/json;odata=minimalmetadata": levelMinimal,
	"application/json;odata=nometadata":      levelNone,
	"application/json;odata=fullmetadata":    levelFull,
	"application/json":                       levelMinimal,
}

func (c *call) entityWriter(lvl level, table string, selected []string) *entityWriter {
	w := &entityWriter{level: lvl, base: c.base, account: c.account, table: table}
	if len(selected) > 0 && !containsStar(selected) {
		w.selected = selected
		w.selectEcho = selectEcho(c.query.Get("$select"))
	}
	return w
}

// selectEcho is $select as odata.metadata repeats it: the text the client sent, decoded, with
// its spaces as %20, not the list Tabula reads from it. The Azure SDK for Python's recorded
// queries show both halves: $select=age%2Csex was answered …&$select=age,sex, and
// $select=age,%20sex …&$select=age,%20sex.
func selectEcho(s string) string {
	return strings.ReplaceAll(s, " ", "%20")
}

func containsStar(names []string) bool {
	for _, n := range names {
		if n == "*" {
			return true
		}
	}
	return false
}

// headerReader reads a request's header: http.Header, or a $batch sub-request's mimeHeader.
type headerReader interface {
	Get(name string) string
	Values(name string) []string
}

// conditions reads If-Match and If-None-Match for a write: If-None-Match is not allowed on
// writes, nor both at once, and If-Match must be * or one well-formed ETag.
func conditions(h headerReader, verb string) (tabula.ETag, *tabula.Error) {
	ifMatch, ifNoneMatch := h.Get("If-Match"), h.Get("If-None-Match")
	switch {
	case ifMatch != "" && ifNoneMatch != "":
		return "", invalidInput(msgBothConditions, "If-Match and If-None-Match are both set")
	case ifNoneMatch != "":
		return "", invalidInput(fmt.Sprintf(msgIfNoneMatchFor, verb), "If-None-Match is set on a "+verb)
	case ifMatch == "":
		return "", nil
	}
	etag, err := parseETag(ifMatch)
	if err != nil {
		return "", err
	}
	return etag, nil
}

// parseETag reads If-Match as the service does (wire.IfMatch): * or a weak entity tag;
// a strong tag or anything else is 400 InvalidInput.
func parseETag(v string) (tabula.ETag, *tabula.Error) {
	etag, ok := wire.IfMatch(strings.TrimSpace(v))
	if !ok {
		return "", invalidInput(fmt.Sprintf(msgETagNotValid, v), "If-Match must be * or a weak entity tag such as W/\"datetime'…'\"")
	}
	return tabula.ETag(etag), nil
}

// preference returns return-no-content or return-content when the Prefer header asks for
// one (only Insert Entity and Create Table honour it, as their REST documentation pages say).
func preference(r *http.Request) string { return preferenceIn(r.Header) }

func preferenceIn(h headerReader) string {
	for _, v := range h.Values("Prefer") {
		if v == "return-no-content" || v == "return-content" { // as SDKs send it
			return v
		}
		for _, p := range strings.Split(v, ",") {
			switch p = strings.ToLower(strings.TrimSpace(p)); p {
			case "return-no-content", "return-content":
				return p
			}
		}
	}
	return ""
}

// selectList splits $select, once per request, into its distinct names in their first
// order; nil when there is none. Deduplicated here, a name is looked for once per entity
// however often a client lists it; past tabula.MaxSelect distinct names, which the engine
// refuses, the rest is not read.
func selectList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	names := strings.Split(s, ",")
	seen := make(map[string]struct{}, min(len(names), tabula.MaxSelect+1))
	distinct := names[:0]
	for _, n := range names {
		n = strings.TrimSpace(n)
		if _, dup := seen[n]; !dup {
			seen[n] = struct{}{}
			distinct = append(distinct, n)
			if len(distinct) > tabula.MaxSelect {
				break // one too many is enough for the engine to refuse the list
			}
		}
	}
	return distinct
}

// parseTop reads $top: absent means the service's maximum (0), otherwise 0 to 1000, where
// 0 asks for an empty page (topNone), which the service answers with 200 and no entities.
func parseTop(q map[string][]string) (int, *tabula.Error) {
	v, ok := q["$top"]
	if !ok || len(v) == 0 {
		return 0, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 0 || n > tabula.MaxEntitiesPerPage {
		return 0, invalidInput("", "$top must be a number from 0 to 1000, not "+strconv.Quote(v[0]))
	}
	if n == 0 {
		return topNone, nil
	}
	return n, nil
}

// topNone is what parseTop returns for $top=0. The query still runs with a page of one, so
// that a missing table or a bad filter fails as it would, and its result is dropped.
const topNone = -1

// checkQueryOptions refuses the OData options the service does not implement, and a $filter
// that is not UTF-8 once unescaped (400 InvalidInput, as a filter that does not parse): no
// string stored can equal its literals, and its text cannot be quoted back in the error.
func checkQueryOptions(q map[string][]string) *tabula.Error {
	for _, opt := range []string{"$orderby", "$skip", "$expand", "$count", "$inlinecount", "$skiptoken"} {
		if _, ok := q[opt]; ok {
			return withDetail(tabula.ErrNotImplemented, opt+" is not supported by the Table service")
		}
	}
	for _, f := range q["$filter"] {
		if !utf8.ValidString(f) {
			return invalidInput("", "$filter is not valid UTF-8 once unescaped")
		}
	}
	return nil
}

// filterError maps a $filter parse error to the service's error, as the engine does.
func filterError(err error) *tabula.Error {
	var fe *odata.Error
	if errors.As(err, &fe) {
		sentinel := tabula.ErrInvalidInput
		if fe.Code == odata.CodeNotImplemented {
			sentinel = tabula.ErrNotImplemented
		}
		return sentinel.WithMessage(fe.Message, "%s", fe.Error())
	}
	return serviceError(err)
}
