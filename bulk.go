package tabula

import (
	"context"
	"errors"
)

// BulkResult is what one transaction of SubmitBulk did.
type BulkResult struct {
	// Actions are the indexes, into the actions given to SubmitBulk, of the actions this
	// transaction held, in the order it applied them.
	Actions []int
	// Results has one result per action when the transaction committed, as
	// SubmitTransaction returns them; nil when it failed.
	Results []ActionResult
	// Err is why the transaction failed, nil when it committed. A *TransactionError's Index
	// is an index into this transaction's Actions.
	Err error
}

// SubmitBulk applies any number of actions to t as a series of entity group transactions:
// beyond the service, whose transactions hold one partition, at most 100 actions and 4 MiB.
// It groups the actions by PartitionKey (in the order each partition first appears), and
// cuts each partition's actions, in their order, into transactions that keep every limit:
// at most MaxTransactionActions, at most MaxTransactionPayload as TransactionPayloadSize
// counts it, and each RowKey once (a second action on the same entity starts the next
// transaction, so the two still apply in order). An action the service would refuse in any
// transaction (an entity over 1 MiB, say) fails the transaction that holds it.
//
// The whole is not atomic: each transaction commits or fails on its own, one after
// another, and a failure does not stop the ones after it (only ctx ending does). Every
// transaction's outcome is in its BulkResult; the error is the first failure, or the
// context's error, nil when every transaction committed. A Retrieve action, which must be
// a transaction's only action, is refused before anything is applied.
func SubmitBulk(ctx context.Context, t TableAPI, actions []Action) ([]BulkResult, error) {
	for i := range actions {
		if actions[i].Kind == ActionRetrieve {
			return nil, ErrInvalidInput.WithDetail("action %d is a Retrieve; SubmitBulk writes, and a Retrieve must be a transaction's only action", i)
		}
	}
	var (
		results []BulkResult
		first   error
	)
	for _, group := range bulkTransactions(actions) {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		txn := make([]Action, len(group))
		for i, a := range group {
			txn[i] = actions[a]
		}
		r := BulkResult{Actions: group}
		r.Results, r.Err = t.SubmitTransaction(ctx, txn)
		if r.Err != nil {
			r.Results = nil
			if first == nil {
				first = r.Err
			}
		}
		results = append(results, r)
	}
	return results, first
}

// bulkTransactions cuts actions into valid transactions, as indexes (see SubmitBulk).
func bulkTransactions(actions []Action) [][]int {
	var (
		order []string             // PartitionKeys in order of first appearance
		byPK  = map[string][]int{} // each partition's actions, in order
	)
	for i := range actions {
		pk := actions[i].Entity.PartitionKey
		if _, seen := byPK[pk]; !seen {
			order = append(order, pk)
		}
		byPK[pk] = append(byPK[pk], i)
	}
	var out [][]int
	for _, pk := range order {
		var (
			cur  []int
			size int
			rows = map[string]bool{}
		)
		for _, i := range byPK[pk] {
			n := TransactionPayloadSize(actions[i : i+1])
			rk := actions[i].Entity.RowKey
			if len(cur) > 0 && (len(cur) == MaxTransactionActions || size+n > MaxTransactionPayload || rows[rk]) {
				out = append(out, cur)
				cur, size = nil, 0
				clear(rows)
			}
			cur = append(cur, i)
			size += n
			rows[rk] = true
		}
		out = append(out, cur)
	}
	return out
}

// DeletePartition deletes every entity of t with the given PartitionKey: beyond the
// service, which deletes one entity or one transaction at a time. See DeleteWhere, which it
// is with the filter PartitionKey eq partitionKey.
func DeletePartition(ctx context.Context, t TableAPI, partitionKey string) (int64, error) {
	return DeleteWhere(ctx, t, Eq("PartitionKey", String(partitionKey)).String())
}

// DeleteWhere deletes every entity of t that filter matches ("" for all), beyond the
// service: it queries the matching entities' keys page by page and deletes them in
// transactions of up to MaxTransactionActions of one partition each, whatever their ETags.
// It returns how many entities it deleted.
//
// It is not atomic. Entities written after the query read their position are not deleted;
// an entity deleted by someone else meanwhile is simply gone (its transaction is submitted
// again without it). When a transaction fails otherwise, or ctx ends, DeleteWhere stops
// and returns the error: the transactions before it stay committed and are in the count,
// the entities after it are untouched, and calling it again finishes the job.
func DeleteWhere(ctx context.Context, t TableAPI, filter string) (int64, error) {
	var (
		deleted int64
		batch   []Action
	)
	flush := func() error {
		for len(batch) > 0 {
			_, err := t.SubmitTransaction(ctx, batch)
			var te *TransactionError
			if errors.As(err, &te) && errors.Is(te.Err, ErrResourceNotFound) && te.Index >= 0 && te.Index < len(batch) {
				batch = append(batch[:te.Index], batch[te.Index+1:]...) // deleted meanwhile
				continue
			}
			if err != nil {
				return err
			}
			deleted += int64(len(batch))
			batch = batch[:0]
		}
		return nil
	}
	for e, err := range t.QueryAll(ctx, Query{Filter: filter, Select: keySelection}) {
		if err != nil {
			return deleted, err
		}
		if len(batch) == MaxTransactionActions || len(batch) > 0 && batch[0].Entity.PartitionKey != e.PartitionKey {
			if err := flush(); err != nil {
				return deleted, err
			}
		}
		batch = append(batch, DeleteAction(e.PartitionKey, e.RowKey, AnyETag))
	}
	return deleted, flush()
}
