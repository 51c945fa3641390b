package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/wire"
)

// The engine's sentinels cover the data model; these are the protocol's own errors, with the
// service's codes and messages (REST docs: "Table service error codes", and the service's
// authorization codes as recorded in client issues).
var (
	errAuthenticationFailed = tabula.NewError("AuthenticationFailed", http.StatusForbidden,
		"Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.")
	errAuthorizationFailure = tabula.NewError("AuthorizationFailure", http.StatusForbidden,
		"This request is not authorized to perform this operation.")
	errAuthorizationPermissionMismatch = tabula.NewError("AuthorizationPermissionMismatch", http.StatusForbidden,
		"This request is not authorized to perform this operation using this permission.")
	errAuthorizationResourceTypeMismatch = tabula.NewError("AuthorizationResourceTypeMismatch", http.StatusForbidden,
		"This request is not authorized to perform this operation using this resource type.")
	errAuthorizationServiceMismatch = tabula.NewError("AuthorizationServiceMismatch", http.StatusForbidden,
		"This request is not authorized to perform this operation using this service.")
	errAuthorizationSourceIPMismatch = tabula.NewError("AuthorizationSourceIPMismatch", http.StatusForbidden,
		"This request is not authorized to perform this operation using this source IP.")

	errInvalidURI = tabula.NewError("InvalidUri", http.StatusBadRequest,
		"The requested URI does not represent any resource on the server.")
	errMethodNotAllowed = tabula.NewError("MethodNotAllowed", http.StatusMethodNotAllowed,
		"The requested method is not allowed on the specified resource.")
	errXMethodNotUsingPost = tabula.NewError("XMethodNotUsingPost", http.StatusBadRequest,
		"The request uses X-HTTP-Method with a Http Verb that is not POST.")
	errXMethodIncorrectValue = tabula.NewError("XMethodIncorrectValue", http.StatusBadRequest,
		"The specified X-HTTP-Method is invalid.")
	errXMethodIncorrectCount = tabula.NewError("XMethodIncorrectCount", http.StatusBadRequest,
		"More than one X-HTTP-Method is specified.")
	errAtomFormatNotSupported = tabula.NewError("AtomFormatNotSupported", http.StatusUnsupportedMediaType,
		"Atom format is not supported.")
	errJSONVerboseFormatNotSupported = tabula.NewError("JsonVerboseFormatNotSupported", http.StatusUnsupportedMediaType,
		"Verbose JSON format is not supported.")
	errMediaTypeNotSupported = tabula.NewError("MediaTypeNotSupported", http.StatusUnsupportedMediaType,
		"None of the provided media types are supported")

	// Common REST API error codes, for the XML operations and the request headers.
	errInvalidHeaderValue = tabula.NewError("InvalidHeaderValue", http.StatusBadRequest,
		"The value for one of the HTTP headers is not in the correct format.")
	errInvalidQueryParameterValue = tabula.NewError("InvalidQueryParameterValue", http.StatusBadRequest,
		"Value for one of the query parameters specified in the request URI is invalid.")
	// InvalidXmlDocument is the Table service's answer to any Set Table ACL or Set Table
	// Service Properties body it refuses, malformed or merely invalid (a policy without an Id,
	// a retention of 366 days), as its recorded answers in the aztables module show; it does
	// not use InvalidXmlNodeValue there.
	errInvalidXMLDocument = tabula.NewError("InvalidXmlDocument", http.StatusBadRequest,
		"XML specified is not syntactically valid.")
	errCorsPreflightFailure = tabula.NewError("CorsPreflightFailure", http.StatusForbidden,
		"CORS not enabled or no matching rule found for this request.")
	errMissingCorsHeader = tabula.NewError("InvalidHeaderValue", http.StatusBadRequest,
		"A required CORS header is not present.")
)

// Messages the service gives InvalidInput in particular cases (REST docs: the pages of the Table
// service operations).
const (
	msgValueNotValid       = "An error occurred while processing this request."
	msgQuerySyntax         = "Bad Request - Error in query syntax."
	msgIfMatchMandatory    = "If-Match header is mandatory when deleting an entity."
	msgBothConditions      = "Both If-Match and If-None-Match HTTP headers cannot be specified at the same time. Please specify either one of the headers or none of them."
	msgIfNoneMatchFor      = "If-None-Match HTTP header cannot be specified for %s operations."
	msgETagNotValid        = "The etag value '%s' specified in one of the request headers is not valid. Please make sure only one etag value is specified and is valid."
	msgOneChangeSet        = "The batch request contains more than one change set; the service supports exactly one."
	msgQueryInChangeSet    = "A query operation is not permitted within a change set."
	msgBatchNotMultipart   = "The batch request body is not a multipart/mixed document."
	msgBatchTableMismatch  = "All commands in a batch must operate on the same table."
	msgBatchAccountMissing = "The batch sub-request does not address this account."
	msgNameLength          = "The specified resource name length is not within the permissible limits." // OutOfRangeInput's
)

// withDetail is e.WithDetail for a detail written out already; the detail goes to the
// X-Tabula-Error-Detail header, never into the service's message.
func withDetail(e *tabula.Error, detail string) *tabula.Error {
	return e.WithDetail("%s", detail)
}

func invalidInput(message, detail string) *tabula.Error {
	if message == "" {
		message = tabula.ErrInvalidInput.Message
	}
	return tabula.ErrInvalidInput.WithMessage(message, "%s", detail)
}

// serviceError turns whatever an engine call returned into the service's error. The engine
// already speaks in *tabula.Error; a context error means the client went away or the
// request ran out of time, and anything else is an internal error.
func serviceError(err error) *tabula.Error {
	var te *tabula.Error
	switch {
	case errors.As(err, &te):
		return settingsOverWire(te)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return withDetail(tabula.ErrOperationTimedOut, err.Error())
	default:
		return withDetail(tabula.ErrInternal, err.Error())
	}
}

// wireSettings names, for a client of the wire, the setting behind an engine error that
// names a Go option: the tabula serve flag and the management API field that set it (see the
// package documentation). The engine's own messages name tabula.Options, which is what a Go
// program embedding it sets.
var wireSettings = strings.NewReplacer(
	"by Options.ForbidFullScans", "by tabula serve --forbid-full-scans (management API: queries, forbidFullScans)",
	"(Options.Limits)", "(tabula serve --limits; management API: limits)",
	"(Options.Faults)", "(tabula serve --faults; management API: faults)",
	"(Options.TableDeleteDelay)", "(tabula serve --table-delete-delay; management API: faults, tableDeleteDelay)",
)

// settingsOverWire returns e with the settings its message and detail name as wireSettings
// says: only the errors a setting causes name one.
func settingsOverWire(e *tabula.Error) *tabula.Error {
	if e == nil {
		return nil
	}
	switch e.Code {
	case tabula.ErrFullScanForbidden.Code, tabula.ErrServerBusy.Code, tabula.ErrOperationTimedOut.Code, tabula.ErrTableBeingDeleted.Code:
	default:
		return e
	}
	message, detail := wireSettings.Replace(e.Message), wireSettings.Replace(e.Detail)
	if message == e.Message && detail == e.Detail {
		return e
	}
	c := *e
	c.Message, c.Detail = message, detail
	return &c
}

// appendErrorJSON writes the service's error body. The message ends with the request ID and the
// time with seven fraction digits, as every recorded error does (REST docs: "Table service error
// codes").
func appendErrorJSON(b []byte, code, message, requestID string, now time.Time) []byte {
	b = append(b, `{"odata.error":{"code":`...)
	b = wire.AppendString(b, code)
	b = append(b, `,"message":{"lang":"en-US","value":`...)
	b = wire.AppendString(b, message+"\nRequestId:"+requestID+"\nTime:"+now.UTC().Format("2006-01-02T15:04:05.0000000Z"))
	return append(b, "}}}"...)
}

// appendErrorXML writes the service's error body for the XML operations (the ACL and service
// calls), the data services error document it sends there with Content-Type application/xml:
// recorded in the aztables module's TestRetentionTooLong and TestSetInvalidAccessPolicy (its
// v1.0.0 testdata/recordings). The message keeps its line breaks, as recorded.
func appendErrorXML(b []byte, code, message, requestID string, now time.Time) []byte {
	b = append(b, `<?xml version="1.0" encoding="utf-8"?><m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><m:code>`...)
	b = append(b, xmlText.Replace(code)...)
	b = append(b, `</m:code><m:message xml:lang="en-US">`...)
	b = append(b, xmlText.Replace(message+"\nRequestId:"+requestID+"\nTime:"+now.UTC().Format("2006-01-02T15:04:05.0000000Z"))...)
	return append(b, "</m:message></m:error>"...)
}

// xmlText escapes character data; unlike xml.EscapeText it leaves line breaks as they are.
var xmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// detailHeader makes an error's detail safe to send as a header value.
func detailHeader(detail string) string {
	detail = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, detail)
	if len(detail) > 1024 {
		detail = detail[:1024]
	}
	return detail
}
