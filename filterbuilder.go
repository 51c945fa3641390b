package tabula

import (
	"fmt"
	"strings"
)

// Filter is a $filter built from typed parts: beyond the service, which takes only text.
// Values go in as typed Properties and come out as the service's literals, quotes doubled,
// Int64 with its L, DateTime and Guid in their prefixed forms, so no value can change the
// shape of the filter: a value taken from a request can be put in a filter safely, which
// text built with fmt.Sprintf cannot promise (an OData injection through an unescaped
// quote is a bug that real libraries have shipped).
//
// Build one with Eq, Ne, Gt, Ge, Lt and Le, and combine them with And, Or and Not; its String
// is the text for Query.Filter, on any backend. The zero Filter matches every entity.
type Filter struct {
	text string
	// compound is set for an and, or or not: used as an operand, it is parenthesized.
	compound bool
}

// String returns the filter's text, in the service's syntax.
func (f Filter) String() string { return f.text }

// Comparison operators of the service's $filter.
const (
	opEq = "eq"
	opNe = "ne"
	opGt = "gt"
	opGe = "ge"
	opLt = "lt"
	opLe = "le"
)

// Eq matches entities whose property equals value: Eq("PartitionKey", String("Action")).
// property may be PartitionKey, RowKey, Timestamp or any property name; a name that is
// none of these (not a C# identifier, as the service requires), or that the filter language
// reads as a literal or operator (true, NaN, and …), is a programming error, and Eq panics,
// as regexp.MustCompile does. Values are data and are always escaped.
func Eq(property string, value Property) Filter { return compare(property, opEq, value) }

// Ne matches entities whose property differs from value; see Eq.
func Ne(property string, value Property) Filter { return compare(property, opNe, value) }

// Gt matches entities whose property is greater than value; see Eq.
func Gt(property string, value Property) Filter { return compare(property, opGt, value) }

// Ge matches entities whose property is greater than or equal to value; see Eq.
func Ge(property string, value Property) Filter { return compare(property, opGe, value) }

// Lt matches entities whose property is less than value; see Eq.
func Lt(property string, value Property) Filter { return compare(property, opLt, value) }

// Le matches entities whose property is less than or equal to value; see Eq.
func Le(property string, value Property) Filter { return compare(property, opLe, value) }

// filterWords are the words the $filter language reads as literals or operators wherever
// they stand: a property of that name exists, but no filter can name it.
var filterWords = map[string]bool{
	"true": true, "false": true, "null": true, "INF": true, "NaN": true,
	"INFf": true, "INFF": true, "NaNf": true, "NaNF": true,
	"and": true, "or": true, "not": true, "eq": true, "ne": true, "gt": true, "ge": true, "lt": true, "le": true,
}

func compare(property, op string, value Property) Filter {
	switch {
	case property == "PartitionKey" || property == "RowKey" || property == "Timestamp":
	case filterWords[property]:
		panic(fmt.Sprintf("tabula: a filter on property %q: the $filter language reads that word as a literal or operator, so no filter can name the property", property))
	default:
		if _, err := validatePropertyName(property); err != nil {
			panic(fmt.Sprintf("tabula: a filter on property %q: %v", property, err))
		}
	}
	if value == nil {
		panic(fmt.Sprintf("tabula: a filter on property %q: the value is nil; the service's filters compare with values only", property))
	}
	return Filter{text: property + " " + op + " " + Literal(value)}
}

// And matches entities every filter matches. Zero filters among them match everything and
// are left out; And() is the zero Filter.
func And(filters ...Filter) Filter { return join("and", filters) }

// Or matches entities any filter matches. A zero filter among them matches everything, and
// so does the result.
func Or(filters ...Filter) Filter {
	for _, f := range filters {
		if f.text == "" {
			return Filter{}
		}
	}
	return join("or", filters)
}

func join(op string, filters []Filter) Filter {
	var parts []string
	for _, f := range filters {
		if f.text != "" {
			parts = append(parts, operand(f))
		}
	}
	switch len(parts) {
	case 0:
		return Filter{}
	case 1:
		for _, f := range filters {
			if f.text != "" {
				return f
			}
		}
	}
	return Filter{text: strings.Join(parts, " "+op+" "), compound: true}
}

// Not matches entities f does not match. Not of the zero Filter, which matches everything,
// matches nothing: PartitionKey lt ”, which no key is.
func Not(f Filter) Filter {
	if f.text == "" {
		return Filter{text: "PartitionKey lt ''"}
	}
	return Filter{text: "not " + "(" + f.text + ")", compound: true}
}

func operand(f Filter) string {
	if f.compound {
		return "(" + f.text + ")"
	}
	return f.text
}

// Literal returns value as a literal of the service's $filter syntax: 'text' with quotes
// doubled, 42, 42L, 4.0 (a Double always with a point or exponent, so it stays a Double),
// NaN, INF, -INF, true, datetime'2024-01-02T03:04:05.1234567Z', guid'…' and X'hex'. Filter
// uses it (the literal odata prints and parses back); it is exported for filters written by
// hand.
func Literal(value Property) string {
	if value == nil {
		panic("tabula: a nil Property has no literal")
	}
	return ValueOf(value).String()
}
