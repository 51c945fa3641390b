package remote

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"

	"github.com/tabuladb/tabula"
)

// An exchange is one SDK call's HTTP response, captured whole. The SDK hands back only what
// its own types keep: it re-encodes entities through map[string]any (so a Double 5.0 comes
// back as the number 5, which reads as an Int32), drops the per-action ETags of a
// transaction and the failing action's index. The capture policy keeps the response as
// sent, and the client reads types, ETags and errors from it, as the service wrote them.
type exchange struct {
	// selected, when set, is added to the request as $select: the SDK's GetEntity has no
	// option for it, and the service's point query takes one.
	selected string
	// stub, when set, is what the SDK reads in place of a successful response's body: the
	// client decodes the captured body itself, so the SDK's own decoding (entities through
	// map[string]any, then back to JSON) would be work thrown away.
	stub string
	// noContent asks the service not to echo the entity written (Prefer: return-no-content),
	// which the SDK's AddEntity cannot say: the client has the entity already.
	noContent bool
	// send, when set, is the request's body in place of the one the SDK encoded from its
	// own types (Set Table Service Properties sends the caller's document as it is).
	send []byte

	status int
	header http.Header
	body   []byte
}

type exchangeKey struct{}

// withExchange returns a context whose SDK call records its response in the exchange.
func withExchange(ctx context.Context, selected string) (context.Context, *exchange) {
	ex := &exchange{selected: selected}
	return context.WithValue(ctx, exchangeKey{}, ex), ex
}

// capturePolicy is a per-call policy, so it runs once per call, after the SDK's retries:
// it sees the request the SDK built before it is signed, and the final response.
type capturePolicy struct{}

func (capturePolicy) Do(req *policy.Request) (*http.Response, error) {
	ex, _ := req.Raw().Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		return req.Next()
	}
	if ex.selected != "" {
		u := req.Raw().URL
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += "$select=" + url.QueryEscape(ex.selected)
	}
	if ex.noContent {
		req.Raw().Header.Set("Prefer", "return-no-content")
	}
	if ex.send != nil {
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(ex.send)), "application/xml"); err != nil {
			return nil, err
		}
	}
	resp, err := req.Next()
	if err != nil || resp == nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	ex.status, ex.header, ex.body = resp.StatusCode, resp.Header, body
	if ex.stub != "" && resp.StatusCode < 300 {
		resp.Body = io.NopCloser(strings.NewReader(ex.stub))
		resp.ContentLength = int64(len(ex.stub))
	} else {
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}

// fail turns the error of the SDK call that recorded ex into Tabula's: a response of the
// service becomes the *tabula.Error of its code, so errors.Is matches the same sentinels as
// on the embedded engine; a context error passes unchanged; anything else (the network, a
// response the SDK could not read) is wrapped.
func (ex *exchange) fail(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if ex.status >= 400 {
		return serviceError(ex.status, ex.header, ex.body)
	}
	return fmt.Errorf("tabula/remote: %w", err)
}

// sentinels are the errors the service's codes map to. A code not listed here still makes a
// *tabula.Error with that code, and *tabula.Error matches by code, so a sentinel added to
// package tabula later matches too.
var sentinels = func() map[string]*tabula.Error {
	m := map[string]*tabula.Error{}
	for _, e := range []*tabula.Error{
		tabula.ErrTableAlreadyExists, tabula.ErrTableNotFound, tabula.ErrResourceNotFound,
		tabula.ErrEntityAlreadyExists, tabula.ErrUpdateConditionNotSatisfied, tabula.ErrInvalidInput,
		tabula.ErrOutOfRangeInput, tabula.ErrInvalidResourceName, tabula.ErrPropertiesNeedValue,
		tabula.ErrPropertyNameInvalid, tabula.ErrPropertyNameTooLong, tabula.ErrPropertyValueTooLarge,
		tabula.ErrKeyValueTooLarge, tabula.ErrEntityTooLarge, tabula.ErrTooManyProperties,
		tabula.ErrDuplicatePropertiesSpecified, tabula.ErrInvalidValueType, tabula.ErrInvalidDuplicateRow,
		tabula.ErrCommandsInBatchActOnDifferentPartitions, tabula.ErrRequestBodyTooLarge,
		tabula.ErrNotImplemented, tabula.ErrServerBusy, tabula.ErrOperationTimedOut, tabula.ErrInternal,
		tabula.ErrFullScanForbidden,
	} {
		m[e.Code] = e
	}
	return m
}()

// detailHeader is where `tabula serve` says exactly what was wrong (its own extension; the
// service sends no such header).
const detailHeader = "X-Tabula-Error-Detail"

// serviceError reads the service's error response: {"odata.error":{"code":…,"message":
// {"value":"<message>\nRequestId:…\nTime:…"}}}, the XML form of it that the ACL and
// service-properties calls send, or, for a response without a body (HEAD), the
// x-ms-error-code header.
func serviceError(status int, header http.Header, body []byte) *tabula.Error {
	code, message := parseODataError(body)
	if code == "" {
		code, message = parseXMLError(body)
	}
	if code == "" {
		code = header.Get("x-ms-error-code")
	}
	var e tabula.Error
	if s, ok := sentinels[code]; ok {
		e = *s
	} else {
		e = tabula.Error{Code: code}
	}
	if e.Code == "" {
		e.Code = "HTTP" + strconv.Itoa(status)
	}
	e.StatusCode = status
	if message != "" {
		e.Message = message
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	e.Detail = header.Get(detailHeader)
	return &e
}

// parseODataError returns the code and the message of an OData error body, without the
// RequestId and Time lines the service appends to the message.
func parseODataError(body []byte) (code, message string) {
	var doc struct {
		Error struct {
			Code    string `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if len(body) == 0 || json.Unmarshal(body, &doc) != nil {
		return "", ""
	}
	message, _, _ = strings.Cut(doc.Error.Message.Value, "\nRequestId:")
	return doc.Error.Code, message
}

// parseXMLError returns the code and the message of an XML error body, without the
// RequestId and Time lines: the data services error document (<m:error><m:code>…), as the
// Table service answers its ACL and service-properties calls, or the storage services'
// <Error><Code>…</Code><Message>…</Message></Error>.
func parseXMLError(body []byte) (code, message string) {
	var doc struct {
		XMLName xml.Name
		Code    string `xml:"code"`
		Message string `xml:"message"`
		// The storage services' form capitalizes the element names.
		StorageCode    string `xml:"Code"`
		StorageMessage string `xml:"Message"`
	}
	if len(body) == 0 || xml.Unmarshal(body, &doc) != nil {
		return "", ""
	}
	if n := doc.XMLName.Local; n != "error" && n != "Error" {
		return "", ""
	}
	code, message = cmp.Or(doc.Code, doc.StorageCode), cmp.Or(doc.Message, doc.StorageMessage)
	message, _, _ = strings.Cut(message, "\nRequestId:")
	return strings.TrimSpace(code), message
}
