package tabula

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireTxnError asserts that err is a *TransactionError at index with the code and status,
// and that errors.Is and errors.As see through it to the action's own error.
func requireTxnError(t *testing.T, err error, index int, code string, status int) *TransactionError {
	t.Helper()
	var te *TransactionError
	require.ErrorAs(t, err, &te, "want a TransactionError, got %v", err)
	assert.Equal(t, index, te.Index, "index: %v", err)
	assert.Equal(t, code, te.Err.Code, "code: %v", err)
	assert.Equal(t, status, te.Err.StatusCode, "status: %v", err)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Same(t, te.Err, e)
	assert.ErrorIs(t, err, &Error{Code: code})
	assert.Contains(t, err.Error(), fmt.Sprintf("action %d:", index), "the message names the index")
	return te
}

func txnRows(pk string, n int) []Entity {
	out := make([]Entity, n)
	for i := range out {
		out[i] = Entity{PartitionKey: pk, RowKey: fmt.Sprintf("r%03d", i), Properties: Properties{"N": Int32(int32(i))}}
	}
	return out
}

func insertActions(es []Entity) []Action {
	out := make([]Action, len(es))
	for i, e := range es {
		out[i] = InsertAction(e)
	}
	return out
}

func TestTransactionAppliesEveryKind(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	tbl := createTable(t, openTestDB(t, clock), "Txn")
	old, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "replace", Properties: Properties{"A": Int32(1), "B": Int32(2)}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "merge", Properties: Properties{"A": Int32(1), "B": Int32(2)}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "upsert", Properties: Properties{"A": Int32(1)}})
	require.NoError(t, err)
	doomed, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "delete"})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "other", RowKey: "untouched"})
	require.NoError(t, err)

	results, err := tbl.SubmitTransaction(ctx, []Action{
		InsertAction(Entity{PartitionKey: "p", RowKey: "new", Properties: Properties{"X": String("x"), "Gone": nil}}),
		UpdateAction(Entity{PartitionKey: "p", RowKey: "replace", Properties: Properties{"C": Int64(3)}}, Replace, old.ETag),
		UpdateAction(Entity{PartitionKey: "p", RowKey: "merge", Properties: Properties{"B": Double(2.5), "C": Boolean(true)}}, Merge, AnyETag),
		UpsertAction(Entity{PartitionKey: "p", RowKey: "upsert", Properties: Properties{"Z": Int32(26)}}, Merge),
		UpsertAction(Entity{PartitionKey: "p", RowKey: "created", Properties: Properties{"Y": Int32(25)}}, Replace),
		DeleteAction("p", "delete", doomed.ETag),
	})
	require.NoError(t, err)
	require.Len(t, results, 6)

	// Each write has its own Timestamp, one tick apart under a stuck clock, in action order.
	for i, r := range results[:5] {
		assert.Equal(t, etagOf(ticksOf(r.Timestamp)), r.ETag, "action %d", i)
		if i > 0 {
			assert.Equal(t, ticksOf(results[i-1].Timestamp)+1, ticksOf(r.Timestamp), "action %d", i)
		}
	}
	assert.True(t, results[0].Timestamp.After(doomed.Timestamp))
	assert.Equal(t, ActionResult{}, results[5], "a Delete writes no version")

	got := map[string]Entity{}
	for _, e := range dumpTable(t, tbl) {
		got[e.PartitionKey+"/"+e.RowKey] = e
	}
	assert.Len(t, got, 6)
	want := map[string]struct {
		props Properties
		etag  ETag
	}{
		"p/new":     {Properties{"X": String("x")}, results[0].ETag},
		"p/replace": {Properties{"C": Int64(3)}, results[1].ETag},
		"p/merge":   {Properties{"A": Int32(1), "B": Double(2.5), "C": Boolean(true)}, results[2].ETag},
		"p/upsert":  {Properties{"A": Int32(1), "Z": Int32(26)}, results[3].ETag},
		"p/created": {Properties{"Y": Int32(25)}, results[4].ETag},
	}
	for k, w := range want {
		assert.Equal(t, w.props, got[k].Properties, k)
		assert.Equal(t, w.etag, got[k].ETag, k)
	}
	assert.NotContains(t, got, "p/delete")
	assert.Contains(t, got, "other/untouched")
}

func TestTransactionActionCount(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Count")

	results, err := tbl.SubmitTransaction(ctx, insertActions(txnRows("hundred", MaxTransactionActions)))
	require.NoError(t, err)
	require.Len(t, results, MaxTransactionActions)
	assert.Len(t, dumpTable(t, tbl), MaxTransactionActions)

	before := rawTable(t, tbl)
	_, err = tbl.SubmitTransaction(ctx, insertActions(txnRows("more", MaxTransactionActions+1)))
	te := requireTxnError(t, err, 99, "InvalidInput", 400)
	assert.Equal(t, "The batch request operation exceeds the maximum 100 changes per change set.", te.Err.Message)
	assert.Contains(t, te.Err.Detail, "101 actions")
	assert.Equal(t, before, rawTable(t, tbl))

	// An empty change set is refused by the service with a 400; it concerns no action.
	for _, none := range [][]Action{nil, {}} {
		_, err = tbl.SubmitTransaction(ctx, none)
		assert.ErrorIs(t, err, ErrInvalidInput)
		var txe *TransactionError
		assert.False(t, errors.As(err, &txe), "an empty transaction has no failing action")
	}
	assert.Equal(t, before, rawTable(t, tbl))
}

func TestTransactionPartitionAndRowRules(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Rules")
	_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "r9"})
	require.NoError(t, err)
	before := rawTable(t, tbl)

	t.Run("two partitions", func(t *testing.T) {
		actions := insertActions(txnRows("p", 4))
		actions[2].Entity.PartitionKey = "q"
		actions[3].Entity.PartitionKey = "q"
		_, err := tbl.SubmitTransaction(ctx, actions)
		te := requireTxnError(t, err, 2, "CommandsInBatchActOnDifferentPartitions", 400)
		assert.Equal(t, "All commands in a batch must operate on same entity group.", te.Err.Message)
		assert.Equal(t, before, rawTable(t, tbl))

		// Keys differing only in case are different partitions.
		_, err = tbl.SubmitTransaction(ctx, []Action{
			DeleteAction("p", "r9", AnyETag), UpsertAction(Entity{PartitionKey: "P", RowKey: "x"}, Merge),
		})
		requireTxnError(t, err, 1, "CommandsInBatchActOnDifferentPartitions", 400)
	})

	t.Run("duplicate row", func(t *testing.T) {
		_, err := tbl.SubmitTransaction(ctx, []Action{
			InsertAction(Entity{PartitionKey: "p", RowKey: "a"}),
			UpsertAction(Entity{PartitionKey: "p", RowKey: "it's"}, Replace),
			DeleteAction("p", "r9", AnyETag),
			UpdateAction(Entity{PartitionKey: "p", RowKey: "it's"}, Merge, AnyETag),
		})
		te := requireTxnError(t, err, 3, "InvalidDuplicateRow", 400)
		assert.Equal(t, "A command with RowKey 'it's' is already present in the batch. An entity can appear only once in a batch.",
			te.Err.Message)
		assert.Equal(t, before, rawTable(t, tbl))
	})

	t.Run("the first broken rule wins", func(t *testing.T) {
		actions := insertActions(txnRows("p", 5))
		actions[3].Entity.RowKey = actions[1].Entity.RowKey // duplicate at 3
		actions[4].Entity.PartitionKey = "q"                // other partition at 4
		_, err := tbl.SubmitTransaction(ctx, actions)
		requireTxnError(t, err, 3, "InvalidDuplicateRow", 400)
		actions[2].Entity.Properties = Properties{"bad-name": Int32(1)}
		_, err = tbl.SubmitTransaction(ctx, actions)
		requireTxnError(t, err, 2, "PropertyNameInvalid", 400)
	})
}

func TestTransactionInvalidActions(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Invalid")
	_, err := tbl.SubmitTransaction(ctx, insertActions(txnRows("p", 3)))
	require.NoError(t, err)
	before := rawTable(t, tbl)

	cases := []struct {
		name   string
		action Action
		code   string
	}{
		{"key with a slash", InsertAction(Entity{PartitionKey: "p", RowKey: "a/b"}), "OutOfRangeInput"},
		{"key too long", UpsertAction(Entity{PartitionKey: "p", RowKey: strings.Repeat("k", MaxKeyLength+1)}, Merge), "KeyValueTooLarge"},
		{"property name", UpdateAction(Entity{PartitionKey: "p", RowKey: "x", Properties: Properties{"1st": Int32(1)}}, Replace, AnyETag), "PropertyNameInvalid"},
		{"too many properties", InsertAction(Entity{PartitionKey: "p", RowKey: "x", Properties: manyProps(MaxProperties + 1)}), "TooManyProperties"},
		{"string too long", InsertAction(Entity{PartitionKey: "p", RowKey: "x", Properties: Properties{"S": String(strings.Repeat("s", MaxStringLength+1))}}), "PropertyValueTooLarge"},
		{"malformed etag", UpdateAction(Entity{PartitionKey: "p", RowKey: "x"}, Merge, "W/nope"), "InvalidInput"},
		{"delete with a malformed etag", DeleteAction("p", "x", "nope"), "InvalidInput"},
		{"delete with a bad key", DeleteAction("p", "a#b", AnyETag), "OutOfRangeInput"},
		{"condition on an upsert", Action{Kind: ActionUpsert, Entity: Entity{PartitionKey: "p", RowKey: "x"}, IfMatch: AnyETag}, "InvalidInput"},
		{"condition on an insert", Action{Kind: ActionInsert, Entity: Entity{PartitionKey: "p", RowKey: "x"}, IfMatch: AnyETag}, "InvalidInput"},
		{"no kind", Action{Entity: Entity{PartitionKey: "p", RowKey: "x"}}, "InvalidInput"},
	}
	for _, c := range cases {
		for _, k := range []int{0, 2, 4} {
			t.Run(fmt.Sprintf("%s at %d", c.name, k), func(t *testing.T) {
				actions := insertActions(txnRows("p", 5))
				for i := range actions {
					actions[i].Entity.RowKey = fmt.Sprint("new", i) // would all succeed
				}
				actions[k] = c.action
				_, err := tbl.SubmitTransaction(ctx, actions)
				requireTxnError(t, err, k, c.code, 400)
				assert.Equal(t, before, rawTable(t, tbl))
			})
		}
	}

	// Delete looks only at the keys: properties that would be invalid on a write do not matter.
	_, err = tbl.SubmitTransaction(ctx, []Action{{Kind: ActionDelete, Entity: Entity{PartitionKey: "p", RowKey: "r000",
		Properties: Properties{"1st": Int32(1)}}}})
	require.NoError(t, err)
}

// A failing action anywhere leaves the table exactly as it was and is named with its own code.
func TestTransactionFailuresChangeNothing(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Atomic")
	seed, err := tbl.SubmitTransaction(ctx, insertActions(txnRows("p", 10)))
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "wide", Properties: manyProps(MaxProperties - 1)})
	require.NoError(t, err)
	staleETag := seed[3].ETag
	_, err = tbl.Update(ctx, Entity{PartitionKey: "p", RowKey: "r003"}, Merge, AnyETag)
	require.NoError(t, err)
	before := rawTable(t, tbl)

	failing := []struct {
		name   string
		action Action
		code   string
		status int
	}{
		{"insert of an existing entity", InsertAction(Entity{PartitionKey: "p", RowKey: "r001"}), "EntityAlreadyExists", 409},
		{"update with a stale etag", UpdateAction(Entity{PartitionKey: "p", RowKey: "r003"}, Replace, staleETag), "UpdateConditionNotSatisfied", 412},
		{"delete with a stale etag", DeleteAction("p", "r003", staleETag), "UpdateConditionNotSatisfied", 412},
		{"update of a missing entity", UpdateAction(Entity{PartitionKey: "p", RowKey: "nope"}, Merge, AnyETag), "ResourceNotFound", 404},
		{"delete of a missing entity", DeleteAction("p", "nope", AnyETag), "ResourceNotFound", 404},
		{"merge past the property limit", UpsertAction(Entity{PartitionKey: "p", RowKey: "wide",
			Properties: Properties{"Extra1": Int32(1), "Extra2": Int32(2)}}, Merge), "TooManyProperties", 400},
	}
	// Actions that succeed on their own, on rows the failing actions do not touch.
	good := []Action{
		InsertAction(Entity{PartitionKey: "p", RowKey: "fresh1"}),
		UpdateAction(Entity{PartitionKey: "p", RowKey: "r005", Properties: Properties{"M": Int32(5)}}, Merge, seed[5].ETag),
		UpsertAction(Entity{PartitionKey: "p", RowKey: "r006"}, Replace),
		DeleteAction("p", "r007", AnyETag),
		UpsertAction(Entity{PartitionKey: "p", RowKey: "fresh2"}, Merge),
	}
	for _, f := range failing {
		for _, at := range []int{0, 2, len(good)} {
			t.Run(fmt.Sprintf("%s at %d", f.name, at), func(t *testing.T) {
				actions := append(append(append([]Action{}, good[:at]...), f.action), good[at:]...)
				_, err := tbl.SubmitTransaction(ctx, actions)
				requireTxnError(t, err, at, f.code, f.status)
				assert.Equal(t, before, rawTable(t, tbl), "the table changed")
			})
		}
	}

	// The same actions without the failing one all apply.
	_, err = tbl.SubmitTransaction(ctx, good)
	require.NoError(t, err)
	assert.NotEqual(t, before, rawTable(t, tbl))
}

func TestTransactionOnMissingTable(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, nil)
	_, err := db.Table("Nope").SubmitTransaction(ctx, insertActions(txnRows("p", 3)))
	te := requireTxnError(t, err, 0, "TableNotFound", 404)
	assert.Equal(t, "The table specified does not exist.", te.Err.Message)

	// The rules are checked first, as they are on the request before it reaches the table.
	actions := insertActions(txnRows("p", 3))
	actions[1].Entity.PartitionKey = "q"
	_, err = db.Table("Nope").SubmitTransaction(ctx, actions)
	requireTxnError(t, err, 1, "CommandsInBatchActOnDifferentPartitions", 400)

	// A table deleted and re-created in between is a different, empty table.
	tbl := createTable(t, db, "Gone")
	_, err = tbl.SubmitTransaction(ctx, insertActions(txnRows("p", 2)))
	require.NoError(t, err)
	require.NoError(t, db.DeleteTable(ctx, "Gone"))
	_, err = tbl.SubmitTransaction(ctx, []Action{DeleteAction("p", "r000", AnyETag)})
	requireTxnError(t, err, 0, "TableNotFound", 404)
	createTable(t, db, "Gone")
	_, err = tbl.SubmitTransaction(ctx, []Action{DeleteAction("p", "r000", AnyETag)})
	requireTxnError(t, err, 0, "ResourceNotFound", 404)
}

func TestTransactionCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tbl := createTable(t, openTestDB(t, nil), "Ctx")
	_, err := tbl.SubmitTransaction(ctx, insertActions(txnRows("p", 2)))
	assert.ErrorIs(t, err, context.Canceled)
	var te *TransactionError
	assert.False(t, errors.As(err, &te))
	assert.Empty(t, dumpTable(t, tbl))
}

// The payload measure is the length of the smallest JSON body a client can send, checked
// against bodies written out by hand.
func TestTransactionPayloadSize(t *testing.T) {
	e := Entity{PartitionKey: "p", RowKey: `r"1`, Properties: Properties{
		"S":  String("a\nb<é\x01"),
		"B":  Binary{1, 2, 3},
		"T":  Boolean(true),
		"F":  Boolean(false),
		"D":  DateTime(time.Date(2021, 7, 13, 0, 0, 0, 0, time.UTC)),
		"D2": DateTime(time.Date(2021, 7, 13, 1, 2, 3, 400000000, time.UTC)),
		"X":  Double(5),
		"Y":  Double(3.25),
		"E":  Double(1e300),
		"E2": Double(-1.5e-7),
		"N":  Double(math.NaN()),
		"I":  Double(math.Inf(1)),
		"J":  Double(math.Inf(-1)),
		"G":  Guid{},
		"K":  Int32(-7),
		"L":  Int64(1 << 40),
		"Z":  nil,
	}}
	body := `{"PartitionKey":"p","RowKey":"r\"1","S":"a\nb<é\u0001",` +
		`"B@odata.type":"Edm.Binary","B":"AQID","T":true,"F":false,` +
		`"D@odata.type":"Edm.DateTime","D":"2021-07-13T00:00:00Z",` +
		`"D2@odata.type":"Edm.DateTime","D2":"2021-07-13T01:02:03.4Z",` +
		`"X":5.0,"Y":3.25,"E":1e300,"E2":-1.5e-7,` +
		`"N@odata.type":"Edm.Double","N":"NaN","I@odata.type":"Edm.Double","I":"Infinity",` +
		`"J@odata.type":"Edm.Double","J":"-Infinity",` +
		`"G@odata.type":"Edm.Guid","G":"00000000-0000-0000-0000-000000000000","K":-7,` +
		`"L@odata.type":"Edm.Int64","L":"1099511627776"}`
	require.True(t, json.Valid([]byte(body)))
	assert.Equal(t, len(body), jsonBodySize(&e))

	empty := `{"PartitionKey":"","RowKey":""}`
	assert.Equal(t, len(empty), jsonBodySize(&Entity{}))

	actions := []Action{InsertAction(e), DeleteAction("p", "gone", AnyETag), UpsertAction(Entity{}, Merge)}
	assert.Equal(t, len(body)+len(empty), TransactionPayloadSize(actions), "a Delete has no body")
}

// bigEntities returns n entities of one partition whose payload totals exactly size bytes.
func bigEntities(t *testing.T, n, size int) []Action {
	t.Helper()
	actions := make([]Action, n)
	chunk := strings.Repeat("x", MaxStringLength)
	for i := range actions {
		props := Properties{}
		for j := range 14 {
			props[fmt.Sprint("S", j)] = String(chunk)
		}
		actions[i] = InsertAction(Entity{PartitionKey: "big", RowKey: fmt.Sprint(i), Properties: props})
	}
	over := TransactionPayloadSize(actions) - size
	require.Positive(t, over)
	last := actions[n-1].Entity.Properties
	for j := 0; over > 0; j++ {
		cut := min(over, MaxStringLength)
		last[fmt.Sprint("S", j)] = String(chunk[cut:])
		over -= cut
	}
	require.Equal(t, size, TransactionPayloadSize(actions))
	return actions
}

func TestTransactionPayloadLimit(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Payload")

	over := bigEntities(t, 10, MaxTransactionPayload+1)
	_, err := tbl.SubmitTransaction(ctx, over)
	assert.ErrorIs(t, err, ErrRequestBodyTooLarge)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 413, e.StatusCode)
	assert.Equal(t, "The request body is too large and exceeds the maximum permissible limit.", e.Message)
	var te *TransactionError
	assert.False(t, errors.As(err, &te), "the body limit concerns the request, not one action")
	assert.Empty(t, rawTable(t, tbl))

	at := bigEntities(t, 10, MaxTransactionPayload)
	results, err := tbl.SubmitTransaction(ctx, at)
	require.NoError(t, err)
	assert.Len(t, results, 10)
	assert.Len(t, dumpTable(t, tbl), 10)
}

// The bank: 8 goroutines move money between the rows of one partition with read, then a
// transaction of two Updates under If-Match, retrying when another transfer got there
// first. A reader summing every balance in one snapshot always sees the same total.
func TestTransactionBank(t *testing.T) {
	if bothStores(t, TestTransactionBank) {
		return
	}
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Bank")
	const (
		accounts  = 10
		initial   = 1000
		workers   = 8
		transfers = 150
	)
	var opening []Action
	for i := range accounts {
		opening = append(opening, InsertAction(Entity{PartitionKey: "bank", RowKey: fmt.Sprint("acct", i),
			Properties: Properties{"Balance": Int64(initial)}}))
	}
	_, err := tbl.SubmitTransaction(ctx, opening)
	require.NoError(t, err)

	sum := func() (total int64, n int, err error) {
		d := newRecordDecoder()
		err = eachStored(tbl, func(_, value []byte) error {
			props := Properties{}
			if _, err := d.decode(value, nil, props); err != nil {
				return err
			}
			total += int64(props["Balance"].(Int64))
			n++
			return nil
		})
		return total, n, err
	}

	var (
		done    atomic.Bool
		reads   atomic.Int64
		retries atomic.Int64
		readers sync.WaitGroup
		writers sync.WaitGroup
	)
	read, readerDone := make(chan struct{}, 1), make(chan struct{}) // a read completed; the reader stopped
	readers.Go(func() {
		defer close(readerDone)
		for !done.Load() {
			total, n, err := sum()
			if !assert.NoError(t, err) || !assert.Equal(t, int64(accounts*initial), total, "a reader saw a partial transfer") ||
				!assert.Equal(t, accounts, n) {
				return
			}
			reads.Add(1)
			select {
			case read <- struct{}{}:
			default: // a signal is pending already
			}
		}
	})
	for w := range workers {
		writers.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range transfers {
				fi := r.IntN(accounts)
				from, to := fmt.Sprint("acct", fi), fmt.Sprint("acct", (fi+1+r.IntN(accounts-1))%accounts)
				amount := Int64(r.IntN(50) + 1)
				for {
					a, err := tbl.Get(ctx, "bank", from)
					if !assert.NoError(t, err) {
						return
					}
					b, err := tbl.Get(ctx, "bank", to)
					if !assert.NoError(t, err) {
						return
					}
					a.Properties["Balance"] = a.Properties["Balance"].(Int64) - amount
					b.Properties["Balance"] = b.Properties["Balance"].(Int64) + amount
					_, err = tbl.SubmitTransaction(ctx, []Action{
						UpdateAction(a, Replace, a.ETag), UpdateAction(b, Replace, b.ETag),
					})
					if err == nil {
						break
					}
					var te *TransactionError
					if !assert.ErrorAs(t, err, &te) || !assert.ErrorIs(t, err, ErrUpdateConditionNotSatisfied) {
						return
					}
					retries.Add(1)
				}
			}
		})
	}
	writers.Wait()
	// Let the reader see the final state at least once more: the read after the one that may
	// be under way now began after the last transfer.
	for seen := reads.Load(); reads.Load() < seen+2; {
		select {
		case <-read:
		case <-readerDone:
			seen = -2 // it stopped on a failure, reported already
		}
	}
	done.Store(true)
	readers.Wait()

	total, n, err := sum()
	require.NoError(t, err)
	assert.Equal(t, int64(accounts*initial), total)
	assert.Equal(t, accounts, n)
	assert.Positive(t, reads.Load())
	t.Logf("%d transfers, %d retries, %d consistent reads", workers*transfers, retries.Load(), reads.Load())
}

func TestRetrieveAction(t *testing.T) {
	ctx := context.Background()
	db := openStore(t, nil)
	tbl, err := db.CreateTable(ctx, "Retrieve")
	require.NoError(t, err)
	stored, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "r", Properties: Properties{"A": Int32(1), "B": String("b")}})
	require.NoError(t, err)

	res, err := tbl.SubmitTransaction(ctx, []Action{RetrieveAction("p", "r", "B")})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Equal(t, stored.ETag, res[0].ETag)
	require.NotNil(t, res[0].Entity)
	require.Equal(t, Properties{"B": String("b")}, res[0].Entity.Properties)

	_, err = tbl.SubmitTransaction(ctx, []Action{RetrieveAction("p", "missing")})
	var te *TransactionError
	require.ErrorAs(t, err, &te)
	require.Equal(t, 0, te.Index)
	require.ErrorIs(t, err, ErrResourceNotFound)

	// A Retrieve with anything else is refused at its index, and nothing is written.
	_, err = tbl.SubmitTransaction(ctx, []Action{InsertAction(Entity{PartitionKey: "p", RowKey: "new"}), RetrieveAction("p", "r")})
	require.ErrorAs(t, err, &te)
	require.Equal(t, 1, te.Index)
	require.ErrorIs(t, err, ErrInvalidInput)
	_, err = tbl.Get(ctx, "p", "new")
	require.ErrorIs(t, err, ErrResourceNotFound)

	_, err = tbl.SubmitTransaction(ctx, []Action{{Kind: ActionRetrieve, Entity: Entity{PartitionKey: "p", RowKey: "r"}, IfMatch: AnyETag}})
	require.ErrorIs(t, err, ErrInvalidInput)
	require.Equal(t, "Retrieve", ActionRetrieve.String())
}

// A database, in memory as on disk, holds what the service holds: an entity of exactly 1 MiB by the
// service's size formula, all of it non-ASCII text (1.5 MiB once stored as UTF-8), and an
// entity group transaction of 100 inserts whose payload is exactly 4 MiB, mostly non-ASCII.
func TestHoldsTheServiceLimits(t *testing.T) {
	if bothStores(t, TestHoldsTheServiceLimits) {
		return
	}
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Large")

	// As atSizeLimit, in a script of three UTF-8 bytes per UTF-16 code unit.
	props := Properties{}
	for i := range 15 {
		props[fmt.Sprintf("s%02d", i)] = String(strings.Repeat("表", MaxStringLength))
	}
	props["s99"] = String(strings.Repeat("表", 32622-4)) // the keys take 2·(1+3) bytes
	big := Entity{PartitionKey: "p", RowKey: "big", Properties: props}
	require.Equal(t, MaxEntitySize, EntitySize(&big))
	_, err := tbl.Insert(ctx, big)
	require.NoError(t, err)
	got, err := tbl.Get(ctx, "p", "big")
	require.NoError(t, err)
	assert.Equal(t, props, got.Properties)

	actions := fourMiBTransaction(t)
	results, err := tbl.SubmitTransaction(ctx, actions)
	require.NoError(t, err)
	assert.Len(t, results, MaxTransactionActions)
	last := actions[len(actions)-1].Entity
	got, err = tbl.Get(ctx, last.PartitionKey, last.RowKey)
	require.NoError(t, err)
	assert.Equal(t, last.Properties, got.Properties)
}

// fourMiBTransaction builds 100 inserts into one partition whose payload is exactly
// MaxTransactionPayload: equal strings of "表" in each, padded with ASCII in the last.
func fourMiBTransaction(t *testing.T) []Action {
	t.Helper()
	build := func(n int, pad string) []Action {
		actions := make([]Action, MaxTransactionActions)
		for i := range actions {
			props := Properties{"Text": String(strings.Repeat("表", n))}
			if i == len(actions)-1 {
				props["Pad"] = String(pad)
			}
			actions[i] = InsertAction(Entity{PartitionKey: "tx", RowKey: fmt.Sprintf("%03d", i), Properties: props})
		}
		return actions
	}
	base := TransactionPayloadSize(build(0, ""))
	perChar := TransactionPayloadSize(build(1, "")) - base
	n := (MaxTransactionPayload - base) / perChar
	actions := build(n, "")
	actions = build(n, strings.Repeat("x", MaxTransactionPayload-TransactionPayloadSize(actions)))
	require.Equal(t, MaxTransactionPayload, TransactionPayloadSize(actions))
	return actions
}

// payloadOver's bound on lengths is never below the exact size, whatever the strings hold
// (control characters escape to six bytes), so it never lets an oversized transaction by.
func TestPayloadBoundIsAnUpperBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	str := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(0x80)) // control characters, quotes and backslashes included
		}
		return string(b)
	}
	fixed := []Property{Boolean(false), DateTime(time.Date(2021, 7, 13, 1, 2, 3, 456789100, time.UTC)),
		Double(-1.2345678901234567e-300), Double(math.NaN()), Double(math.Inf(-1)), Guid{1}, Int32(math.MinInt32), Int64(math.MinInt64)}
	for range 500 {
		e := Entity{PartitionKey: str(rng.IntN(40)), RowKey: str(rng.IntN(40)), Properties: Properties{}}
		for range rng.IntN(12) {
			var v Property
			switch k := rng.IntN(4); k {
			case 0:
				v = String(str(rng.IntN(300)))
			case 1:
				v = Binary(str(rng.IntN(300)))
			default:
				v = fixed[rng.IntN(len(fixed))]
			}
			e.Properties[str(1+rng.IntN(10))] = v
		}
		exact := jsonBodySize(&e)
		require.GreaterOrEqual(t, jsonBodyBound(&e), exact, "%+v", e)
		actions := []Action{InsertAction(e)}
		_, over := payloadOver(actions, exact)
		assert.False(t, over, "exactly at the limit is within it")
		size, over := payloadOver(actions, exact-1)
		assert.True(t, over)
		assert.Equal(t, exact, size)
	}
}

// BenchmarkValidateTransaction checks a transaction of 100 entities of one 1 KiB string, as
// BenchmarkBatchInsert (bench/) writes.
func BenchmarkValidateTransaction(b *testing.B) {
	actions := make([]Action, 100)
	for i := range actions {
		actions[i] = InsertAction(Entity{PartitionKey: "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
			RowKey: fmt.Sprintf("JobID0001_VM0000000001_Worker0001_%010d", i), Properties: Properties{"Payload": String(strings.Repeat("x", 1024))}})
	}
	for b.Loop() {
		if _, err := validateTransaction(actions); err != nil {
			b.Fatal(err)
		}
	}
}
