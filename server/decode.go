package server

import (
	"errors"

	"github.com/tabuladb/tabula"
	"github.com/tabuladb/tabula/internal/wire"
)

// Request bodies are read by the wire codec (internal/wire); this file is the edge where a
// wire.Entity becomes the engine's tabula.Entity and a wire.DecodeError the service's error.

// decodeEntity applies the service's reading rules to a JSON entity body (wire.DecodeEntity);
// the engine then checks names and limits.
func decodeEntity(body []byte, keys wire.Keys) (tabula.Entity, *tabula.Error) {
	return decodeEntityWith(body, keys, false)
}

// decodeRequestEntity is decodeEntity for a request's body, under the flavour's reading rules.
func (c *call) decodeRequestEntity(body []byte, keys wire.Keys) (tabula.Entity, *tabula.Error) {
	return decodeEntityWith(body, keys, c.cosmos())
}

// decodeEntityWith is decodeEntity, with Cosmos DB's folding of property names that differ
// only in letter case when foldCase is set (see foldCaseDuplicates).
func decodeEntityWith(body []byte, keys wire.Keys, foldCase bool) (tabula.Entity, *tabula.Error) {
	we, err := wire.DecodeEntity(body, keys)
	if err != nil {
		return tabula.Entity{}, decodeError(err)
	}
	if foldCase {
		we.Properties = foldCaseDuplicates(we.Properties)
	}
	e := tabula.Entity{PartitionKey: we.PartitionKey, RowKey: we.RowKey, Timestamp: we.Timestamp,
		ETag: tabula.ETag(we.ETag), Properties: make(tabula.Properties, len(we.Properties))}
	for _, p := range we.Properties {
		e.Properties[p.Name] = tabula.PropertyOf(p.Value)
	}
	return e, nil
}

// decodeError is the service's error for a body the wire codec refused.
func decodeError(err error) *tabula.Error {
	var de *wire.DecodeError
	if !errors.As(err, &de) {
		return invalidInput("", err.Error())
	}
	switch de.Reason {
	case wire.InvalidValue:
		return invalidInput(msgValueNotValid, de.Detail)
	case wire.DuplicateProperty:
		return withDetail(tabula.ErrDuplicatePropertiesSpecified, de.Detail)
	case wire.MissingKeys:
		return withDetail(tabula.ErrPropertiesNeedValue, de.Detail)
	}
	return invalidInput("", de.Detail)
}
