package server

import (
	"mime"
	"strings"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/wire"
)

// level is how much OData metadata a JSON response carries (REST docs: "Payload format for Table
// service operations").
type level int

const (
	levelMinimal level = iota // the default
	levelNone
	levelFull
)

// contentType is the response Content-Type for each level. Top-level responses put a space
// after each ';' (as recorded); the parts of a batch response do not.
func (l level) contentType() string {
	switch l {
	case levelNone:
		return "application/json; odata=nometadata; streaming=true; charset=utf-8"
	case levelFull:
		return "application/json; odata=fullmetadata; streaming=true; charset=utf-8"
	}
	return "application/json; odata=minimalmetadata; streaming=true; charset=utf-8"
}

// wire is the level as the wire codec names it.
func (l level) wire() wire.Level {
	switch l {
	case levelNone:
		return wire.NoMetadata
	case levelFull:
		return wire.FullMetadata
	}
	return wire.MinimalMetadata
}

func (l level) partContentType() string {
	return strings.ReplaceAll(l.contentType(), "; ", ";")
}

// negotiate picks the metadata level from $format, which overrides Accept. Only the first
// media range of Accept counts, as in the service's front end. Atom, verbose JSON and
// non-JSON types get the service's 415s; a missing Accept means JSON with minimal metadata.
func negotiate(format, accept string) (level, *tabula.Error) {
	mt := format
	if mt == "" {
		mt, _, _ = strings.Cut(accept, ",")
	}
	mt = strings.TrimSpace(mt)
	if mt == "" {
		return levelMinimal, nil
	}
	if strings.Contains(strings.ToLower(mt), "atom") {
		return 0, withDetail(errAtomFormatNotSupported, "requested media type "+mt)
	}
	if strings.EqualFold(mt, "json") { // the OData shorthand for $format
		return levelMinimal, nil
	}
	typ, params, err := mime.ParseMediaType(mt)
	if err != nil {
		return 0, withDetail(errMediaTypeNotSupported, "media type "+mt+": "+err.Error())
	}
	switch typ {
	case "*/*", "application/*":
		return levelMinimal, nil
	case "application/json":
	default:
		return 0, withDetail(errMediaTypeNotSupported, "media type "+typ+" is not JSON")
	}
	switch strings.ToLower(params["odata"]) {
	case "", "minimalmetadata":
		return levelMinimal, nil
	case "nometadata":
		return levelNone, nil
	case "fullmetadata":
		return levelFull, nil
	case "verbose":
		return 0, errJSONVerboseFormatNotSupported
	}
	return 0, withDetail(errMediaTypeNotSupported, "odata="+params["odata"]+" is not a metadata level")
}

// checkBodyType accepts a request body's Content-Type: JSON (any metadata level) or none at
// all; Atom, verbose JSON and other types get the service's 415s.
func checkBodyType(ct string) *tabula.Error {
	ct = strings.TrimSpace(ct)
	if ct == "" {
		return nil
	}
	if strings.Contains(strings.ToLower(ct), "atom") {
		return withDetail(errAtomFormatNotSupported, "request Content-Type "+ct)
	}
	typ, params, err := mime.ParseMediaType(ct)
	if err != nil || typ != "application/json" {
		return withDetail(errMediaTypeNotSupported, "request Content-Type "+ct+" is not JSON")
	}
	if strings.EqualFold(params["odata"], "verbose") {
		return errJSONVerboseFormatNotSupported
	}
	return nil
}
