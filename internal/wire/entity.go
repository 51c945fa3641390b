package wire

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tabuladb/tabula/odata"
)

// Entity is an entity as the wire format carries it. The root package's tabula.Entity
// converts to and from it at each consumer's edge (see the package documentation).
type Entity struct {
	PartitionKey string
	RowKey       string
	// Timestamp is written at the metadata levels that carry it and read from a response;
	// the zero time when a body has none.
	Timestamp time.Time
	// ETag is written as odata.etag and read from a response's odata.etag.
	ETag string
	// Properties are the entity's other properties, in any order; the writers write them in
	// name order (sorting many of them in place). A Value of no type (the zero Value) is
	// written as null.
	Properties []Property
}

// Property is one property of an Entity.
type Property struct {
	Name  string
	Value odata.Value
}

// annotationSuffix ends the name of a member that gives another member's EDM type.
const annotationSuffix = "@odata.type"

// byName returns the positions of ps in name order, the order the service writes
// properties in, in ord's array, by an insertion sort of positions: an entity most often has
// a few properties, and sorting them in place would move whole Values. More than fit in ord
// are sorted in place instead, and the order is then the identity, nil.
func byName(ps []Property, ord []uint8) []uint8 {
	if len(ps) > cap(ord) {
		slices.SortFunc(ps, func(a, b Property) int { return strings.Compare(a.Name, b.Name) })
		return nil
	}
	ord = ord[:len(ps)]
	for i := range ord {
		ord[i] = uint8(i)
	}
	for i := 1; i < len(ord); i++ {
		k := ord[i]
		name, j := ps[k].Name, i
		for ; j > 0 && name < ps[ord[j-1]].Name; j-- {
			ord[j] = ord[j-1]
		}
		ord[j] = k
	}
	return ord
}

// at is the position of the i-th property in the order byName returned.
func at(ord []uint8, i int) int {
	if ord == nil {
		return i
	}
	return int(ord[i])
}

// fewProperties is how many properties byName orders without moving them.
const fewProperties = 32

// AppendBody writes e as the body of an insert or update: the keys, then the properties in
// name order, each annotated only where the service needs the annotation to know its type
// (Int64, DateTime, Guid, Binary, and Doubles that are NaN or infinite) and, with doubles,
// every Double too, for a client that re-encodes bodies through a generic
// map, where 5.0 becomes 5, which the service would read as an Int32. Timestamp and ETag
// are left out, as the service ignores them on input.
func AppendBody(b []byte, e *Entity, doubles bool) []byte {
	a := annotateNeeded
	if doubles {
		a = annotateDoubles
	}
	var buf [fewProperties]uint8
	ord := byName(e.Properties, buf[:0])
	b = append(b, `{"PartitionKey":`...)
	b = AppendString(b, e.PartitionKey)
	b = append(b, `,"RowKey":`...)
	b = AppendString(b, e.RowKey)
	for i := range e.Properties {
		p := &e.Properties[at(ord, i)]
		b = appendProperty(b, true, p.Name, &p.Value, a)
	}
	return append(b, '}')
}

// BodySize is the length of the smallest body holding only the keys pk and rk:
// {"PartitionKey":…,"RowKey":…}. Each property adds its PropertySize.
func BodySize(pk, rk string) int {
	return len(`{"PartitionKey":,"RowKey":}`) + StringSize(pk) + StringSize(rk)
}

// PropertySize is what a property adds to the smallest body a client may send: the
// member, and its type annotation when the service needs one. A Double counts in its
// shortest JSON form (see ValueSize).
func PropertySize(name string, v odata.Value) int {
	n, annotated := ValueSize(v)
	size := len(`,:`) + StringSize(name) + n
	if annotated {
		// ,"<name>@odata.type":"Edm.X"
		size += len(`,:`) + StringSize(name) + len(annotationSuffix) + 2 + len(v.Type.String())
	}
	return size
}

// Level is how much OData metadata a JSON response carries (REST docs: "Payload format for
// Table service operations").
type Level uint8

// The three levels.
const (
	MinimalMetadata Level = iota
	NoMetadata
	FullMetadata
)

// Writer writes the entities of one response at one metadata level for one table.
type Writer struct {
	Level Level
	// Base is scheme://host/account, the root of the odata.* links.
	Base    string
	Account string
	Table   string
	// Selected is the $select list, of distinct names, nil for every property. The keys
	// and Timestamp are only written when selected; odata.etag always is. A selected
	// property the entity lacks is written as null, as the service does (REST docs:
	// "Querying tables and entities").
	Selected []string
	// SelectText is the $select a single entity's odata.metadata repeats; Selected joined
	// by commas when it is empty.
	SelectText string

	absent []string // Selected but for the system properties, sorted; set at first use
	ready  bool
}

func (w *Writer) wants(name string) bool {
	return w.Selected == nil || slices.Contains(w.Selected, name)
}

// annotate is which property values the level annotates: full metadata no more than
// minimal (see needsAnnotation); it adds the odata.* links and Timestamp's annotation.
func (w *Writer) annotate() annotate {
	if w.Level == NoMetadata {
		return annotateNone
	}
	return annotateNeeded
}

// AppendEntity writes one entity object, its properties in name order. A single entity (not an element of a feed) starts with odata.metadata.
func (w *Writer) AppendEntity(b []byte, e *Entity, single bool) []byte {
	if !w.ready {
		for _, name := range w.Selected {
			if name != "PartitionKey" && name != "RowKey" && name != "Timestamp" {
				w.absent = append(w.absent, name)
			}
		}
		slices.Sort(w.absent)
		w.ready = true
	}
	b = append(b, '{')
	first := true
	field := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = AppendString(b, name)
		b = append(b, ':')
	}
	if single && w.Level != NoMetadata {
		field("odata.metadata")
		b = append(b, '"')
		b = AppendStringContent(b, w.Base)
		b = append(b, "/$metadata#"...)
		b = AppendStringContent(b, w.Table)
		b = append(b, "/@Element"...)
		if w.Selected != nil {
			b = append(b, "&$select="...)
			if w.SelectText != "" {
				b = AppendStringContent(b, w.SelectText)
			} else {
				b = AppendStringContent(b, strings.Join(w.Selected, ","))
			}
		}
		b = append(b, '"')
	}
	if w.Level == FullMetadata {
		link := w.Table + KeyPredicate(e.PartitionKey, e.RowKey)
		field("odata.type")
		b = AppendString(b, w.Account+"."+w.Table)
		field("odata.id")
		b = AppendString(b, w.Base+"/"+link)
		field("odata.etag")
		b = AppendString(b, e.ETag)
		field("odata.editLink")
		b = AppendString(b, link)
	} else if w.Level == MinimalMetadata {
		field("odata.etag")
		b = AppendString(b, e.ETag)
	}
	if w.wants("PartitionKey") {
		field("PartitionKey")
		b = AppendString(b, e.PartitionKey)
	}
	if w.wants("RowKey") {
		field("RowKey")
		b = AppendString(b, e.RowKey)
	}
	if w.wants("Timestamp") {
		if w.Level == FullMetadata {
			field("Timestamp" + annotationSuffix)
			b = AppendString(b, typeDateTime)
		}
		field("Timestamp")
		b = AppendTime(append(b, '"'), odata.TicksFromTime(e.Timestamp))
		b = append(b, '"')
	}
	// The properties and the selected ones the entity lacks, merged in name order.
	var buf [fewProperties]uint8
	ord := byName(e.Properties, buf[:0])
	a, absent := w.annotate(), w.absent
	for i := 0; i < len(e.Properties) || len(absent) > 0; {
		if len(absent) == 0 || i < len(e.Properties) && e.Properties[at(ord, i)].Name <= absent[0] {
			p := &e.Properties[at(ord, i)]
			if len(absent) > 0 && p.Name == absent[0] {
				absent = absent[1:]
			}
			b = appendProperty(b, !first, p.Name, &p.Value, a)
			i++
		} else {
			b = appendProperty(b, !first, absent[0], &odata.Value{}, a)
			absent = absent[1:]
		}
		first = false
	}
	return append(b, '}')
}

// appendProperty writes one property (a Value of no type as null), preceded by its type
// annotation where a calls for one.
func appendProperty(b []byte, comma bool, name string, v *odata.Value, a annotate) []byte {
	if comma {
		b = append(b, ',')
	}
	if v.Type != 0 && a != annotateNone && needsAnnotation(v, a) {
		b = AppendString(b, name)
		b = append(b[:len(b)-1], annotationSuffix+`":`...) // the suffix needs no escaping
		b = AppendString(b, v.Type.String())
		b = append(b, ',')
	}
	b = AppendString(b, name)
	b = append(b, ':')
	return appendValue(b, v)
}

// Keys says where an operation takes the entity's keys from.
type Keys uint8

const (
	// KeysFromBody: Insert. The body must carry both keys as untyped strings.
	KeysFromBody Keys = iota
	// KeysFromURL: Update, Merge, the upserts. The URL names the entity, and keys in the
	// body are ignored whatever their type (the service accepts typed keys there,
	// REST docs: "Understanding the Table service data model").
	KeysFromURL
	// KeysFromResponse: an entity the service sent, with its odata.etag and Timestamp.
	KeysFromResponse
)

// DecodeError says why a body is not an entity the service reads, by the service error it
// answers with.
type DecodeError struct {
	Reason Reason
	// Detail says exactly what was wrong, naming the member.
	Detail string
}

func (e *DecodeError) Error() string { return e.Detail }

// Reason is the service error a DecodeError stands for.
type Reason uint8

// The reasons.
const (
	// InvalidInput: the body is not a flat JSON object, a key or an annotation is not an
	// untyped string, or an annotation names no EDM type.
	InvalidInput Reason = iota + 1
	// InvalidValue: a value is not of its type. The service answers InvalidInput with the
	// message "An error occurred while processing this request.".
	InvalidValue
	// DuplicateProperty: a member appears twice (DuplicatePropertiesSpecified).
	DuplicateProperty
	// MissingKeys: an insert's body lacks a key (PropertiesNeedValue).
	MissingKeys
)

// smallObject is the most members DecodeEntity checks for duplicates without a map.
const smallObject = 16

// memberPool holds the scratch member lists of DecodeEntity; a list longer than
// maxPooledMembers is left to the collector, so the pool's size stays bounded.
var memberPool = sync.Pool{New: func() any { return new([]Member) }}

const maxPooledMembers = 1024

// DecodeEntity applies the service's reading rules to a JSON entity body (REST docs:
// "Understanding the Table service data model", "Payload format for Table service
// operations"): a repeated name is DuplicatePropertiesSpecified; null values are dropped;
// Timestamp and odata.* bookkeeping are ignored (read, from a response); <Name>@odata.type
// annotates Name; a bare integer that fits Int32 is an Int32 and any other bare number a
// Double; Int64, DateTime, Guid and Binary need their annotation, so a nometadata response
// reads them as Strings. The engine then checks names and limits. Its error is a
// *DecodeError.
func DecodeEntity(body []byte, keys Keys) (Entity, error) { return DecodeEntityTo(body, keys, nil) }

// DecodeEntityTo is DecodeEntity giving each property to visit, in body order, rather than
// to Entity.Properties, when visit is not nil: a reader of its own (a struct's) then needs
// no slice of them. A property visited belongs to an entity only if no error follows.
func DecodeEntityTo(body []byte, keys Keys, visit func(name string, v odata.Value)) (Entity, error) {
	scratch := memberPool.Get().(*[]Member)
	ms, err := appendObject((*scratch)[:0], body)
	if err == nil {
		var e Entity
		if e, err = decodeMembersTo(ms, keys, visit); err == nil {
			release(scratch, ms)
			return e, nil
		}
	}
	release(scratch, ms)
	if _, ok := err.(*DecodeError); !ok {
		err = &DecodeError{Reason: InvalidInput, Detail: err.Error()}
	}
	return Entity{}, err
}

func release(scratch *[]Member, ms []Member) {
	if cap(ms) > maxPooledMembers {
		return
	}
	clear(ms)
	*scratch = ms[:0]
	memberPool.Put(scratch)
}

func decodeMembers(ms []Member, keys Keys) (Entity, error) { return decodeMembersTo(ms, keys, nil) }

func decodeMembersTo(ms []Member, keys Keys, visit func(name string, v odata.Value)) (Entity, error) {
	var seen map[string]struct{} // for many members; a few are compared with each other
	if len(ms) > smallObject {
		seen = make(map[string]struct{}, len(ms))
	}
	var types map[string]string // made at the first annotation
	n := 0                      // members that may be properties
	for i, m := range ms {
		dup := false
		if seen != nil {
			_, dup = seen[m.Name]
			seen[m.Name] = struct{}{}
		} else {
			for _, prev := range ms[:i] {
				if prev.Name == m.Name {
					dup = true
					break
				}
			}
		}
		if dup {
			return Entity{}, &DecodeError{Reason: DuplicateProperty, Detail: "member " + strconv.Quote(m.Name) + " appears more than once"}
		}
		if name, ok := strings.CutSuffix(m.Name, annotationSuffix); ok && name != "" {
			if m.Kind != KindString {
				return Entity{}, &DecodeError{Reason: InvalidInput, Detail: "annotation " + strconv.Quote(m.Name) + " is not a string"}
			}
			if types == nil {
				types = make(map[string]string)
			}
			types[name] = m.Text
		} else if m.Kind != KindNull {
			n++
		}
	}
	var e Entity
	if visit == nil {
		e.Properties = make([]Property, 0, n)
	}
	var hasPK, hasRK bool
	for _, m := range ms {
		name := m.Name
		if n, ok := strings.CutSuffix(name, annotationSuffix); ok && n != "" {
			continue
		}
		switch {
		case name == "PartitionKey" || name == "RowKey":
			if keys == KeysFromURL || m.Kind == KindNull {
				continue
			}
			if m.Kind != KindString || (types[name] != "" && types[name] != typeString) {
				return Entity{}, &DecodeError{Reason: InvalidInput, Detail: name + " must be an untyped string"}
			}
			if name == "PartitionKey" {
				e.PartitionKey, hasPK = m.Text, true
			} else {
				e.RowKey, hasRK = m.Text, true
			}
			continue
		case name == "Timestamp":
			if keys == KeysFromResponse && m.Kind == KindString {
				if t, err := ParseDateTime(m.Text); err == nil {
					e.Timestamp = t
				}
			}
			continue
		case strings.HasPrefix(name, "odata."):
			if keys == KeysFromResponse && name == "odata.etag" && m.Kind == KindString {
				e.ETag = m.Text
			}
			continue
		case m.Kind == KindNull:
			continue
		}
		v, err := decodeValue(name, m, types[name])
		if err != nil {
			return Entity{}, err
		}
		if visit != nil {
			visit(name, v)
		} else {
			e.Properties = append(e.Properties, Property{Name: name, Value: v})
		}
	}
	if keys == KeysFromBody && (!hasPK || !hasRK) {
		return Entity{}, &DecodeError{Reason: MissingKeys, Detail: "the body must carry both PartitionKey and RowKey"}
	}
	return e, nil
}
