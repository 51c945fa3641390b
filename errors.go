package tabula

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/tabuladb/tabula/partition"
	"github.com/tabuladb/tabula/storage"
)

// Error is every error Tabula returns for a request the service would refuse. It carries the
// service's error code and HTTP status, so code written against Azure Table storage can branch
// on the same values, and it matches the sentinel of its code with errors.Is:
//
//	if errors.Is(err, tabula.ErrEntityAlreadyExists) { … }
type Error struct {
	// Code is the service's error code, such as "EntityAlreadyExists".
	Code string
	// StatusCode is the HTTP status the service answers with, such as 409.
	StatusCode int
	// Message is the service's own message text for the code, as its REST API sends it.
	Message string
	// Detail says exactly what was wrong, naming the field and the limit; empty on sentinels.
	Detail string

	// busy narrows a code to its cause: a ServerBusy to who refused it (busyPartition,
	// busyAccount, busyDisk), an InternalError to damage (causeDamage), so that
	// ErrPartitionBusy, ErrAccountBusy, ErrDiskFull and ErrDamaged match only their own;
	// the wire sees the code.
	busy string
}

// Error returns the detail when there is one and the service's message otherwise.
func (e *Error) Error() string {
	if e.Detail != "" {
		return "tabula: " + e.Detail + " (" + e.Code + ")"
	}
	return "tabula: " + e.Message + " (" + e.Code + ")"
}

// Is reports whether target is an *Error with the same code; sentinels are such errors.
// ErrPartitionBusy and ErrAccountBusy are narrower than ErrServerBusy: each matches only the
// ServerBusy errors of its own cause, while ErrServerBusy matches them all.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.busy == "" || t.busy == e.busy)
}

// WithDetail returns a copy of e whose Detail, formatted as by fmt.Sprintf, says exactly
// what was wrong, naming the field and the limit. e itself (typically a sentinel such as
// ErrInvalidInput) is left as it is, and the copy keeps its code, status and message, so
// errors.Is matches it to e. It is how the engine, `tabula serve` and the remote client
// derive every error they return from a sentinel.
func (e *Error) WithDetail(format string, args ...any) *Error {
	c := *e
	c.Detail = fmt.Sprintf(format, args...)
	return &c
}

// WithMessage is WithDetail for the codes whose service message depends on the occurrence
// (the service's InvalidInput in a transaction names the failing operation, for one): the
// copy also carries message as its Message. The engine and `tabula serve` both use it.
func (e *Error) WithMessage(message, format string, args ...any) *Error {
	c := e.WithDetail(format, args...)
	c.Message = message
	return c
}

// NewError returns an error with the service's code, HTTP status and message, and no detail:
// how every sentinel here is made, and how `tabula serve` makes the protocol's own errors
// (authentication, URLs, media types) that the engine never returns. Derive each occurrence
// from it with WithDetail.
func NewError(code string, status int, message string) *Error {
	return &Error{Code: code, StatusCode: status, Message: message}
}

// Sentinels for errors.Is. Messages are the service's, byte for byte (REST docs: "Table service
// error codes").
var (
	ErrTableAlreadyExists                      = NewError("TableAlreadyExists", http.StatusConflict, "The table specified already exists.")
	ErrTableNotFound                           = NewError("TableNotFound", http.StatusNotFound, "The table specified does not exist.")
	ErrTableBeingDeleted                       = NewError("TableBeingDeleted", http.StatusConflict, "The specified table is being deleted. Try operation later.")
	ErrResourceNotFound                        = NewError("ResourceNotFound", http.StatusNotFound, "The specified resource does not exist.")
	ErrEntityAlreadyExists                     = NewError("EntityAlreadyExists", http.StatusConflict, "The specified entity already exists.")
	ErrUpdateConditionNotSatisfied             = NewError("UpdateConditionNotSatisfied", http.StatusPreconditionFailed, "The update condition specified in the request was not satisfied.")
	ErrInvalidInput                            = NewError("InvalidInput", http.StatusBadRequest, "One of the request inputs is not valid.")
	ErrOutOfRangeInput                         = NewError("OutOfRangeInput", http.StatusBadRequest, "One of the request inputs is out of range.")
	ErrInvalidResourceName                     = NewError("InvalidResourceName", http.StatusBadRequest, "The specifed resource name contains invalid characters.")
	ErrPropertiesNeedValue                     = NewError("PropertiesNeedValue", http.StatusBadRequest, "The values are not specified for all properties in the entity.")
	ErrPropertyNameInvalid                     = NewError("PropertyNameInvalid", http.StatusBadRequest, "The property name is invalid.")
	ErrPropertyNameTooLong                     = NewError("PropertyNameTooLong", http.StatusBadRequest, "The property name exceeds the maximum allowed length (255).")
	ErrPropertyValueTooLarge                   = NewError("PropertyValueTooLarge", http.StatusBadRequest, "The property value exceeds the maximum allowed size (64KB). If the property value is a string, it is UTF-16 encoded and the maximum number of characters should be 32K or less.")
	ErrKeyValueTooLarge                        = NewError("KeyValueTooLarge", http.StatusBadRequest, "The 'PartitionKey' property exceeds the maximum allowed key size (2KB). It is a UTF-16 encoded string and the maximum number of characters should be 1K or less.")
	ErrEntityTooLarge                          = NewError("EntityTooLarge", http.StatusBadRequest, "The entity is larger than the maximum allowed size (1MB).")
	ErrTooManyProperties                       = NewError("TooManyProperties", http.StatusBadRequest, "The entity contains more properties than allowed. Each entity can include up to 252 properties to store data. Each entity also has 3 system properties.")
	ErrDuplicatePropertiesSpecified            = NewError("DuplicatePropertiesSpecified", http.StatusBadRequest, "A property is specified more than once.")
	ErrInvalidValueType                        = NewError("InvalidValueType", http.StatusBadRequest, "The value specified is invalid.")
	ErrInvalidDuplicateRow                     = NewError("InvalidDuplicateRow", http.StatusBadRequest, "A command with RowKey '' is already present in the batch. An entity can appear only once in a batch.")
	ErrCommandsInBatchActOnDifferentPartitions = NewError("CommandsInBatchActOnDifferentPartitions", http.StatusBadRequest, "All commands in a batch must operate on same entity group.")
	ErrRequestBodyTooLarge                     = NewError("RequestBodyTooLarge", http.StatusRequestEntityTooLarge, "The request body is too large and exceeds the maximum permissible limit.")
	ErrNotImplemented                          = NewError("NotImplemented", http.StatusNotImplemented, "The requested operation is not implemented on the specified resource.")
	ErrServerBusy                              = NewError("ServerBusy", http.StatusServiceUnavailable, "The server is busy.")
	ErrOperationTimedOut                       = NewError("OperationTimedOut", http.StatusInternalServerError, "Operation could not be completed within the specified time.")
	ErrInternal                                = NewError("InternalError", http.StatusInternalServerError, "The server encountered an internal error. Please retry the request.")
)

// narrowedTo returns a sentinel that is e on the wire but matches, with errors.Is, only the
// errors of its cause (see Error.busy); e still matches them all.
func (e *Error) narrowedTo(cause string) *Error {
	c := *e
	c.busy = cause
	return &c
}

const (
	busyPartition = "partition"
	busyAccount   = "account"
	busyDisk      = "disk"
	causeDamage   = "damage"
)

// ErrPartitionBusy and ErrAccountBusy tell apart the two refusals the service answers with
// 503 ServerBusy (Options.Limits, Options.Faults): the PartitionKey's range partition refused
// the operation, because the PartitionKey is over its rate limit or the range partition is
// offline while it splits, or the account (the table's namespace, each having a limit of its
// own) is over its rate limit. Both are ServerBusy on the wire and match
// errors.Is(err, ErrServerBusy); a client backs off the same way for both, but a test of
// partition design wants to know which limit it reached.
var (
	ErrPartitionBusy = ErrServerBusy.narrowedTo(busyPartition)
	ErrAccountBusy   = ErrServerBusy.narrowedTo(busyAccount)
)

// ErrDiskFull is Tabula's refusal of a write when the disk holding the database has less free
// space than Options.DiskReserve, or when the database was opened read-only because it had
// less. It is a 503 ServerBusy on the wire and matches errors.Is(err, ErrServerBusy): every
// Azure SDK retries a 503 with backoff, and a write refused for want of space may well
// succeed once space is freed, which is what a retry after a while expects; a 500
// InternalError would claim a fault in the server, and a 4xx would blame the request.
// Reads go on meanwhile, and nothing is written in part.
var ErrDiskFull = ErrServerBusy.narrowedTo(busyDisk)

// ErrDamaged is the failure of a read that needs bytes on disk that fail their checksum (a
// failing disk, a bad cable, a stray write), and of every write to a database that Open found
// damaged, which it opens read-only. It is a 500 InternalError on the wire, as the service
// answers a fault of its own, and matches errors.Is(err, ErrInternal); its detail names the
// damaged file and what to do. Every read that does not need the damaged file goes on.
var ErrDamaged = ErrInternal.narrowedTo(causeDamage)

// damageAdvice is what an operator can do about damage, said wherever it is reported.
const damageAdvice = "restore the database from a snapshot or an export, or copy what is readable into a new directory with tabula salvage --data DIR --to NEWDIR"

// storageError passes Tabula's own errors and context errors through and turns anything else
// from the storage layer into the service's errors, so Badger's never leak.
func storageError(err error) error {
	if err == nil {
		return nil
	}
	var te *Error
	switch {
	case errors.As(err, &te) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, storage.ErrDiskFull):
		return ErrDiskFull.WithDetail("%v", err)
	case errors.Is(err, storage.ErrDamaged):
		return ErrDamaged.WithDetail("%v; %s", err, damageAdvice)
	case errors.Is(err, storage.ErrContention):
		return ErrServerBusy.WithDetail("too many concurrent writers on the same entities; retry")
	case errors.Is(err, storage.ErrTooLarge):
		// The service would accept this; the store cannot commit it at once.
		return ErrInternal.WithDetail("the write is too large for the store to commit at once")
	default:
		return ErrInternal.WithDetail("%v", err)
	}
}

// admit asks the simulated service whether an operation may run and turns a refusal into the
// service's error: 503 ServerBusy for a throttle or an offline partition, 500
// OperationTimedOut for an injected timeout.
func admit(d partition.Decision, what string) error {
	switch d.Fault {
	case partition.FaultNone:
		return nil
	case partition.FaultOperationTimedOut:
		return ErrOperationTimedOut.WithDetail("%s: injected timeout (Options.Faults)", what)
	}
	var why string
	sentinel := ErrServerBusy
	switch d.Cause {
	case partition.CausePartitionLimit:
		why, sentinel = "the PartitionKey is over its rate limit (Options.Limits)", ErrPartitionBusy
	case partition.CauseAccountLimit:
		why, sentinel = "the database is over its rate limit (Options.Limits)", ErrAccountBusy
	case partition.CauseOffline:
		why, sentinel = "its range partition is offline while it splits (Options.Faults)", ErrPartitionBusy
	default:
		why = "injected fault (Options.Faults)"
	}
	return sentinel.WithMessage(d.Message(), "%s: %s", what, why)
}
