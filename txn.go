package tabula

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula/internal/wire"
	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// Limits of an entity group transaction (REST docs: "Performing entity group transactions").
const (
	// MaxTransactionActions is the most actions one transaction may hold.
	MaxTransactionActions = 100
	// MaxTransactionPayload is the most bytes a transaction's request body may have, as
	// TransactionPayloadSize counts them.
	MaxTransactionPayload = 4 << 20
)

// ActionKind says what an Action does.
type ActionKind int

// The kinds of action. The zero ActionKind is none of them, so an Action left without a
// Kind is refused rather than taken for an Insert.
const (
	// ActionInsert adds an entity that must not exist yet.
	ActionInsert ActionKind = iota + 1
	// ActionUpdate changes an existing entity in Replace or Merge mode if it matches IfMatch.
	ActionUpdate
	// ActionUpsert inserts the entity or updates it in Replace or Merge mode.
	ActionUpsert
	// ActionDelete removes an existing entity if it matches IfMatch.
	ActionDelete
	// ActionRetrieve reads one entity, as Table.Get does: the single query the service
	// allows in a batch, which must then be its only operation. Its ActionResult carries
	// the entity.
	ActionRetrieve
)

// String names the kind as the service's operations do.
func (k ActionKind) String() string {
	switch k {
	case ActionInsert:
		return "Insert"
	case ActionUpdate:
		return "Update"
	case ActionUpsert:
		return "Upsert"
	case ActionDelete:
		return "Delete"
	case ActionRetrieve:
		return "Retrieve"
	}
	return "ActionKind(" + strconv.Itoa(int(k)) + ")"
}

// Action is one operation of an entity group transaction, with the meaning of the
// single-entity method of the same name (Table.Insert, Update, Upsert, Delete).
type Action struct {
	Kind ActionKind
	// Entity is the entity to write; a Delete uses only its PartitionKey and RowKey.
	Entity Entity
	// Mode is Replace or Merge, for Update and Upsert.
	Mode UpdateMode
	// IfMatch is the condition of an Update or Delete: an ETag, or AnyETag (empty means
	// AnyETag). Insert, Upsert and Retrieve are unconditional and refuse one.
	IfMatch ETag
	// Select names the properties a Retrieve returns (as Table.Get's selected); empty
	// means all of them. Other kinds ignore it.
	Select []string
}

// InsertAction returns an action that inserts e.
func InsertAction(e Entity) Action { return Action{Kind: ActionInsert, Entity: e} }

// UpdateAction returns an action that updates e in the given mode if it matches ifMatch.
func UpdateAction(e Entity, mode UpdateMode, ifMatch ETag) Action {
	return Action{Kind: ActionUpdate, Entity: e, Mode: mode, IfMatch: ifMatch}
}

// UpsertAction returns an action that inserts e or updates it in the given mode.
func UpsertAction(e Entity, mode UpdateMode) Action {
	return Action{Kind: ActionUpsert, Entity: e, Mode: mode}
}

// DeleteAction returns an action that deletes an entity if it matches ifMatch.
func DeleteAction(partitionKey, rowKey string, ifMatch ETag) Action {
	return Action{Kind: ActionDelete, Entity: Entity{PartitionKey: partitionKey, RowKey: rowKey}, IfMatch: ifMatch}
}

// RetrieveAction returns an action that reads one entity, with only the selected properties
// when some are named.
func RetrieveAction(partitionKey, rowKey string, selected ...string) Action {
	return Action{Kind: ActionRetrieve, Entity: Entity{PartitionKey: partitionKey, RowKey: rowKey}, Select: selected}
}

// kind is the operation the action is, as the simulated service counts operations.
func (a *Action) kind() partition.Kind {
	switch {
	case a.Kind == ActionInsert:
		return partition.KindInsert
	case a.Kind == ActionDelete:
		return partition.KindDelete
	case a.Kind == ActionUpdate && a.Mode == Merge:
		return partition.KindMerge
	case a.Kind == ActionUpdate:
		return partition.KindReplace
	case a.Mode == Merge:
		return partition.KindInsertOrMerge
	default:
		return partition.KindInsertOrReplace
	}
}

// validate applies the service's input rules to one action, before any storage work, and
// returns the names of the properties it writes in byte order (nil for a Delete).
func (a *Action) validate() ([]string, error) {
	if (a.Kind == ActionUpdate || a.Kind == ActionUpsert) && a.Mode != Replace && a.Mode != Merge {
		return nil, ErrInvalidInput.WithDetail("update mode %d is neither Replace nor Merge", int(a.Mode))
	}
	switch a.Kind {
	case ActionInsert, ActionUpsert:
		if a.IfMatch != "" {
			return nil, ErrInvalidInput.WithDetail("an %s takes no IfMatch condition; use an Update for a conditional write", a.Kind)
		}
		return validateEntity(&a.Entity)
	case ActionUpdate:
		names, err := validateEntity(&a.Entity)
		if err != nil {
			return nil, err
		}
		return names, a.IfMatch.check()
	case ActionDelete:
		if err := validateKeys(a.Entity.PartitionKey, a.Entity.RowKey); err != nil {
			return nil, err
		}
		return nil, a.IfMatch.check()
	case ActionRetrieve:
		if a.IfMatch != "" {
			return nil, ErrInvalidInput.WithDetail("a Retrieve takes no IfMatch condition")
		}
		return nil, validateKeys(a.Entity.PartitionKey, a.Entity.RowKey)
	}
	return nil, ErrInvalidInput.WithDetail("action kind %d is not Insert, Update, Upsert, Delete or Retrieve", int(a.Kind))
}

// ActionResult is what one action of a successful transaction wrote.
type ActionResult struct {
	// ETag and Timestamp identify the version written (or, for a Retrieve, read); both are
	// zero for a Delete.
	ETag      ETag
	Timestamp time.Time
	// Entity is the entity a Retrieve read; nil for the other kinds.
	Entity *Entity
}

// TransactionError reports the action that made a transaction fail, as the service's batch
// response does: the failing action's index and its own error (409 EntityAlreadyExists, 412
// UpdateConditionNotSatisfied, 404 ResourceNotFound, 400 for a broken rule, …). The service
// sends Err.StatusCode as the status of the single part of its response and
// "<Index>:<Err.Message>" as the message.
//
// TransactionError unwraps to Err, so errors.Is(err, ErrEntityAlreadyExists) and
// errors.As(err, &te) with te an *Error work on it as on a single operation's error.
type TransactionError struct {
	// Index is the 0-based position of the failing action.
	Index int
	Err   *Error
}

func (e *TransactionError) Error() string {
	return fmt.Sprintf("tabula: transaction action %d: %s", e.Index, strings.TrimPrefix(e.Err.Error(), "tabula: "))
}

func (e *TransactionError) Unwrap() error { return e.Err }

// actionError attributes err to action i when it is a client error (4xx) of the service;
// anything else (a canceled context, an internal error) is not the action's doing and
// passes unchanged.
func actionError(i int, err error) error {
	var te *Error
	if errors.As(err, &te) && te.StatusCode < 500 {
		return &TransactionError{Index: i, Err: te}
	}
	return err
}

// SubmitTransaction applies the actions as one entity group transaction: all of them, in
// order, or none. Concurrent readers see the table before the transaction or after it,
// never in between. It returns one result per action, in order.
//
// The service's rules are checked before anything is written, so a refused transaction
// leaves the table untouched:
//   - 1 to MaxTransactionActions actions. No actions at all is InvalidInput (the service
//     answers 400 to an empty change set); more than 100 is InvalidInput "The batch request
//     operation exceeds the maximum 100 changes per change set." at index 99, where the
//     service reports it.
//   - A request body of at most MaxTransactionPayload bytes by TransactionPayloadSize;
//     more is RequestBodyTooLarge (413), an error of the request as a whole, as on the
//     service, so it is an *Error without an index.
//   - Then, action by action: the entity is valid by the single-entity rules (its own code),
//     its PartitionKey is the first action's (CommandsInBatchActOnDifferentPartitions),
//     and its RowKey has not appeared before (InvalidDuplicateRow).
//   - A Retrieve must be the only action (InvalidInput "A query operation is not permitted
//     within a change set." at its index otherwise); it reads the entity as Table.Get
//     does and its result carries it.
//
// A missing table is TableNotFound at index 0 (ResourceNotFound in the Cosmos flavour, see
// flavor.go). Otherwise the actions run in order, each
// with the outcome its single-entity method would have; the first failure rolls all of
// them back and is reported at its index (a Merge whose result breaks an entity limit
// fails there too).
//
// Rule and action failures are *TransactionError; other failures (a canceled context,
// ServerBusy under extreme contention, an internal error) are returned as they are.
//
// Every write gets its own Timestamp, strictly increasing in action order, so no two writes in a DB
// ever share a Timestamp or an ETag. The service sometimes gives the writes of one batch a shared
// Timestamp and sometimes not (as recorded service traffic shows), so clients cannot rely on
// either, and Tabula keeps its DB-wide invariant.
func (t *Table) SubmitTransaction(ctx context.Context, actions []Action) ([]ActionResult, error) {
	names, err := validateTransaction(actions)
	if err != nil {
		return nil, err
	}
	if r := t.db.flavor; r != nil {
		if err := r.checkTransaction(actions); err != nil {
			return nil, err
		}
	}
	if actions[0].Kind == ActionRetrieve { // alone, as validateTransaction checked
		a := &actions[0]
		e, err := t.Get(ctx, a.Entity.PartitionKey, a.Entity.RowKey, a.Select...)
		if err != nil {
			return nil, actionError(0, err)
		}
		return []ActionResult{{ETag: e.ETag, Timestamp: e.Timestamp, Entity: &e}}, nil
	}
	results := make([]ActionResult, len(actions))
	done := make([]applied, len(actions))
	pk := actions[0].Entity.PartitionKey
	ot, err := t.acquire(ctx)
	if err != nil {
		return nil, actionError(0, t.db.flavor.transactionTableError(err))
	}
	defer ot.mu.RUnlock()
	// A transaction of N actions counts N entities.
	if err := admit(ot.service.Admit(pk, partition.KindBatch, len(actions)), "transaction"); err != nil {
		return nil, err
	}
	arena := arenaPool.Get().(*writeArena)
	defer func() { arena.reset(); arenaPool.Put(arena) }() // after the commit
	err = t.db.update(ctx, func(tx *storage.Txn) error {
		for i := range actions {
			out, err := t.db.apply(tx, ot.rec.ID, &actions[i], names[i], arena)
			if err != nil {
				return actionError(i, err)
			}
			var r ActionResult // zero for a Delete; set on every run, as fn may run again
			if actions[i].Kind != ActionDelete {
				r = ActionResult{ETag: etagOf(out.ticks), Timestamp: timeOfTicks(out.ticks)}
			}
			results[i], done[i] = r, out
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var entities, bytes int64
	for _, out := range done {
		entities += out.entities
		bytes += out.bytes
	}
	ot.service.RecordWrite(pk, entities, bytes)
	return results, nil
}

// validateTransaction checks the service's rules for a transaction in the order the service
// meets them: the request as a whole, then each action in turn.
func validateTransaction(actions []Action) ([][]string, error) {
	if len(actions) == 0 {
		return nil, ErrInvalidInput.WithDetail("a transaction needs at least one action")
	}
	if size, over := payloadOver(actions, MaxTransactionPayload); over {
		return nil, ErrRequestBodyTooLarge.WithDetail("transaction payload is %d bytes by TransactionPayloadSize; the limit is %d",
			size, MaxTransactionPayload)
	}
	if n := len(actions); n > MaxTransactionActions {
		return nil, &TransactionError{Index: MaxTransactionActions - 1, Err: ErrInvalidInput.WithMessage(
			"The batch request operation exceeds the maximum 100 changes per change set.",
			"transaction has %d actions; the limit is %d", n, MaxTransactionActions)}
	}
	pk := actions[0].Entity.PartitionKey
	rows := make(map[string]struct{}, len(actions))
	names := make([][]string, len(actions))
	for i := range actions {
		a := &actions[i]
		var err error
		if names[i], err = a.validate(); err != nil {
			return nil, actionError(i, err)
		}
		if a.Kind == ActionRetrieve && len(actions) > 1 {
			return nil, &TransactionError{Index: i, Err: ErrInvalidInput.WithMessage(
				"A query operation is not permitted within a change set.",
				"action %d is a Retrieve; a Retrieve must be a transaction's only action", i)}
		}
		if a.Entity.PartitionKey != pk {
			return nil, &TransactionError{Index: i, Err: ErrCommandsInBatchActOnDifferentPartitions.WithDetail(
				"action %d has PartitionKey %q but action 0 has %q; a transaction acts on one partition",
				i, a.Entity.PartitionKey, pk)}
		}
		rk := a.Entity.RowKey
		if _, dup := rows[rk]; dup {
			msg := strings.Replace(ErrInvalidDuplicateRow.Message, "''", "'"+rk+"'", 1)
			return nil, &TransactionError{Index: i, Err: ErrInvalidDuplicateRow.WithMessage(msg,
				"action %d has RowKey %q, which an earlier action has; an entity may appear once in a transaction", i, rk)}
		}
		rows[rk] = struct{}{}
	}
	return names, nil
}

// TransactionPayloadSize is the size Tabula checks against the service's 4 MiB limit on a
// transaction's request body. The service counts the HTTP body: a multipart document with
// one part per action holding its request line, headers and JSON body. Only the JSON bodies
// are a property of the actions; the framing depends on the client, the account's host name
// and headers (the Go SDK writes about 440 bytes an action to a 34-character host).
//
// So the size is the sum of the smallest JSON bodies a client can send: the keys and the
// non-nil properties in the service's JSON format, strings escaped only where JSON
// requires it (official SDKs may escape more, such as '<' or non-ASCII text), with a type
// annotation only where the service needs one (Binary, DateTime, Guid, Int64, and Doubles
// that are not finite). A Delete or Retrieve has no body. The framing is left out, so Tabula never
// refuses a transaction the service would accept; near the limit it may accept one the
// service refuses by up to the framing, about 1% of the limit for 100 actions.
func TransactionPayloadSize(actions []Action) int {
	size := 0
	for i := range actions {
		if k := actions[i].Kind; k != ActionDelete && k != ActionRetrieve {
			size += jsonBodySize(&actions[i].Entity)
		}
	}
	return size
}

// payloadOver reports whether actions' payload by TransactionPayloadSize exceeds limit, and
// that size when it does. Counting a JSON body reads every string for characters to escape;
// most transactions are far under the limit, which a bound on lengths alone shows.
func payloadOver(actions []Action, limit int) (int, bool) {
	bound := 0
	for i := range actions {
		if k := actions[i].Kind; k != ActionDelete && k != ActionRetrieve {
			bound += jsonBodyBound(&actions[i].Entity)
		}
	}
	if bound <= limit {
		return 0, false
	}
	size := TransactionPayloadSize(actions)
	return size, size > limit
}

// jsonBodyBound is at least jsonBodySize(e): a string's byte escapes to at most 6 bytes
// (\u00XX), a name is counted twice (its member and its type annotation), and a value
// other than a string or a binary takes at most 64 bytes with its annotation's type.
func jsonBodyBound(e *Entity) int {
	const perString, fixed = 6, 64
	size := len(`{"PartitionKey":"","RowKey":""}`) + perString*(len(e.PartitionKey)+len(e.RowKey))
	for name, v := range e.Properties {
		size += len(`,"":,"@odata.type":""`) + 2*perString*len(name) + fixed
		switch v := v.(type) {
		case String:
			size += perString * len(v)
		case Binary:
			size += (len(v) + 2) / 3 * 4
		}
	}
	return size
}

// jsonBodySize is the length of the smallest JSON body of e: {"PartitionKey":…,"RowKey":…,…}.
func jsonBodySize(e *Entity) int {
	size := wire.BodySize(e.PartitionKey, e.RowKey)
	for name, v := range e.Properties {
		if v != nil { // a nil value is dropped, as a client omits or nulls it
			size += wire.PropertySize(name, ValueOf(v))
		}
	}
	return size
}
