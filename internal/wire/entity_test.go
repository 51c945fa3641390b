package wire

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/odata"
)

// everyType is an entity with a property of each EDM type, its properties out of order.
func everyType() Entity {
	return Entity{PartitionKey: "p'1", RowKey: "r/2", Timestamp: time.Date(2024, 1, 2, 3, 4, 5, 600000000, time.UTC),
		ETag: `W/"datetime'2024-01-02T03%3A04%3A05.6Z'"`,
		Properties: []Property{
			{"S", odata.StringValue("a\"b")}, {"I", odata.Int32Value(-7)}, {"L", odata.Int64Value(1 << 40)},
			{"D", odata.DoubleValue(5)}, {"N", odata.DoubleValue(math.NaN())}, {"B", odata.BooleanValue(true)},
			{"T", odata.DateTimeValue(odata.TicksFromTime(time.Date(2021, 7, 13, 1, 2, 3, 400000000, time.UTC)))},
			{"G", odata.GuidValue([16]byte{0: 0xAB, 15: 1})}, {"X", odata.BinaryValue([]byte{1, 2, 3})},
		}}
}

// The three metadata levels annotate and link as the service does (REST docs: "Payload format
// for Table service operations"; full metadata annotating no more than minimal, as the live
// service's recordings show: see needsAnnotation); server/testdata/golden holds whole
// responses.
func TestWriterLevels(t *testing.T) {
	e := everyType()
	for level, want := range map[Level]string{
		NoMetadata: `{"PartitionKey":"p'1","RowKey":"r/2","Timestamp":"2024-01-02T03:04:05.6Z","B":true,"D":5.0,` +
			`"G":"ab000000-0000-0000-0000-000000000001","I":-7,"L":"1099511627776","N":"NaN","S":"a\"b","T":"2021-07-13T01:02:03.4Z","X":"AQID"}`,
		MinimalMetadata: `{"odata.metadata":"http://h/acct/$metadata#T/@Element","odata.etag":"W/\"datetime'2024-01-02T03%3A04%3A05.6Z'\"",` +
			`"PartitionKey":"p'1","RowKey":"r/2","Timestamp":"2024-01-02T03:04:05.6Z","B":true,"D":5.0,` +
			`"G@odata.type":"Edm.Guid","G":"ab000000-0000-0000-0000-000000000001","I":-7,"L@odata.type":"Edm.Int64","L":"1099511627776",` +
			`"N@odata.type":"Edm.Double","N":"NaN","S":"a\"b","T@odata.type":"Edm.DateTime","T":"2021-07-13T01:02:03.4Z",` +
			`"X@odata.type":"Edm.Binary","X":"AQID"}`,
		FullMetadata: `{"odata.metadata":"http://h/acct/$metadata#T/@Element","odata.type":"acct.T",` +
			`"odata.id":"http://h/acct/T(PartitionKey='p%27%271',RowKey='r%2F2')","odata.etag":"W/\"datetime'2024-01-02T03%3A04%3A05.6Z'\"",` +
			`"odata.editLink":"T(PartitionKey='p%27%271',RowKey='r%2F2')","PartitionKey":"p'1","RowKey":"r/2",` +
			`"Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-01-02T03:04:05.6Z","B":true,` +
			`"D":5.0,"G@odata.type":"Edm.Guid","G":"ab000000-0000-0000-0000-000000000001",` +
			`"I":-7,"L@odata.type":"Edm.Int64","L":"1099511627776","N@odata.type":"Edm.Double","N":"NaN",` +
			`"S":"a\"b","T@odata.type":"Edm.DateTime","T":"2021-07-13T01:02:03.4Z","X@odata.type":"Edm.Binary","X":"AQID"}`,
	} {
		w := Writer{Level: level, Base: "http://h/acct", Account: "acct", Table: "T"}
		assert.Equal(t, want, string(w.AppendEntity(nil, &e, true)), "level %d", level)
	}
}

// A $select writes the keys and Timestamp only when selected, and a selected property the
// entity lacks as null, in name order with the others.
func TestWriterSelect(t *testing.T) {
	w := Writer{Level: MinimalMetadata, Base: "http://h/acct", Account: "acct", Table: "T", Selected: []string{"Z", "RowKey", "I", "A"}}
	e := Entity{RowKey: "r", ETag: "e", Properties: []Property{{"I", odata.Int32Value(1)}}}
	assert.Equal(t, `{"odata.etag":"e","RowKey":"r","A":null,"I":1,"Z":null}`, string(w.AppendEntity(nil, &e, false)))
	assert.Equal(t, `{"odata.metadata":"http://h/acct/$metadata#T/@Element&$select=Z,RowKey,I,A","odata.etag":"e","RowKey":"r","A":null,"I":1,"Z":null}`,
		string(w.AppendEntity(nil, &e, true)))
}

// Many properties, more than byName orders by position, are written in name order too.
func TestWriterManyProperties(t *testing.T) {
	var e Entity
	for i := range 2 * fewProperties {
		e.Properties = append(e.Properties, Property{string(rune('z' - i)), odata.Int32Value(int32(i))})
	}
	body := AppendBody(nil, &e, false)
	back, err := DecodeEntity(body, KeysFromBody)
	require.NoError(t, err)
	for i := 1; i < len(back.Properties); i++ {
		require.Less(t, back.Properties[i-1].Name, back.Properties[i].Name, "%s", body)
	}
}

// A request body annotates only what the service needs, and with doubles every Double,
// which a client's re-encoding through a map would otherwise turn into an Int32.
func TestAppendBody(t *testing.T) {
	e := everyType()
	want := `{"PartitionKey":"p'1","RowKey":"r/2","B":true,%s"D":5.0,"G@odata.type":"Edm.Guid","G":"ab000000-0000-0000-0000-000000000001",` +
		`"I":-7,"L@odata.type":"Edm.Int64","L":"1099511627776","N@odata.type":"Edm.Double","N":"NaN","S":"a\"b",` +
		`"T@odata.type":"Edm.DateTime","T":"2021-07-13T01:02:03.4Z","X@odata.type":"Edm.Binary","X":"AQID"}`
	assert.Equal(t, fmt.Sprintf(want, ""), string(AppendBody(nil, &e, false)))
	assert.Equal(t, fmt.Sprintf(want, `"D@odata.type":"Edm.Double",`), string(AppendBody(nil, &e, true)))
}

// BodySize and PropertySize count what AppendBody writes, but for Doubles in exponent form,
// which they count in their shortest JSON (1e300, not the service's 1E+300).
func TestBodySize(t *testing.T) {
	e := everyType()
	e.Properties = append(e.Properties, Property{"E\n", odata.DoubleValue(-1.5e-7)}, Property{"F", odata.BooleanValue(false)},
		Property{"Y", odata.DoubleValue(3.25)}, Property{"Z", odata.DateTimeValue(odata.TicksFromTime(time.Date(2021, 7, 13, 0, 0, 0, 0, time.UTC)))})
	size := BodySize(e.PartitionKey, e.RowKey)
	for _, p := range e.Properties {
		size += PropertySize(p.Name, p.Value)
	}
	body := AppendBody(nil, &e, false)
	assert.Equal(t, len(body)-len("-1.5E-07")+len("-1.5e-7"), size, "%s", body)
	assert.Equal(t, len(`{"PartitionKey":"","RowKey":""}`), BodySize("", ""))
}

// Every refusal names the service's error it stands for.
func TestDecodeEntityReasons(t *testing.T) {
	for body, want := range map[string]Reason{
		`[]`:                               InvalidInput,
		`{"PartitionKey":"p","RowKey":"r"`: InvalidInput,
		`{"PartitionKey":1,"RowKey":"r"}`:  InvalidInput,
		`{"PartitionKey":"p","RowKey":"r","A@odata.type":5,"A":1}`:                                         InvalidInput,
		`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Thing","A":1}`:                               InvalidInput,
		`{"PartitionKey@odata.type":"Edm.Int32","PartitionKey":"1","RowKey":"r"}`:                          InvalidInput,
		`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int32","A":"x"}`:                             InvalidValue,
		`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int64","A":1.5}`:                             InvalidValue,
		`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.DateTime","A":"2024"}`:                       InvalidValue,
		`{"PartitionKey":"p","RowKey":"r","A":1e999}`:                                                      InvalidValue,
		`{"PartitionKey":"p","RowKey":"r","A":1,"A":1}`:                                                    DuplicateProperty,
		`{"PartitionKey":"p","RowKey":"r","A":null,"A@odata.type":"Edm.Int32","A@odata.type":"Edm.Int32"}`: DuplicateProperty,
		`{"PartitionKey":"p"}`:               MissingKeys,
		`{"RowKey":"r","PartitionKey":null}`: MissingKeys,
	} {
		_, err := DecodeEntity([]byte(body), KeysFromBody)
		var de *DecodeError
		require.ErrorAs(t, err, &de, body)
		assert.Equal(t, want, de.Reason, "%s: %s", body, de.Detail)
		assert.NotEmpty(t, de.Detail)
	}
	// Keys from the URL: the body's keys are ignored, typed or not, and none is needed.
	e, err := DecodeEntity([]byte(`{"PartitionKey@odata.type":"Edm.Int32","PartitionKey":1,"A":"x"}`), KeysFromURL)
	require.NoError(t, err)
	assert.Equal(t, Entity{Properties: []Property{{"A", odata.StringValue("x")}}}, e)
}

// A response's bookkeeping is read only from a response, and bare values take the type
// their JSON implies.
func TestDecodeEntityResponse(t *testing.T) {
	body := []byte(`{"odata.metadata":"m","odata.etag":"W/\"x\"","PartitionKey":"p","RowKey":"r","Timestamp":"2024-01-02T03:04:05.6Z",` +
		`"I":5,"D":5.0,"Big":2147483648,"B":false,"S":"s","Z":null,"X@odata.type":"Edm.Binary","X":"AQID"}`)
	e, err := DecodeEntity(body, KeysFromResponse)
	require.NoError(t, err)
	assert.Equal(t, Entity{PartitionKey: "p", RowKey: "r", Timestamp: time.Date(2024, 1, 2, 3, 4, 5, 600000000, time.UTC), ETag: `W/"x"`,
		Properties: []Property{{"I", odata.Int32Value(5)}, {"D", odata.DoubleValue(5)}, {"Big", odata.DoubleValue(2147483648)},
			{"B", odata.BooleanValue(false)}, {"S", odata.StringValue("s")}, {"X", odata.BinaryValue([]byte{1, 2, 3})}}}, e)
	e, err = DecodeEntity(body, KeysFromBody)
	require.NoError(t, err)
	assert.Empty(t, e.ETag)
	assert.True(t, e.Timestamp.IsZero())
}

// The word-at-a-time count of StringSize agrees with a byte-by-byte count and with what
// AppendString writes.
func TestStringSizeAgreesWithSlowCount(t *testing.T) {
	slow := func(s string) int {
		n := 2
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
		}
		return n
	}
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte("ab\"\\\x00\x1f\x20\x7f\x80\xff\n!#~")
	for range 20_000 {
		b := make([]byte, r.IntN(80))
		for i := range b {
			if r.IntN(8) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = byte('a' + r.IntN(26))
			}
		}
		require.Equal(t, slow(string(b)), StringSize(string(b)), "%q", b)
		require.Len(t, AppendString(nil, string(b)), StringSize(string(b)), "%q", b)
	}
}

func TestETag(t *testing.T) {
	ts := time.Date(2022, 3, 1, 20, 40, 24, 431753500, time.UTC)
	ticks := odata.TicksFromTime(ts)
	assert.Equal(t, `W/"datetime'2022-03-01T20%3A40%3A24.4317535Z'"`, string(AppendETag(nil, ticks)))
	for etag, want := range map[string]struct{ wellFormed, ok bool }{
		`W/"datetime'2022-03-01T20%3A40%3A24.4317535Z'"`: {true, true},
		`W/"datetime'2022-03-01T20:40:24.4317535Z'"`:     {true, true},
		`W/"datetime'nope'"`:                             {true, false},
		`W/"datetime'%zz'"`:                              {true, false},
		`W/"datetime'2022-03-01T20%3A40%3A24Z'`:          {false, false},
		`"x"`:                                            {false, false},
	} {
		got, wellFormed, ok := ETagTicks(etag)
		assert.Equal(t, want, struct{ wellFormed, ok bool }{wellFormed, ok}, etag)
		if ok {
			assert.Equal(t, ticks, got, etag)
		}
	}
	tm, _, ok := ETagTime(`W/"datetime'2022-03-01T21:40:24.4317535+01:00'"`)
	assert.True(t, ok)
	assert.Equal(t, ts, tm, "in UTC")
}
