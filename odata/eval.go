package odata

import "bytes"

// Record is what a filter is evaluated against. PartitionKey and RowKey
// (Edm.String) and Timestamp (Edm.DateTime) are properties like any other.
type Record interface {
	// Property returns the named property; ok is false when the entity
	// has no such property.
	Property(name string) (v Value, ok bool)
}

// Predicate is a compiled filter. It is safe for concurrent use.
type Predicate struct {
	match func(Record) bool
}

// Match reports whether r satisfies the filter. It does not allocate.
func (p *Predicate) Match(r Record) bool { return p.match(r) }

// Compile turns e into a Predicate: a tree of closures specialised by
// operator and literal type, so that Match neither re-reads the tree nor
// switches on types more than once per comparison. A nil Expr matches
// everything.
func Compile(e Expr) *Predicate {
	if e == nil {
		return &Predicate{match: matchAll}
	}
	return &Predicate{match: compile(e)}
}

func matchAll(Record) bool  { return true }
func matchNone(Record) bool { return false }

func compile(e Expr) func(Record) bool {
	switch e := e.(type) {
	case Constant:
		if e.Value {
			return matchAll
		}
		return matchNone
	case Not:
		x := compile(e.X)
		return func(r Record) bool { return !x(r) }
	case And:
		fs := compileAll(e.Terms)
		if len(fs) == 2 {
			a, b := fs[0], fs[1]
			return func(r Record) bool { return a(r) && b(r) }
		}
		return func(r Record) bool {
			for _, f := range fs {
				if !f(r) {
					return false
				}
			}
			return true
		}
	case Or:
		fs := compileAll(e.Terms)
		if len(fs) == 2 {
			a, b := fs[0], fs[1]
			return func(r Record) bool { return a(r) || b(r) }
		}
		return func(r Record) bool {
			for _, f := range fs {
				if f(r) {
					return true
				}
			}
			return false
		}
	case Comparison:
		return compileComparison(e)
	}
	panic("odata: unknown Expr type")
}

func compileAll(es []Expr) []func(Record) bool {
	fs := make([]func(Record) bool, len(es))
	for i, e := range es {
		fs[i] = compile(e)
	}
	return fs
}

// compileComparison builds the comparison closure. The rules (REST docs: "Querying tables and
// entities" and the tests here): a missing property makes every operator false, ne included; a
// property of another type compares as less than the literal, except that an Int32 literal compares
// numerically with Int32, Int64 and Double properties and an Int64 literal with Int64 and Double
// properties.
func compileComparison(c Comparison) func(Record) bool {
	name := c.Property
	lit := c.Value
	// want[c+1] is the result for a comparison outcome c of -1, 0, +1.
	want := [3]bool{c.Op.holds(-1), c.Op.holds(0), c.Op.holds(1)}
	mismatch := want[0]

	switch lit.Type {
	case String:
		s := lit.Str
		switch c.Op {
		case Eq:
			return func(r Record) bool {
				v, ok := r.Property(name)
				return ok && v.Type == String && v.Str == s
			}
		case Ne:
			return func(r Record) bool {
				v, ok := r.Property(name)
				return ok && (v.Type != String || v.Str != s)
			}
		}
		return func(r Record) bool {
			v, ok := r.Property(name)
			if !ok {
				return false
			}
			if v.Type != String {
				return mismatch
			}
			return want[CompareStrings(v.Str, s)+1]
		}
	case Binary:
		b := lit.Bytes
		return func(r Record) bool {
			v, ok := r.Property(name)
			if !ok {
				return false
			}
			if v.Type != Binary {
				return mismatch
			}
			return want[bytes.Compare(v.Bytes, b)+1]
		}
	case Guid:
		g := lit.Guid
		return func(r Record) bool {
			v, ok := r.Property(name)
			if !ok {
				return false
			}
			if v.Type != Guid {
				return mismatch
			}
			return want[bytes.Compare(v.Guid[:], g[:])+1]
		}
	case Boolean, DateTime:
		t := lit.Type
		i := lit.Int
		if t == Boolean {
			i = b01(i)
		}
		return func(r Record) bool {
			v, ok := r.Property(name)
			if !ok {
				return false
			}
			if v.Type != t {
				return mismatch
			}
			vi := v.Int
			if t == Boolean {
				vi = b01(vi)
			}
			return want[compareInt(vi, i)+1]
		}
	case Double:
		f := lit.Float
		return func(r Record) bool {
			v, ok := r.Property(name)
			if !ok {
				return false
			}
			if v.Type != Double {
				return mismatch
			}
			return want[compareFloat(v.Float, f)+1]
		}
	case Int32, Int64:
		i := lit.Int
		f := float64(i)
		int32Widens := lit.Type == Int32
		return func(r Record) bool {
			v, ok := r.Property(name)
			if !ok {
				return false
			}
			switch v.Type {
			case Int64:
				return want[compareInt(v.Int, i)+1]
			case Double:
				return want[compareFloat(v.Float, f)+1]
			case Int32:
				if int32Widens {
					return want[compareInt(v.Int, i)+1]
				}
			}
			return mismatch
		}
	}
	// A literal without a type cannot come from Parse; treat every
	// property as mismatched, and a missing one as missing.
	return func(r Record) bool {
		_, ok := r.Property(name)
		return ok && mismatch
	}
}

func b01(i int64) int64 {
	if i != 0 {
		return 1
	}
	return 0
}
