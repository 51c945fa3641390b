// Package wire is the Azure Table service's wire format, written once: the JSON of
// entities in both directions (request bodies; responses at nometadata, minimalmetadata and
// fullmetadata, with their odata.* members and <Name>@odata.type annotations), the EDM
// values within it (Int64 as a string, non-finite Doubles as "NaN" and "Infinity", the
// DateTime text, base64 Binary), the continuation-token form 1!<length>!<base64>, the ETag
// form W/"datetime'…'" and its Timestamp, and the entity address (PartitionKey='…',RowKey='…').
//
// Its consumers:
//   - the root package, for its continuation tokens, the ETags of the versions it writes,
//     DateTime's text form, and TransactionPayloadSize, which counts the smallest JSON
//     bodies of a transaction's actions;
//   - server, which reads request bodies and writes responses with it;
//   - remote, which writes request bodies and reads the entities and ETags of responses
//     with it, without linking the server.
//
// Values are odata.Value, the engine's typed EDM value, which its records decode into and
// its filters compare. The root package imports wire, so wire cannot name the root
// package's Property types; odata sits below both. Each consumer converts tabula.Entity to
// and from Entity at its edge (a type switch over the eight Property types), and maps a
// DecodeError to the service's error. Entity properties are a slice, not a map, so that a
// writer can reuse one across the entities of a page and put them in the service's name
// order in place.
//
// The hot paths are append-style and allocate little: strings are scanned and escaped 32
// and 8 bytes at a time, DecodeEntity reuses its member list from a pool of bounded size,
// and sizes are counted without writing.
package wire
