package odata

import "strings"

// Expr is a parsed filter: one of And, Or, Not, Comparison, Constant. Its
// String method prints the canonical filter text, which Parse reads back to
// an equal Expr.
type Expr interface {
	String() string
	appendTo(sb *strings.Builder)
}

// And is true when every term is; it has at least two terms, none an And.
type And struct{ Terms []Expr }

// Or is true when any term is; it has at least two terms, none an Or.
type Or struct{ Terms []Expr }

// Not negates X with plain boolean negation: not (Foo eq 1) matches entities
// without Foo, unlike Foo ne 1.
type Not struct{ X Expr }

// Comparison compares a property with a literal. A filter that puts the
// literal first is stored turned around ('a' lt P becomes P gt 'a').
type Comparison struct {
	Property string
	Op       Op
	Value    Value
}

// Constant is a bare true or false, which the service accepts as an operand
// of and/or/not (e.g. "true and RowKey eq '1'").
type Constant struct{ Value bool }

// Op is a comparison operator.
type Op uint8

// The six comparison operators.
const (
	Eq Op = iota + 1
	Ne
	Gt
	Ge
	Lt
	Le
)

var opNames = [...]string{Eq: "eq", Ne: "ne", Gt: "gt", Ge: "ge", Lt: "lt", Le: "le"}

// String returns the operator's keyword, e.g. "eq".
func (o Op) String() string {
	if o >= Eq && o <= Le {
		return opNames[o]
	}
	return "op?"
}

// flip returns the operator for the operands swapped: a lt b ⇔ b gt a.
func (o Op) flip() Op {
	switch o {
	case Gt:
		return Lt
	case Ge:
		return Le
	case Lt:
		return Gt
	case Le:
		return Ge
	}
	return o
}

// negate returns the operator whose result is always the opposite.
func (o Op) negate() Op {
	switch o {
	case Eq:
		return Ne
	case Ne:
		return Eq
	case Gt:
		return Le
	case Ge:
		return Lt
	case Lt:
		return Ge
	}
	return Gt
}

// holds reports whether a comparison whose operands compare as c (-1, 0, +1)
// satisfies o.
func (o Op) holds(c int) bool {
	switch o {
	case Eq:
		return c == 0
	case Ne:
		return c != 0
	case Gt:
		return c > 0
	case Ge:
		return c >= 0
	case Lt:
		return c < 0
	}
	return c <= 0
}

func str(e Expr) string {
	var sb strings.Builder
	e.appendTo(&sb)
	return sb.String()
}

func (e And) String() string        { return str(e) }
func (e Or) String() string         { return str(e) }
func (e Not) String() string        { return str(e) }
func (e Comparison) String() string { return str(e) }
func (e Constant) String() string   { return str(e) }

// Printing: or binds loosest, then and, then not; a comparison under not
// needs parentheses because not binds tighter than eq in OData.
func (e And) appendTo(sb *strings.Builder) {
	for i, t := range e.Terms {
		if i > 0 {
			sb.WriteString(" and ")
		}
		if _, ok := t.(Or); ok {
			sb.WriteByte('(')
			t.appendTo(sb)
			sb.WriteByte(')')
			continue
		}
		t.appendTo(sb)
	}
}

func (e Or) appendTo(sb *strings.Builder) {
	for i, t := range e.Terms {
		if i > 0 {
			sb.WriteString(" or ")
		}
		t.appendTo(sb)
	}
}

func (e Not) appendTo(sb *strings.Builder) {
	sb.WriteString("not ")
	switch e.X.(type) {
	case Not, Constant:
		e.X.appendTo(sb)
	default:
		sb.WriteByte('(')
		e.X.appendTo(sb)
		sb.WriteByte(')')
	}
}

func (e Comparison) appendTo(sb *strings.Builder) {
	sb.WriteString(e.Property)
	sb.WriteByte(' ')
	sb.WriteString(e.Op.String())
	sb.WriteByte(' ')
	e.Value.appendLiteral(sb)
}

func (e Constant) appendTo(sb *strings.Builder) {
	if e.Value {
		sb.WriteString("true")
	} else {
		sb.WriteString("false")
	}
}
