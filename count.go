package tabula

import "context"

// keySelection is the projection Count, Exists and DeleteWhere query with: the service returns
// the keys (and Timestamp) of every entity whatever $select names, so selecting the
// PartitionKey alone keeps each page as small as it can be.
var keySelection = []string{"PartitionKey"}

// Count returns how many entities of t match filter ("" for all): beyond the service, which
// has no count. It is a query that reads every matching entity's keys, page by page, so it
// costs what that query costs (on the service, every entity the filter's plan scans; see
// Table.Explain for the plan on the embedded engine) and is charged against the rate limits
// like any query. On a remote backend the count is as of each page's read: entities written
// while it runs may or may not be counted.
func Count(ctx context.Context, t TableAPI, filter string) (int64, error) {
	var n int64
	for _, err := range t.QueryAll(ctx, Query{Filter: filter, Select: keySelection}) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Exists reports whether any entity of t matches filter: beyond the service. It asks for one
// entity and follows continuation tokens until it has one or the query ends, so with a
// filter the service runs as a scan it may read far more than one entity (see Count).
func Exists(ctx context.Context, t TableAPI, filter string) (bool, error) {
	for _, err := range t.QueryAll(ctx, Query{Filter: filter, Select: keySelection, Top: 1}) {
		if err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}
