package remote

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// notOneOfTheEight is a Property by embedding, of none of the eight types.
type notOneOfTheEight struct{ tabula.Int32 }

// TestEncodeEntityRefusesWhatJSONWouldChange: what JSON cannot carry faithfully is refused
// before anything is sent, with the code the engine gives the same entity.
func TestEncodeEntityRefusesWhatJSONWouldChange(t *testing.T) {
	for _, tc := range []struct {
		name  string
		e     tabula.Entity
		want  *tabula.Error
		field string // the detail names it
	}{
		{"partition key not UTF-8", tabula.Entity{PartitionKey: "\xff"}, tabula.ErrInvalidInput, "PartitionKey"},
		{"row key not UTF-8", tabula.Entity{RowKey: "\xff"}, tabula.ErrInvalidInput, "RowKey"},
		{"string not UTF-8", tabula.Entity{Properties: tabula.Properties{"S": tabula.String("a\xffb")}}, tabula.ErrInvalidInput, `"S"`},
		{"name not UTF-8", tabula.Entity{Properties: tabula.Properties{"\xff": tabula.Int32(1)}}, tabula.ErrPropertyNameInvalid, "UTF-8"},
		{"name of a key", tabula.Entity{Properties: tabula.Properties{"RowKey": tabula.String("r")}}, tabula.ErrPropertyNameInvalid, "RowKey"},
		{"not one of the eight types", tabula.Entity{Properties: tabula.Properties{"X": notOneOfTheEight{1}}}, tabula.ErrInvalidValueType, `"X"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := encodeEntity(&tc.e)
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.field)
		})
	}
}

// TestEncodeEntityKeepsEveryType: each of the eight types comes back from the JSON it is
// sent as, with the same type and value; a nil property is left out.
func TestEncodeEntityKeepsEveryType(t *testing.T) {
	guid, err := tabula.ParseGuid("0f8fad5b-d9cb-469f-a165-70867728950e")
	require.NoError(t, err)
	props := tabula.Properties{
		"S": tabula.String("é"), "B": tabula.Binary{0, 1}, "T": tabula.Boolean(true),
		"D": tabula.DateTime(time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC)), "F": tabula.Double(5),
		"G": guid, "I": tabula.Int32(-1), "L": tabula.Int64(1 << 40), "Nil": nil,
	}
	body, err := encodeEntity(&tabula.Entity{PartitionKey: "p", RowKey: "r", Properties: props})
	require.NoError(t, err)
	back, err := decodeEntity(body)
	require.NoError(t, err)
	delete(props, "Nil")
	assert.Equal(t, props, back.Properties)
}
