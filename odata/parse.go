package odata

import (
	"strconv"
	"strings"
)

// Limits that keep hostile input from exhausting memory or the stack. The
// service accepts URLs of a few KiB; these leave ample room above that.
const (
	// MaxFilterLength is the longest filter Parse accepts, in bytes: 32 times
	// what fits in an 8 KiB URL, enough for thousands of comparisons.
	MaxFilterLength = 256 << 10
	// MaxDepth bounds nesting of parentheses, not, unary minus and function
	// arguments. WCF stops at 800 recursive parser calls, which a paren level
	// costs about six of; 100 levels is in the same range. and/or chains do
	// not nest, so their length is unlimited.
	MaxDepth = 100
)

// Parsing runs in two phases, like the service: first the whole text is
// parsed as OData v3 (syntax errors and unconvertible literals are 400
// InvalidInput, reported in text order), then the tree is checked against
// what Table storage supports (valid OData it cannot run is 501
// NotImplemented).

type nkind uint8

const (
	nOr nkind = iota
	nAnd
	nNot
	nCmp
	nArith    // add sub mul div mod
	nNeg      // unary minus
	nLit      // a literal of a type Table storage has
	nOtherLit // null, decimal, single, datetimeoffset, time, spatial
	nProp
	nPath // member access a/b
	nFunc
)

type node struct {
	kind nkind
	op   Op
	kids []*node
	val  Value
	name string
	end  int // byte offset just past the node's last token
}

type parser struct {
	lexer
	depth int
}

// Parse parses a $filter expression. An empty or all-whitespace filter
// returns a nil Expr and no error: it means "all entities". Errors are
// *Error values carrying the service's code and message.
func Parse(filter string) (Expr, error) {
	e, err := parse(filter)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func parse(filter string) (Expr, *Error) {
	if len(filter) > MaxFilterLength {
		return nil, tooLong(len(filter))
	}
	p := &parser{lexer: lexer{src: filter}}
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok.kind == tEnd {
		return nil, nil
	}
	n, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEnd {
		return nil, p.unexpected()
	}
	return p.toBool(n)
}

// unexpected reports the current token as out of place. A '=' gets 501: the
// service answered "(1 === 1)" with NotImplemented (an Azurite test comment
// records it), so it evidently treats '=' as an operator it lacks rather than
// as bad syntax.
func (p *parser) unexpected() *Error {
	if p.tok.kind == tEqual {
		return notImplemented(p.src, p.tok.end, "operator '='")
	}
	return syntaxError(p.src, p.tok.end)
}

func (p *parser) isWord(w string) bool {
	return p.tok.kind == tIdent && p.text(p.tok) == w
}

func (p *parser) enter() *Error {
	p.depth++
	if p.depth > MaxDepth {
		return &Error{
			Code:    CodeInvalidInput,
			Message: syntaxError(p.src, p.tok.end).Message,
			Pos:     utf16Pos(p.src, p.tok.end),
			detail:  "expression nested deeper than " + strconv.Itoa(MaxDepth) + " levels at position " + strconv.Itoa(utf16Pos(p.src, p.tok.end)),
		}
	}
	return nil
}

func (p *parser) parseOr() (*node, *Error) {
	return p.parseChain(nOr, "or", (*parser).parseAnd)
}

func (p *parser) parseAnd() (*node, *Error) {
	return p.parseChain(nAnd, "and", (*parser).parseComparison)
}

// parseChain reads operand (word operand)* into one n-ary node, so that long
// and/or chains cost no recursion.
func (p *parser) parseChain(kind nkind, word string, operand func(*parser) (*node, *Error)) (*node, *Error) {
	first, err := operand(p)
	if err != nil {
		return nil, err
	}
	if !p.isWord(word) {
		return first, nil
	}
	n := &node{kind: kind, kids: []*node{first}}
	for p.isWord(word) {
		if err := p.next(); err != nil {
			return nil, err
		}
		k, err := operand(p)
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, k)
	}
	n.end = n.kids[len(n.kids)-1].end
	return n, nil
}

var comparisonOps = map[string]Op{"eq": Eq, "ne": Ne, "gt": Gt, "ge": Ge, "lt": Lt, "le": Le}

func (p *parser) parseComparison() (*node, *Error) {
	left, err := p.parseAdditive()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tIdent {
		op, ok := comparisonOps[p.text(p.tok)]
		if !ok {
			break
		}
		if err := p.next(); err != nil {
			return nil, err
		}
		right, err := p.parseAdditive()
		if err != nil {
			return nil, err
		}
		left = &node{kind: nCmp, op: op, kids: []*node{left, right}, end: right.end}
	}
	return left, nil
}

var (
	additiveOps       = map[string]bool{"add": true, "sub": true}
	multiplicativeOps = map[string]bool{"mul": true, "div": true, "mod": true}
)

func (p *parser) parseAdditive() (*node, *Error) {
	return p.parseArith(additiveOps, (*parser).parseMultiplicative)
}

func (p *parser) parseMultiplicative() (*node, *Error) {
	return p.parseArith(multiplicativeOps, (*parser).parseUnary)
}

func (p *parser) parseArith(words map[string]bool, operand func(*parser) (*node, *Error)) (*node, *Error) {
	left, err := operand(p)
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tIdent && words[p.text(p.tok)] {
		if err := p.next(); err != nil {
			return nil, err
		}
		right, err := operand(p)
		if err != nil {
			return nil, err
		}
		left = &node{kind: nArith, kids: []*node{left, right}, end: right.end}
	}
	return left, nil
}

func (p *parser) parseUnary() (*node, *Error) {
	kind := nNot
	switch {
	case p.tok.kind == tMinus:
		kind = nNeg
	case p.isWord("not"):
	default:
		return p.parsePrimary()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	x, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	p.depth--
	return &node{kind: kind, kids: []*node{x}, end: x.end}, nil
}

func (p *parser) parsePrimary() (*node, *Error) {
	n, err := p.parsePrimaryStart()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tSlash {
		if err := p.next(); err != nil {
			return nil, err
		}
		if p.tok.kind != tIdent {
			return nil, p.unexpected()
		}
		n = &node{kind: nPath, kids: []*node{n}, name: p.text(p.tok), end: p.tok.end}
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (p *parser) parsePrimaryStart() (*node, *Error) {
	t := p.tok
	switch t.kind {
	case tOpen:
		if err := p.enter(); err != nil {
			return nil, err
		}
		if err := p.next(); err != nil {
			return nil, err
		}
		n, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tClose {
			return nil, p.unexpected()
		}
		p.depth--
		if err := p.next(); err != nil {
			return nil, err
		}
		return n, nil
	case tIdent:
		if err := p.next(); err != nil {
			return nil, err
		}
		if p.tok.kind == tOpen {
			return p.parseCall(t)
		}
		return &node{kind: nProp, name: p.text(t), end: t.end}, nil
	case tEnd, tClose, tComma, tMinus, tEqual, tSlash, tQuestion, tDot, tStar:
		return nil, p.unexpected()
	}
	n, err := p.literal(t)
	if err != nil {
		return nil, err
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	return n, nil
}

// odataFunctions are the OData v3 canonical functions. WCF rejects any other
// name as it parses ("Unknown function", 400); Table storage then rejects
// every known one with 501.
var odataFunctions = map[string]bool{
	"substringof": true, "endswith": true, "startswith": true, "length": true,
	"indexof": true, "replace": true, "substring": true, "tolower": true,
	"toupper": true, "trim": true, "concat": true, "year": true, "month": true,
	"day": true, "hour": true, "minute": true, "second": true, "round": true,
	"floor": true, "ceiling": true, "isof": true, "cast": true,
}

// parseCall reads a function call; the arguments must parse even though the
// call will be refused.
func (p *parser) parseCall(name token) (*node, *Error) {
	if !odataFunctions[p.text(name)] {
		return nil, syntaxError(p.src, name.end)
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	n := &node{kind: nFunc, name: p.text(name)}
	if err := p.next(); err != nil { // past '('
		return nil, err
	}
	if p.tok.kind != tClose {
		for {
			a, err := p.parseOr()
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, a)
			if p.tok.kind != tComma {
				break
			}
			if err := p.next(); err != nil {
				return nil, err
			}
		}
		if p.tok.kind != tClose {
			return nil, p.unexpected()
		}
	}
	n.end = p.tok.end
	p.depth--
	if err := p.next(); err != nil {
		return nil, err
	}
	return n, nil
}

// literal converts a literal token to a node. Conversion failures are the
// service's "Unrecognized '<type>' literal '<text>' " errors.
func (p *parser) literal(t token) (*node, *Error) {
	text := p.text(t)
	n := &node{kind: nLit, end: t.end}
	fail := func(typ Type) (*node, *Error) { return nil, literalError(p.src, t.end, typ, text) }
	switch t.kind {
	case tString:
		n.val = StringValue(strings.ReplaceAll(text[1:len(text)-1], "''", "'"))
	case tBool:
		n.val = BooleanValue(text == "true")
	case tInt32:
		i, ok := parseInt(text, 32)
		if !ok {
			return fail(Int32)
		}
		n.val = Value{Type: Int32, Int: i}
	case tInt64:
		i, ok := parseInt(text[:len(text)-1], 64)
		if !ok {
			return fail(Int64)
		}
		n.val = Int64Value(i)
	case tDouble:
		f, ok := parseDouble(text)
		if !ok {
			return fail(Double)
		}
		n.val = DoubleValue(f)
	case tDateTime:
		ticks, ok := parseDateTime(quoted(text))
		if !ok {
			return fail(DateTime)
		}
		n.val = DateTimeValue(ticks)
	case tGuid:
		g, ok := parseGuid(quoted(text))
		if !ok {
			return fail(Guid)
		}
		n.val = GuidValue(g)
	case tBinary:
		b, ok := parseHex(quoted(text))
		if !ok {
			return fail(Binary)
		}
		n.val = BinaryValue(b)
	default: // tNull, tSingle, tDecimal, tOtherTyped
		n.kind = nOtherLit
		n.name = text
	}
	return n, nil
}

// quoted returns the part of prefix'…' between the quotes.
func quoted(text string) string {
	i := strings.IndexByte(text, '\'')
	return text[i+1 : len(text)-1]
}

// toBool converts a parsed tree in boolean position to the Table subset.
func (p *parser) toBool(n *node) (Expr, *Error) {
	switch n.kind {
	case nOr, nAnd:
		terms := make([]Expr, 0, len(n.kids))
		for _, k := range n.kids {
			e, err := p.toBool(k)
			if err != nil {
				return nil, err
			}
			// (a and b) and c is a and b and c: flatten so that the
			// printed form re-parses to the same tree.
			switch x := e.(type) {
			case And:
				if n.kind == nAnd {
					terms = append(terms, x.Terms...)
					continue
				}
			case Or:
				if n.kind == nOr {
					terms = append(terms, x.Terms...)
					continue
				}
			}
			terms = append(terms, e)
		}
		if n.kind == nAnd {
			return And{Terms: terms}, nil
		}
		return Or{Terms: terms}, nil
	case nNot:
		x, err := p.toBool(n.kids[0])
		if err != nil {
			return nil, err
		}
		return Not{X: x}, nil
	case nCmp:
		return p.comparison(n)
	case nLit:
		if n.val.Type == Boolean {
			return Constant{Value: n.val.Int != 0}, nil
		}
		// WCF rejects a non-boolean literal where a boolean is needed
		// ("Expression of type 'System.Boolean' expected"); that text
		// is unobserved on the service, so use its syntax-error shape.
		return nil, syntaxError(p.src, n.end)
	}
	return nil, p.unsupported(n)
}

// comparison accepts exactly one property against one literal, in either
// order. Property-to-property and literal-to-literal comparisons are valid
// OData that Table storage cannot run ("one side of the expression must be a
// constant", per its documentation): 501 like every other such shape.
func (p *parser) comparison(n *node) (Expr, *Error) {
	l, r := n.kids[0], n.kids[1]
	switch {
	case l.kind == nProp && r.kind == nLit:
		return Comparison{Property: l.name, Op: n.op, Value: r.val}, nil
	case l.kind == nLit && r.kind == nProp:
		return Comparison{Property: r.name, Op: n.op.flip(), Value: l.val}, nil
	case l.kind == nProp && r.kind == nProp:
		return nil, notImplemented(p.src, n.end, "comparison of two properties")
	case l.kind == nLit && r.kind == nLit:
		return nil, notImplemented(p.src, n.end, "comparison of two literals")
	}
	if l.kind != nProp && l.kind != nLit {
		return nil, p.unsupported(l)
	}
	return nil, p.unsupported(r)
}

func (p *parser) unsupported(n *node) *Error {
	var what string
	switch n.kind {
	case nFunc:
		what = "function " + n.name
	case nArith, nNeg:
		what = "arithmetic"
	case nPath:
		what = "member access"
	case nOtherLit:
		what = "literal " + n.name
	case nProp:
		what = "property " + n.name + " used as a boolean"
	case nCmp:
		what = "comparison used as an operand"
	case nNot, nAnd, nOr:
		what = "boolean operator applied to or used as a non-boolean"
	case nLit:
		what = "literal " + n.val.String() + " used as an operand"
	default:
		what = "expression"
	}
	return notImplemented(p.src, n.end, what)
}
