package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// records reads every record of r, stopping at the first error.
func records(r Records) ([]Record, error) {
	var out []Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

// A fixture reads as the records of an interchange file of the same tables, with lines and
// JSON paths; NewRecords tells the two kinds apart by the first line.
func TestFixtureRecords(t *testing.T) {
	doc := "{\n \"Orders\": [\n  {\"PartitionKey\":\"a\",\"RowKey\":\"1\",\"N@odata.type\":\"Edm.Int64\",\"N\":\"5\"},\n" +
		"  {\"PartitionKey\":\"b\",\"RowKey\":\"2\",\"Timestamp\":\"2024-01-02T03:04:05Z\"}\n ],\n \"Empty\": []\n}\n"
	recs, err := records(NewRecords(strings.NewReader(doc)))
	require.NoError(t, err)
	kinds := []RecordKind{}
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
	}
	assert.Equal(t, []RecordKind{RecordTable, RecordEntity, RecordEntity, RecordTableEnd, RecordTable, RecordTableEnd}, kinds)
	assert.Equal(t, "Orders", recs[0].Table)
	assert.Equal(t, 2, recs[0].Line)
	assert.Equal(t, 3, recs[1].Line)
	assert.Equal(t, "$.Orders[1]", recs[2].Path)
	assert.True(t, recs[1].Entity.Timestamp.IsZero())
	assert.Equal(t, 2024, recs[2].Entity.Timestamp.Year())
	assert.Equal(t, int64(2), recs[3].Entities)

	_, ok := NewRecords(strings.NewReader("\n  " + `{"@tabula":"export","version":1}` + "\n")).(*Decoder)
	assert.True(t, ok, "an interchange file, after blank space")

	// A bad entity is skippable: the next is read.
	dec := NewFixtureDecoder(strings.NewReader(`{"T":[{"PartitionKey":"p"},{"PartitionKey":"p","RowKey":"r"}]}`))
	_, err = dec.Next()
	require.NoError(t, err)
	_, err = dec.Next()
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	assert.True(t, fe.EntityLine)
	rec, err := dec.Next()
	require.NoError(t, err)
	assert.Equal(t, "r", rec.Entity.RowKey)
}

// Tables of several accounts: an object per account, beside the top's tables (account "").
func TestFixtureAccounts(t *testing.T) {
	doc := `{"Top": [], "shop": {"Orders": [{"PartitionKey":"p","RowKey":"r"}]}, "audit": {"Events": []}}`
	recs, err := records(NewRecords(strings.NewReader(doc)))
	require.NoError(t, err)
	var got []string
	for _, r := range recs {
		if r.Kind != RecordTableEnd {
			got = append(got, r.Account+"/"+r.Table+" "+r.Path)
		}
	}
	assert.Equal(t, []string{"/Top $.Top", "shop/Orders $.shop.Orders", "shop/Orders $.shop.Orders[0]", "audit/Events $.audit.Events"}, got)

	_, err = records(NewRecords(strings.NewReader(`{"shop": {"Orders": {}}}`)))
	assert.ErrorContains(t, err, "line 1: $.shop.Orders: must be an array of entities")
}

func FuzzFixtureDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"Orders":[{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"5"}],"Empty":[]}`,
		"{\n\"T\": [\n{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"Timestamp\":\"2024-01-02T03:04:05Z\"}\n]\n}",
		`{"T":[{"PartitionKey":"p"}]}`,
		`{"T":{}}`,
		`[]`,
		`{"T":[1,"x",null]}`,
		`{"T":[{"PartitionKey":"p","RowKey":"r"}]} trailing`,
		`{"a":{"T":[{"PartitionKey":"p","RowKey":"r"}]},"U":[],"b":{}}`,
		`{"a":{"b":{}}}`,
		`{"T":[{"PartitionKey":"p",`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := NewFixtureDecoder(bytes.NewReader(data))
		depth := 0
		for range len(data) + 2 {
			rec, err := dec.Next()
			if err == io.EOF {
				assert.Zero(t, depth, "the document ended inside a table")
				return
			}
			var fe *FormatError
			if err != nil {
				require.True(t, errors.As(err, &fe), "%T %v", err, err)
				assert.Positive(t, fe.Line)
				assert.NotEmpty(t, fe.Rule)
				if !fe.EntityLine {
					return
				}
				continue
			}
			switch rec.Kind {
			case RecordTable:
				depth++
			case RecordTableEnd:
				depth--
			case RecordEntity:
				assert.Equal(t, 1, depth)
			}
			assert.LessOrEqual(t, depth, 1)
		}
		t.Fatalf("more records than input bytes")
	})
}
