package remote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tabuladb/tabula"
)

// SubmitTransaction applies the actions as one entity group transaction, all or none, and
// returns one result per action (ETag and Timestamp; zero for a Delete). A failed action is
// a *tabula.TransactionError with its index and its own error, from the service's batch
// response; an error of the request as a whole (RequestBodyTooLarge, for one) is a plain
// *tabula.Error, as on the engine.
//
// The rules are the service's, checked by the service. Only what the protocol cannot carry
// is refused here, with the engine's errors: no actions at all, an IfMatch on an Insert or
// Upsert, an update mode other than Replace and Merge, an action kind this client cannot
// send, and text that is not valid UTF-8.
func (t *Table) SubmitTransaction(ctx context.Context, actions []tabula.Action) ([]tabula.ActionResult, error) {
	if len(actions) == 0 {
		return nil, tabula.ErrInvalidInput.WithDetail("a transaction needs at least one action")
	}
	batch := make([]aztables.TransactionAction, len(actions))
	for i := range actions {
		ta, err := transactionAction(&actions[i])
		if err != nil {
			var te *tabula.Error
			if errors.As(err, &te) {
				return nil, &tabula.TransactionError{Index: i, Err: te}
			}
			return nil, err
		}
		batch[i] = ta
	}
	ctx, ex := withExchange(ctx, "")
	_, err := t.client.SubmitTransaction(ctx, batch, nil)
	if ex.status != http.StatusAccepted {
		// The service refused the request as a whole, or it never got there.
		if err == nil {
			err = fmt.Errorf("batch answered %d", ex.status)
		}
		return nil, ex.fail(err)
	}
	return batchResults(ex.header, ex.body, len(actions))
}

// transactionAction is a as the SDK's action with its JSON body.
func transactionAction(a *tabula.Action) (aztables.TransactionAction, error) {
	var ta aztables.TransactionAction
	switch a.Kind {
	case tabula.ActionInsert, tabula.ActionUpsert:
		if a.IfMatch != "" {
			return ta, tabula.ErrInvalidInput.WithDetail("an %s takes no IfMatch condition; use an Update for a conditional write", a.Kind)
		}
	case tabula.ActionUpdate, tabula.ActionDelete:
		cond := condition(a.IfMatch)
		ta.IfMatch = &cond
	default:
		if strings.HasPrefix(a.Kind.String(), "ActionKind(") {
			return ta, tabula.ErrInvalidInput.WithDetail("action kind %d is not Insert, Update, Upsert or Delete", int(a.Kind))
		}
		// A kind the engine knows and this client does not (added to package tabula later).
		return ta, tabula.ErrNotImplemented.WithDetail("a %s action cannot be sent to a remote service by this client", a.Kind)
	}
	if a.Kind == tabula.ActionUpdate || a.Kind == tabula.ActionUpsert {
		if _, err := updateMode(a.Mode); err != nil {
			return ta, err
		}
	}
	switch {
	case a.Kind == tabula.ActionInsert:
		ta.ActionType = aztables.TransactionTypeAdd
	case a.Kind == tabula.ActionDelete:
		ta.ActionType = aztables.TransactionTypeDelete
	case a.Kind == tabula.ActionUpdate && a.Mode == tabula.Merge:
		ta.ActionType = aztables.TransactionTypeUpdateMerge
	case a.Kind == tabula.ActionUpdate:
		ta.ActionType = aztables.TransactionTypeUpdateReplace
	case a.Mode == tabula.Merge:
		ta.ActionType = aztables.TransactionTypeInsertMerge
	default:
		ta.ActionType = aztables.TransactionTypeInsertReplace
	}
	e := a.Entity
	if a.Kind == tabula.ActionDelete {
		e = tabula.Entity{PartitionKey: e.PartitionKey, RowKey: e.RowKey}
	}
	body, err := encodeEntity(&e)
	if err != nil {
		return ta, err
	}
	ta.Entity = body
	return ta, nil
}

// batchResults reads the service's answer to a change set (Performing entity group
// transactions): a multipart/mixed response holding one multipart/mixed change set
// response, with one HTTP response per action when all succeeded, or a single one, the
// failing action's, whose message starts with its index, "<index>:<message>".
func batchResults(header http.Header, body []byte, n int) ([]tabula.ActionResult, error) {
	parts, err := changeSetResponses(header.Get("Content-Type"), body)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 && parts[0].StatusCode >= 400 {
		return nil, actionFailure(header, parts[0])
	}
	if len(parts) != n {
		return nil, fmt.Errorf("tabula/remote: the batch response has %d parts for %d actions", len(parts), n)
	}
	results := make([]tabula.ActionResult, n)
	for i, p := range parts {
		if p.StatusCode >= 400 {
			return nil, actionFailure(header, p)
		}
		if etag := tabula.ETag(p.Header.Get("ETag")); etag != "" {
			results[i] = tabula.ActionResult{ETag: etag, Timestamp: etagTime(etag)}
		}
	}
	return results, nil
}

// part is one HTTP response of a change set response.
type part struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

func changeSetResponses(contentType string, body []byte) ([]part, error) {
	outer, err := multipartReader(contentType, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	changeSet, err := outer.NextPart()
	if err != nil {
		return nil, fmt.Errorf("tabula/remote: the batch response has no change set: %w", err)
	}
	inner, err := multipartReader(changeSet.Header.Get("Content-Type"), changeSet)
	if err != nil {
		return nil, err
	}
	var parts []part
	for {
		p, err := inner.NextPart()
		if err == io.EOF {
			return parts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("tabula/remote: reading the change set response: %w", err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(p), nil)
		if err != nil {
			return nil, fmt.Errorf("tabula/remote: reading the change set response: %w", err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("tabula/remote: reading the change set response: %w", err)
		}
		parts = append(parts, part{StatusCode: resp.StatusCode, Header: resp.Header, Body: b})
	}
}

func multipartReader(contentType string, r io.Reader) (*multipart.Reader, error) {
	media, params, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.HasPrefix(media, "multipart/") || params["boundary"] == "" {
		return nil, fmt.Errorf("tabula/remote: the batch response is not multipart (Content-Type %q)", contentType)
	}
	return multipart.NewReader(r, params["boundary"]), nil
}

// actionFailure is the error of the failing action's response. Its message carries the
// action's index; a client error (4xx) is the action's doing and becomes a
// *tabula.TransactionError, as on the engine.
func actionFailure(header http.Header, p part) error {
	e := serviceError(p.StatusCode, p.Header, p.Body)
	index := 0
	if i, msg, ok := strings.Cut(e.Message, ":"); ok {
		if n, err := strconv.Atoi(i); err == nil && n >= 0 {
			index, e.Message = n, msg
		}
	}
	// `tabula serve` puts the detail on the outer response, as "operation <i>: <detail>".
	if d := header.Get(detailHeader); d != "" {
		if _, rest, ok := strings.Cut(d, ": "); ok && strings.HasPrefix(d, "operation ") {
			d = rest
		}
		e.Detail = d
	}
	if e.StatusCode >= 500 {
		return e
	}
	return &tabula.TransactionError{Index: index, Err: e}
}
