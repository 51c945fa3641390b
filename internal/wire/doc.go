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
//
// # The interchange format
//
// Tabula's export and import files (tabula.Export, tabula.Import, tabula export and import;
// an import also reads the fixture format of fixture.go, told apart by the first line)
// are JSON Lines: UTF-8, one JSON object a line, gzip-compressed when the file's name ends in
// .gz (the command line's choice; the format is the text). An entity is a line of its own in
// the form a query response gives it at minimal metadata, so any tool that reads the
// service's JSON reads it: odata.etag, the keys, the Timestamp, then the properties in name
// order, a property annotated with <Name>@odata.type wherever JSON alone would lose its type
// (Edm.Int64 as a string of digits, Edm.DateTime with its 100 ns ticks, Edm.Guid,
// Edm.Binary in base64, Edm.Double "NaN", "Infinity" and "-Infinity"; a finite Double is
// always written with a fraction or exponent, 5.0, so it never reads back as an Int32).
// Every other line is a control line whose first member is "@tabula", a name no property
// can have:
//
//   - {"@tabula":"export","version":1} is the first line;
//   - {"@tabula":"account","account":A,"serviceProperties":X} gives an account's Set Table
//     Service Properties document (X, its XML, as a string); optional, before the account's
//     tables;
//   - {"@tabula":"table","account":A,"table":T,"accessPolicies":[…]} starts table T of
//     account A (the empty string for a database's root namespace), with its stored access
//     policies ({"Id","Start","Expiry","Permission"}, as the service's SignedIdentifier);
//     the table's entity lines follow;
//   - {"@tabula":"end","account":A,"table":T,"entities":N} ends the table, counting its
//     entities;
//   - {"@tabula":"eof","tables":N,"entities":M} is the last line, counting the file's
//     tables and entities.
//
// A file without its trailer was cut short, and a count that disagrees means lines are
// missing or extra: the Decoder reports both, so an import never mistakes a truncated file
// for a whole one. A line that breaks a rule is a *FormatError naming the line, the member
// and the rule. Blank lines mean nothing. An example file, one account with service
// properties and a table with a policy and two entities:
//
//	{"@tabula":"export","version":1}
//	{"@tabula":"account","account":"shop","serviceProperties":"<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties>…</StorageServiceProperties>"}
//	{"@tabula":"table","account":"shop","table":"Orders","accessPolicies":[{"Id":"readers","Expiry":"2030-01-01T00:00:00Z","Permission":"r"}]}
//	{"odata.etag":"W/\"datetime'2024-05-01T10%3A00%3A00.1234567Z'\"","PartitionKey":"alice","RowKey":"0001","Timestamp":"2024-05-01T10:00:00.1234567Z","Paid":true,"Total":12.5,"Units@odata.type":"Edm.Int64","Units":"9223372036854775807"}
//	{"odata.etag":"W/\"datetime'2024-05-01T10%3A00%3A01Z'\"","PartitionKey":"bob","RowKey":"0002","Timestamp":"2024-05-01T10:00:01Z","Id@odata.type":"Edm.Guid","Id":"c9da6455-213d-42c9-9a79-3e9149a57833","Ratio@odata.type":"Edm.Double","Ratio":"NaN"}
//	{"@tabula":"end","account":"shop","table":"Orders","entities":2}
//	{"@tabula":"eof","tables":1,"entities":2}
package wire
