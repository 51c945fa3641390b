package tabula

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/internal/wire"
)

// genericLine is the line wire.Encoder.Entity writes for the entity stored under key with
// record rec, decoded as the export's generic path decodes it, or its error.
func genericLine(t *testing.T, key, rec []byte) (string, error) {
	t.Helper()
	d := newRecordDecoder()
	var r scanRecord
	r.init()
	r.reset(key)
	ticks, err := d.each(rec, nil, r.add)
	if err != nil {
		return "", err
	}
	if err := r.decodeKeys(); err != nil {
		return "", err
	}
	e := wire.Entity{PartitionKey: r.pk, RowKey: r.rk, Timestamp: timeOfTicks(ticks)}
	for i, name := range r.names {
		e.Properties = append(e.Properties, wire.Property{Name: name, Value: r.values[i]})
	}
	var buf bytes.Buffer
	enc := wire.NewEncoder(&buf)
	require.NoError(t, enc.BeginTable("", "T", nil))
	require.NoError(t, enc.Flush())
	buf.Reset()
	require.NoError(t, enc.Entity(&e))
	require.NoError(t, enc.Flush())
	return buf.String(), nil
}

// transcoderCases are stored entities of every EDM type and edge value, odd keys, and
// Timestamps at the clock's edges.
func transcoderCases() []struct {
	name     string
	key, rec []byte
} {
	odd := ` !"$%&'()*+,-.0123456789:;<=>@ABCXYZ[]^_` + "`abcxyz{|}~\u00e9\u20ac\U0001F600\x00\x01\x1f\x7f"
	props := Properties{
		"I64Max": Int64(math.MaxInt64), "I64Min": Int64(math.MinInt64), "I64Zero": Int64(0),
		"I32Max": Int32(math.MaxInt32), "I32Min": Int32(math.MinInt32), "I32Zero": Int32(0),
		"NaN": Double(math.NaN()), "Inf": Double(math.Inf(1)), "NegInf": Double(math.Inf(-1)),
		"NegZero": Double(math.Copysign(0, -1)), "Whole": Double(5), "Tiny": Double(math.SmallestNonzeroFloat64),
		"Huge": Double(math.MaxFloat64), "Third": Double(1.0 / 3), "Big": Double(1e15), "Small": Double(1e-5),
		"Tick":  DateTime(time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC)),
		"First": DateTime(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)),
		"Last":  DateTime(time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)),
		"Leap":  DateTime(time.Date(2024, 2, 29, 12, 0, 0, 1234500, time.UTC)),
		"Guid":  Guid{0xde, 0xad, 0xbe, 0xef, 15: 1}, "ZeroGuid": Guid{},
		"Bin": Binary(bytes.Repeat([]byte{0, 0xff, '\n', '"'}, 1000)), "Empty": Binary{}, "One": Binary{7},
		"True": Boolean(true), "False": Boolean(false),
		"Str": String("line\nbreak \"quoted\" \\ \u2028 \x00 \x1f é\t\r\b\f"), "Num": String("12"), "Blank": String(""),
		"Long": String(strings.Repeat("x", 1000) + "\"" + strings.Repeat("é", 300)),
		"a_b":  String("lower-case names sort after upper-case ones"),
	}
	names := sortedNames
	type tc = struct {
		name     string
		key, rec []byte
	}
	var out []tc
	for _, ticks := range []int64{0, 1, 504911232000000000, 638400000001234567, 3155378975999999999} {
		out = append(out, tc{fmt.Sprintf("every type at %d", ticks), entityKey(7, odd, odd), encodeRecord(ticks, props, names(props))})
	}
	out = append(out, tc{"no properties, empty keys", entityKey(7, "", ""), encodeRecord(638400000000000000, nil, nil)})
	many := Properties{}
	for i := range MaxProperties {
		many[fmt.Sprintf("P%03d", i)] = Int32(int32(i))
	}
	out = append(out, tc{"252 properties", entityKey(7, "many", "252"), encodeRecord(638400000000000000, many, names(many))})
	// Timestamps no clock hands out, as only a corrupt record holds: the ETag's text then
	// needs escaping.
	for _, ticks := range []int64{-1, math.MinInt64, math.MaxInt64, 3155378976000000000} {
		out = append(out, tc{fmt.Sprintf("ticks %d", ticks), entityKey(7, "p", "r"), encodeRecord(ticks, Properties{"N": Int32(1)}, []string{"N"})})
	}
	// Names out of order, or repeated: the transcoder leaves them to the generic decoder.
	rec := encodeRecord(1, Properties{"A": Int32(1), "B": Int32(2)}, []string{"B", "A"})
	out = append(out, tc{"names out of order", entityKey(7, "p", "r"), rec})
	rec = encodeRecord(1, Properties{"A": Int32(1)}, []string{"A", "A"})
	out = append(out, tc{"a name twice", entityKey(7, "p", "r"), rec})
	return out
}

// The transcoder writes the line the generic path writes, byte for byte, for every EDM type
// and edge value; a record it leaves alone still gets the generic line.
func TestLineTranscoderMatchesEncoder(t *testing.T) {
	var tc lineTranscoder
	for _, c := range transcoderCases() {
		want, err := genericLine(t, c.key, c.rec)
		require.NoError(t, err, c.name)
		got, err := tc.appendLine([]byte("kept:"), c.key, c.rec)
		switch c.name {
		case "names out of order", "a name twice":
			require.ErrorIs(t, err, errUnusualRecord, c.name)
			assert.Equal(t, "kept:", string(got), c.name)
			continue
		}
		require.NoError(t, err, c.name)
		assert.Equal(t, "kept:"+want, string(got), c.name)
	}
}

// A corrupt record or key is left to the generic decoder, which names the fault; the
// transcoder returns errUnusualRecord and leaves the buffer as it was.
func TestLineTranscoderLeavesCorruptRecords(t *testing.T) {
	good := encodeRecord(638400000000000000, Properties{"S": String("abc"), "G": Guid{1}}, []string{"G", "S"})
	key := entityKey(7, "p", "r")
	bad := map[string][2][]byte{
		"empty record":     {key, nil},
		"unknown version":  {key, append([]byte{9}, good[1:]...)},
		"cut short":        {key, good[:len(good)-2]},
		"trailing bytes":   {key, append(bytes.Clone(good), 0)},
		"unknown type":     {key, encodeRecordWithCode(9)},
		"key without rk":   {key[:len(key)-3], good},
		"key of no entity": {[]byte{1, 2}, good},
	}
	var tc lineTranscoder
	for name, c := range bad {
		_, genericErr := genericLine(t, c[0], c[1])
		got, err := tc.appendLine([]byte("kept"), c[0], c[1])
		assert.ErrorIs(t, err, errUnusualRecord, name)
		assert.Equal(t, "kept", string(got), name)
		assert.Error(t, genericErr, name)
	}
}

// encodeRecordWithCode is a record of one Int32 property whose type code is code.
func encodeRecordWithCode(code byte) []byte {
	rec := encodeRecord(1, Properties{"N": Int32(5)}, []string{"N"})
	// version, ticks (1), fixarray(1), fixstr "N", code, value
	i := bytes.Index(rec, []byte{0xa1, 'N'}) + 2
	rec[i] = code
	return rec
}

// A stored record, however corrupt, never panics the transcoder; what it accepts the
// generic path writes the same way.
func FuzzLineTranscoder(f *testing.F) {
	// Small seeds only: the fuzzer minimizes every new input it finds, which takes minutes
	// for records of kilobytes.
	for _, c := range transcoderCases() {
		if len(c.rec) <= 512 {
			f.Add(c.key, c.rec)
		}
	}
	small := Properties{"B": Binary{0, '"'}, "D": Double(math.NaN()), "F": Boolean(false), "G": Guid{1},
		"I": Int32(-1), "L": Int64(math.MinInt64), "S": String("a\"\x00é"), "T": DateTime(time.Unix(0, 100).UTC()),
		"Z": Double(1e-7)}
	f.Add(entityKey(7, "p\x00", "r\u20ac"), encodeRecord(638400000001234567, small, sortedNames(small)))
	f.Fuzz(func(t *testing.T, key, rec []byte) {
		var tc lineTranscoder
		got, err := tc.appendLine(nil, key, rec)
		if err != nil {
			require.ErrorIs(t, err, errUnusualRecord)
			require.Empty(t, got)
			return
		}
		want, err := genericLine(t, key, rec)
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	})
}

// BenchmarkLineTranscoder: one stored entity of the export benchmark's shape (a
// 1,000-character String and an Int64) to its interchange line, straight from its bytes
// (transcode) and decoded into a wire.Entity first (generic), as the export did before.
func BenchmarkLineTranscoder(b *testing.B) {
	props := Properties{"Payload": String(strings.Repeat("x", 1000)), "N": Int64(1 << 40)}
	key, rec := entityKey(1, "p000001", "r00000123"), encodeRecord(638400000001234567, props, sortedNames(props))
	b.Run("transcode", func(b *testing.B) {
		var tc lineTranscoder
		var line []byte
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			line, _ = tc.appendLine(line[:0], key, rec)
		}
	})
	b.Run("generic", func(b *testing.B) {
		enc := wire.NewEncoder(io.Discard)
		if err := enc.BeginTable("", "T", nil); err != nil {
			b.Fatal(err)
		}
		d := newRecordDecoder()
		var r scanRecord
		r.init()
		var e wire.Entity
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			r.reset(key)
			r.ticks, _ = d.each(rec, nil, r.add)
			_ = r.decodeKeys()
			e.PartitionKey, e.RowKey, e.Timestamp = r.pk, r.rk, timeOfTicks(r.ticks)
			e.Properties = e.Properties[:0]
			for i, name := range r.names {
				e.Properties = append(e.Properties, wire.Property{Name: name, Value: r.values[i]})
			}
			_ = enc.Entity(&e)
		}
	})
}
