package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/entitysink"
)

// Table is a handle on one table of a remote service, with the methods of *tabula.Table
// that a service can answer. Handles are cheap and safe for concurrent use.
type Table struct {
	client *aztables.Client
	name   string
}

var _ tabula.TableAPI = (*Table)(nil)

// Name returns the name the handle was made with.
func (t *Table) Name() string { return t.name }

// Insert adds an entity that must not exist yet and returns it as stored, with its
// Timestamp and ETag.
func (t *Table) Insert(ctx context.Context, e tabula.Entity) (tabula.Entity, error) {
	body, err := encodeEntity(&e)
	if err != nil {
		return tabula.Entity{}, err
	}
	ctx, ex := withExchange(ctx, "")
	ex.noContent = true
	resp, err := t.client.AddEntity(ctx, body, nil)
	if err != nil {
		return tabula.Entity{}, ex.fail(err)
	}
	etag := tabula.ETag(resp.ETag)
	out := tabula.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Timestamp: etagTime(etag), ETag: etag,
		Properties: make(tabula.Properties, len(e.Properties))}
	for name, v := range e.Properties {
		if v != nil {
			out.Properties[name] = v
		}
	}
	return out, nil
}

// Get reads one entity; a missing one gives ResourceNotFound. With selected names, only
// those properties are returned (the keys, Timestamp and ETag always are).
func (t *Table) Get(ctx context.Context, partitionKey, rowKey string, selected ...string) (tabula.Entity, error) {
	if err := checkKeys(partitionKey, rowKey); err != nil {
		return tabula.Entity{}, err
	}
	ctx, ex := withExchange(ctx, selectList(selected))
	ex.stub = "{}"
	if _, err := t.client.GetEntity(ctx, partitionKey, rowKey, nil); err != nil {
		return tabula.Entity{}, ex.fail(err)
	}
	if s := entitysink.From(ctx, t); s != nil { // a typed read: into its struct
		if err := sinkEntity(s, ex.body, ex.header.Get("ETag")); err != nil {
			return tabula.Entity{}, err
		}
		return tabula.Entity{}, s.End()
	}
	e, err := decodeEntity(ex.body)
	if err != nil {
		return tabula.Entity{}, err
	}
	if etag := ex.header.Get("ETag"); etag != "" {
		e.ETag = tabula.ETag(etag)
	}
	return e, nil
}

// Update changes an existing entity if its current version matches ifMatch (an ETag, or
// AnyETag; empty means AnyETag) and returns the new ETag.
func (t *Table) Update(ctx context.Context, e tabula.Entity, mode tabula.UpdateMode, ifMatch tabula.ETag) (tabula.ETag, error) {
	m, err := updateMode(mode)
	if err != nil {
		return "", err
	}
	body, err := encodeEntity(&e)
	if err != nil {
		return "", err
	}
	cond := condition(ifMatch)
	ctx, ex := withExchange(ctx, "")
	resp, err := t.client.UpdateEntity(ctx, body, &aztables.UpdateEntityOptions{IfMatch: &cond, UpdateMode: m})
	if err != nil {
		return "", ex.fail(err)
	}
	return tabula.ETag(resp.ETag), nil
}

// Upsert inserts the entity, or updates it in the given mode, and returns the new ETag.
func (t *Table) Upsert(ctx context.Context, e tabula.Entity, mode tabula.UpdateMode) (tabula.ETag, error) {
	m, err := updateMode(mode)
	if err != nil {
		return "", err
	}
	body, err := encodeEntity(&e)
	if err != nil {
		return "", err
	}
	ctx, ex := withExchange(ctx, "")
	resp, err := t.client.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: m})
	if err != nil {
		return "", ex.fail(err)
	}
	return tabula.ETag(resp.ETag), nil
}

// Delete removes an entity if its current version matches ifMatch (an ETag, or AnyETag;
// empty means AnyETag). A missing entity gives ResourceNotFound.
func (t *Table) Delete(ctx context.Context, partitionKey, rowKey string, ifMatch tabula.ETag) error {
	if err := checkKeys(partitionKey, rowKey); err != nil {
		return err
	}
	cond := condition(ifMatch)
	ctx, ex := withExchange(ctx, "")
	if _, err := t.client.DeleteEntity(ctx, partitionKey, rowKey, &aztables.DeleteEntityOptions{IfMatch: &cond}); err != nil {
		return ex.fail(err)
	}
	return nil
}

// updateMode is the SDK's name for mode; like the engine, anything but Replace and Merge is
// InvalidInput.
func updateMode(mode tabula.UpdateMode) (aztables.UpdateMode, error) {
	switch mode {
	case tabula.Replace:
		return aztables.UpdateModeReplace, nil
	case tabula.Merge:
		return aztables.UpdateModeMerge, nil
	}
	return "", tabula.ErrInvalidInput.WithDetail("update mode %d is neither Replace nor Merge", int(mode))
}

// condition is the If-Match header for ifMatch: an empty ETag means any version, as in the
// engine and the SDKs.
func condition(ifMatch tabula.ETag) azcore.ETag {
	if ifMatch == "" {
		return azcore.ETagAny
	}
	return azcore.ETag(ifMatch)
}

// Query returns one page of the entities matching q, in key order. Follow
// Page.Continuation for the rest, or use QueryAll. The page's Plan is the zero Plan (Kind
// tabula.PlanUnavailable): the service does not say how it ran the query.
func (t *Table) Query(ctx context.Context, q tabula.Query) (tabula.Page, error) {
	opts := &aztables.ListEntitiesOptions{}
	if q.Filter != "" {
		opts.Filter = &q.Filter
	}
	if s := selectList(q.Select); s != "" {
		opts.Select = &s
	}
	if q.Top != 0 {
		top := int32(min(max(q.Top, -1), tabula.MaxEntitiesPerPage+1)) // out of range stays out of range
		opts.Top = &top
	}
	if !q.Continuation.IsZero() {
		opts.NextPartitionKey = &q.Continuation.NextPartitionKey
		opts.NextRowKey = &q.Continuation.NextRowKey
	}
	ctx, ex := withExchange(ctx, "")
	ex.stub = `{"value":[]}`
	resp, err := t.client.NewListEntitiesPager(opts).NextPage(ctx)
	if err != nil {
		return tabula.Page{}, ex.fail(err)
	}
	var doc struct {
		Value []json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(ex.body, &doc); err != nil {
		return tabula.Page{}, fmt.Errorf("tabula/remote: the service's query response is unreadable: %w", err)
	}
	var page tabula.Page
	s := entitysink.From(ctx, t) // a typed read's, which takes the entities into its structs
	if len(doc.Value) > 0 && s == nil {
		page.Entities = make([]tabula.Entity, len(doc.Value))
	}
	for i, raw := range doc.Value {
		if s != nil {
			err = sinkEntity(s, raw, "")
		} else {
			page.Entities[i], err = decodeEntity(raw)
		}
		if err != nil {
			return tabula.Page{}, err
		}
	}
	if resp.NextPartitionKey != nil {
		page.Continuation.NextPartitionKey = *resp.NextPartitionKey
	}
	if resp.NextRowKey != nil {
		page.Continuation.NextRowKey = *resp.NextRowKey
	}
	if s != nil {
		if err := s.End(); err != nil {
			return tabula.Page{}, err
		}
	}
	page.End = pageEnd(q.Top, len(doc.Value), page.Continuation)
	return page, nil
}

// pageEnd says why a page of n entities ended, as far as the response shows: a page without
// a continuation is the last, and a full page ended on Top or on the service's 1,000; any
// other cut (the service's time budget, a partition boundary) is not in the response.
func pageEnd(top, n int, next tabula.Continuation) tabula.PageEnd {
	switch {
	case next.IsZero():
		return tabula.PageEndResults
	case top > 0 && top < tabula.MaxEntitiesPerPage && n == top:
		return tabula.PageEndTop
	case n == tabula.MaxEntitiesPerPage:
		return tabula.PageEndMaxEntities
	default:
		return tabula.PageEndUnknown
	}
}

// QueryAll iterates over every entity matching q (from q.Continuation on), following
// continuation tokens from page to page. Memory stays bounded by one page.
func (t *Table) QueryAll(ctx context.Context, q tabula.Query) iter.Seq2[tabula.Entity, error] {
	return func(yield func(tabula.Entity, error) bool) {
		for {
			page, err := t.Query(ctx, q)
			if err != nil {
				yield(tabula.Entity{}, err)
				return
			}
			for _, e := range page.Entities {
				if !yield(e, nil) {
					return
				}
			}
			if page.Continuation.IsZero() {
				return
			}
			q.Continuation = page.Continuation
		}
	}
}

// selectList is the $select for names: the service returns only what is selected, system
// properties included, and the engine always returns the keys and the Timestamp, so they
// are added. Empty means everything.
func selectList(names []string) string {
	if len(names) == 0 || slices.Contains(names, "*") {
		return ""
	}
	list := slices.Clone(names)
	for _, system := range []string{"PartitionKey", "RowKey", "Timestamp"} {
		if !slices.Contains(list, system) {
			list = append(list, system)
		}
	}
	return strings.Join(list, ",")
}
