// Package odata implements the $filter language of Azure Table storage as
// the service itself behaves: Parse reads a filter into a typed tree (or
// rejects it with the service's error code and message), String prints the
// tree back as canonical filter text, Compile turns it into a Predicate that
// evaluates entities without allocating, and Ranges derives the PartitionKey
// and RowKey ranges a query planner may scan instead of the whole table.
// The package knows nothing about storage; the authority for its behaviour is
// REST docs: "Querying tables and entities", and the tests here.
//
// The rules that surprise people, and why they are implemented so:
//
//   - The service parses filters with the WCF Data Services OData v3 parser
//     and then rejects what Table storage cannot run. So malformed text is 400
//     InvalidInput ("Syntax error at position N in '…'.", N counted in UTF-16
//     units, just past the offending token), while valid OData that Table
//     storage lacks (functions such as startswith, arithmetic, member access,
//     comparing two properties or two literals, null) is 501 NotImplemented.
//   - Keywords and operators are case-sensitive ("All parts of the filter
//     string are case-sensitive"); the type prefixes datetime, guid, binary
//     and X are not, because the WCF lexer compares them ignoring case.
//   - A literal may stand on either side of the operator. An integer literal
//     without L must fit Int32.
//   - A comparison with a missing property is false for every operator, ne
//     included; not is plain boolean negation.
//   - A property of another type than the literal compares as less than it,
//     except that an Int32 literal compares numerically with Int32, Int64 and
//     Double properties, and an Int64 literal with Int64 and Double ones.
//   - Strings compare by UTF-16 code units (CompareStrings), not by Go's
//     UTF-8 byte order; the two differ for supplementary characters.
//   - Doubles follow .NET Double.CompareTo: NaN equals NaN and sorts below
//     every number, so each operator has a definite answer.
//   - There is no limit on the number of comparisons (the documented 15 is
//     not enforced by the service), but filters are capped at
//     MaxFilterLength bytes and MaxDepth nesting levels.
package odata
