package odata

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; an accepted filter prints to text that
// parses to a tree printing identically; Ranges and Compile never panic and
// Ranges' output is well-formed; a rejected filter carries a known code.
func FuzzParse(f *testing.F) {
	for _, tc := range parseOK {
		f.Add(tc.in)
	}
	for _, tc := range parseErr {
		f.Add(tc.in)
	}
	f.Add("PartitionKey eq 'a' and RowKey ge 'Sh' and RowKey lt 'Si'")
	f.Add("not (PartitionKey eq 'a') or (PartitionKey eq '😀' and RowKey ne '～')")
	f.Fuzz(func(t *testing.T, filter string) {
		e, err := Parse(filter)
		if err != nil {
			var oe *Error
			if !errors.As(err, &oe) {
				t.Fatalf("%q: error of type %T", filter, err)
			}
			if oe.Code != CodeInvalidInput && oe.Code != CodeNotImplemented {
				t.Fatalf("%q: code %q", filter, oe.Code)
			}
			if oe.Message == "" || !strings.HasPrefix(err.Error(), "odata: ") {
				t.Fatalf("%q: bad error %#v", filter, oe)
			}
			return
		}
		if e == nil {
			if strings.TrimFunc(filter, isSpace) != "" {
				t.Fatalf("%q: nil Expr for a non-blank filter", filter)
			}
			return
		}
		s := e.String()
		e2, err := Parse(s)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", filter, s, err)
		}
		if s2 := e2.String(); s2 != s {
			t.Fatalf("%q printed as %q, re-printed as %q", filter, s, s2)
		}
		// The same tree, too (NaN is never DeepEqual to itself).
		if !strings.Contains(s, "NaN") && !reflect.DeepEqual(e, e2) {
			t.Fatalf("%q: tree %#v re-parsed as %#v", filter, e, e2)
		}
		pred := Compile(e)
		pred.Match(rec{})
		pred.Match(anyRec{})
		rs := Ranges(e)
		if rs == nil || len(rs) > maxRanges {
			t.Fatalf("%q: %d ranges", filter, len(rs))
		}
		for i := 1; i < len(rs); i++ {
			if !before(rs[i-1], rs[i]) {
				t.Fatalf("%q: ranges out of order: %v", filter, rs)
			}
		}
	})
}

// anyRec has every property, its type chosen by the name's length, so that
// fuzzed filters reach every comparison path (length 0 mod 9: missing).
type anyRec struct{}

func (anyRec) Property(name string) (Value, bool) {
	switch len(name) % 9 {
	case 1:
		return StringValue(name), true
	case 2:
		return BinaryValue([]byte(name)), true
	case 3:
		return BooleanValue(len(name) > 10), true
	case 4:
		return DateTimeValue(int64(len(name)) << 40), true
	case 5:
		return DoubleValue(float64(len(name)) / 3), true
	case 6:
		return GuidValue([16]byte{byte(len(name))}), true
	case 7:
		return Int32Value(int32(len(name))), true
	case 8:
		return Int64Value(int64(len(name))), true
	}
	return Value{}, false
}
