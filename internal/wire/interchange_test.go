package wire

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/odata"
)

// exampleFile is the package documentation's example, which must stay a valid file.
func exampleFile(t testing.TB) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(packageDocExample, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

const packageDocExample = `
{"@tabula":"export","version":1}
{"@tabula":"account","account":"shop","serviceProperties":"<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties>…</StorageServiceProperties>"}
{"@tabula":"table","account":"shop","table":"Orders","accessPolicies":[{"Id":"readers","Expiry":"2030-01-01T00:00:00Z","Permission":"r"}]}
{"odata.etag":"W/\"datetime'2024-05-01T10%3A00%3A00.1234567Z'\"","PartitionKey":"alice","RowKey":"0001","Timestamp":"2024-05-01T10:00:00.1234567Z","Paid":true,"Total":12.5,"Units@odata.type":"Edm.Int64","Units":"9223372036854775807"}
{"odata.etag":"W/\"datetime'2024-05-01T10%3A00%3A01Z'\"","PartitionKey":"bob","RowKey":"0002","Timestamp":"2024-05-01T10:00:01Z","Id@odata.type":"Edm.Guid","Id":"c9da6455-213d-42c9-9a79-3e9149a57833","Ratio@odata.type":"Edm.Double","Ratio":"NaN"}
{"@tabula":"end","account":"shop","table":"Orders","entities":2}
{"@tabula":"eof","tables":1,"entities":2}
`

func readAll(t testing.TB, file string) ([]Record, error) {
	t.Helper()
	d := NewDecoder(strings.NewReader(file))
	var out []Record
	for {
		r, err := d.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
}

// The documented example reads as the records it shows, and the Encoder writes it back
// byte for byte (the service properties aside, which the example elides).
func TestInterchangeExample(t *testing.T) {
	file := exampleFile(t)
	recs, err := readAll(t, file)
	require.NoError(t, err)
	require.Len(t, recs, 5)
	assert.Equal(t, RecordAccount, recs[0].Kind)
	assert.Equal(t, "shop", recs[0].Account)
	assert.Contains(t, string(recs[0].ServiceProperties), "<StorageServiceProperties>")
	assert.Equal(t, RecordTable, recs[1].Kind)
	assert.Equal(t, []InterchangeAccessPolicy{{ID: "readers", Expiry: "2030-01-01T00:00:00Z", Permission: "r"}}, recs[1].AccessPolicies)
	e := recs[2].Entity
	assert.Equal(t, 4, recs[2].Line)
	assert.Equal(t, "alice", e.PartitionKey)
	assert.Equal(t, time.Date(2024, 5, 1, 10, 0, 0, 123456700, time.UTC), e.Timestamp)
	assert.True(t, math.IsNaN(recs[3].Entity.Properties[1].Value.Float))
	assert.Equal(t, RecordTableEnd, recs[4].Kind)
	assert.Equal(t, int64(2), recs[4].Entities)

	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	require.NoError(t, enc.Account("shop", recs[0].ServiceProperties))
	require.NoError(t, enc.BeginTable("shop", "Orders", recs[1].AccessPolicies))
	require.NoError(t, enc.Entity(&recs[2].Entity))
	require.NoError(t, enc.Entity(&recs[3].Entity))
	require.NoError(t, enc.Close())
	assert.Equal(t, file, buf.String())
}

// Every EDM type and edge value goes through the file unchanged, bit for bit.
func TestInterchangeRoundTrip(t *testing.T) {
	ts := time.Date(2024, 2, 29, 23, 59, 59, 999999900, time.UTC)
	big := bytes.Repeat([]byte{0, 0xff, 'x'}, 64<<10/3)
	e := Entity{PartitionKey: "p '\"\\/#?\t\u00e9\U0001F600", RowKey: "", Timestamp: ts, Properties: []Property{
		{"I64max", odata.Int64Value(math.MaxInt64)}, {"I64min", odata.Int64Value(math.MinInt64)},
		{"I32max", odata.Int32Value(math.MaxInt32)}, {"I32min", odata.Int32Value(math.MinInt32)},
		{"NaN", odata.DoubleValue(math.NaN())}, {"Inf", odata.DoubleValue(math.Inf(1))}, {"NInf", odata.DoubleValue(math.Inf(-1))},
		{"NegZero", odata.DoubleValue(math.Copysign(0, -1))}, {"Whole", odata.DoubleValue(5)}, {"Tiny", odata.DoubleValue(math.SmallestNonzeroFloat64)},
		{"Max", odata.DoubleValue(math.MaxFloat64)}, {"Tick", odata.DateTimeValue(odata.TicksFromTime(time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC)))},
		{"Last", odata.DateTimeValue(odata.TicksFromTime(time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)))},
		{"G", odata.GuidValue([16]byte{0xde, 0xad, 15: 0xef})}, {"Bin", odata.BinaryValue(big)}, {"Empty", odata.BinaryValue([]byte{})},
		{"B", odata.BooleanValue(false)}, {"S", odata.StringValue("")}, {"Num", odata.StringValue("12")},
	}}
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	require.NoError(t, enc.BeginTable("", "T", nil))
	require.NoError(t, enc.Entity(&e))
	require.NoError(t, enc.Close())
	recs, err := readAll(t, buf.String())
	require.NoError(t, err)
	require.Len(t, recs, 3)
	got := recs[1].Entity
	assert.Equal(t, e.PartitionKey, got.PartitionKey)
	assert.Equal(t, e.RowKey, got.RowKey)
	assert.True(t, e.Timestamp.Equal(got.Timestamp))
	byName := map[string]odata.Value{}
	for _, p := range got.Properties {
		byName[p.Name] = p.Value
	}
	require.Len(t, byName, len(e.Properties))
	for _, p := range e.Properties {
		g := byName[p.Name]
		require.Equal(t, p.Value.Type, g.Type, p.Name)
		if p.Value.Type == odata.Double {
			if math.IsNaN(p.Value.Float) {
				assert.True(t, math.IsNaN(g.Float), p.Name)
			} else {
				assert.Equal(t, math.Float64bits(p.Value.Float), math.Float64bits(g.Float), p.Name)
			}
			continue
		}
		if p.Value.Type == odata.Binary {
			assert.True(t, bytes.Equal(p.Value.Bytes, g.Bytes), p.Name)
			continue
		}
		assert.Equal(t, p.Value, g, p.Name)
	}
}

// A file's defects are errors naming the line, the field and the rule.
func TestInterchangeErrors(t *testing.T) {
	good := exampleFile(t)
	lines := strings.SplitAfter(good, "\n")
	replace := func(i int, with string) string {
		l := append([]string{}, lines...)
		l[i] = with + "\n"
		return strings.Join(l, "")
	}
	drop := func(i int) string {
		l := append([]string{}, lines[:i]...)
		return strings.Join(append(l, lines[i+1:]...), "")
	}
	for _, c := range []struct {
		name, file string
		line       int
		field      string
		rule       string
	}{
		{"no header", drop(0), 1, "@tabula", "must start with its header"},
		{"entity before header", lines[3], 1, "", "must start with its header"},
		{"newer version", replace(0, `{"@tabula":"export","version":2}`), 1, "version", "is not 1"},
		{"bad Int64", replace(3, `{"PartitionKey":"a","RowKey":"b","Timestamp":"2024-01-01T00:00:00Z","N@odata.type":"Edm.Int64","N":"12x"}`), 4, "", `property "N"`},
		{"no Timestamp", replace(3, `{"PartitionKey":"a","RowKey":"b"}`), 4, "Timestamp", "must carry its Timestamp"},
		{"bad Timestamp", replace(3, `{"PartitionKey":"a","RowKey":"b","Timestamp":"yesterday"}`), 4, "Timestamp", "is not a DateTime"},
		{"no RowKey", replace(3, `{"PartitionKey":"a","Timestamp":"2024-01-01T00:00:00Z"}`), 4, "PartitionKey, RowKey", "both keys"},
		{"not JSON", replace(4, `{"PartitionKey":"a",`), 5, "", "invalid JSON"},
		{"lost entity", drop(4), 5, "entities", "counts 2 entities, but 1 were read"},
		{"wrong trailer", replace(6, `{"@tabula":"eof","tables":1,"entities":3}`), 7, "tables, entities", "counts 1 tables and 3 entities"},
		{"unknown kind", replace(5, `{"@tabula":"stop"}`), 6, "@tabula", "is not a kind of line"},
		{"unknown member", replace(2, `{"@tabula":"table","account":"shop","table":"Orders","colour":1}`), 3, "", "unknown field"},
		{"typed count", replace(5, `{"@tabula":"end","account":"shop","table":"Orders","entities":"2"}`), 6, "entities", "must be a JSON int64"},
		{"bad policy time", replace(2, `{"@tabula":"table","account":"shop","table":"Orders","accessPolicies":[{"Id":"x","Start":"soon"}]}`), 3, "accessPolicies[0].Start", "is not a DateTime"},
		{"table in table", replace(5, `{"@tabula":"table","account":"shop","table":"Other"}`), 6, "@tabula", "has no end line"},
		{"after trailer", good + "{}\n", 8, "", "follows the trailer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := readAll(t, c.file)
			var fe *FormatError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, c.line, fe.Line)
			assert.Equal(t, c.field, fe.Field)
			assert.Contains(t, fe.Rule, c.rule)
			assert.False(t, errors.Is(err, ErrTruncated))
		})
	}
}

// A file cut anywhere before its trailer's end is reported truncated, never read as whole.
func TestInterchangeTruncated(t *testing.T) {
	good := exampleFile(t)
	trailer := strings.LastIndex(good, `{"@tabula":"eof"`)
	for n := 0; n < len(good)-1; n++ {
		recs, err := readAll(t, good[:n])
		require.Error(t, err, "cut at %d", n)
		if n <= trailer {
			_ = recs
			var fe *FormatError
			require.ErrorAs(t, err, &fe, "cut at %d", n)
		}
		if n == trailer {
			assert.ErrorIs(t, err, ErrTruncated)
			assert.Contains(t, err.Error(), "line 7: the file ends before its trailer")
		}
	}
}

// A line longer than the bound is an error, not an unbounded allocation.
func TestInterchangeLongLine(t *testing.T) {
	file := `{"@tabula":"export","version":1}` + "\n" + strings.Repeat(" ", MaxInterchangeLine+2) + "\n"
	_, err := readAll(t, file)
	assert.ErrorContains(t, err, "line 2: the line is longer than")
}

// FuzzInterchangeDecoder: any bytes decode to records or to an error, never a panic; what
// decodes, written back by the Encoder, decodes to the same records.
func FuzzInterchangeDecoder(f *testing.F) {
	f.Add([]byte(exampleFile(f)))
	f.Add([]byte(`{"@tabula":"export","version":1}` + "\n" + `{"@tabula":"eof","tables":0,"entities":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := readAll(t, string(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		enc := NewEncoder(&buf)
		for i := range recs {
			r := &recs[i]
			switch r.Kind {
			case RecordAccount:
				require.NoError(t, enc.Account(r.Account, r.ServiceProperties))
			case RecordTable:
				require.NoError(t, enc.BeginTable(r.Account, r.Table, r.AccessPolicies))
			case RecordEntity:
				require.NoError(t, enc.Entity(&r.Entity))
			case RecordTableEnd:
				require.NoError(t, enc.EndTable())
			}
		}
		require.NoError(t, enc.Close())
		again, err := readAll(t, buf.String())
		require.NoError(t, err, "%s", buf.String())
		require.Equal(t, len(recs), len(again))
		for i := range recs {
			assert.Equal(t, recs[i].Kind, again[i].Kind)
			assert.Equal(t, recs[i].Table, again[i].Table)
			assert.Equal(t, recs[i].Entity.PartitionKey, again[i].Entity.PartitionKey)
			assert.Equal(t, len(recs[i].Entity.Properties), len(again[i].Entity.Properties))
		}
	})
}
