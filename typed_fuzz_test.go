package tabula

import (
	"math"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/odata"
)

// FuzzRecordAs feeds arbitrary bytes to the record→struct decoder of the typed reads. It
// must never panic, must refuse what the untyped decoder refuses, and on a record whose
// names are in order (as every stored record's are) must give the struct that converting
// the untyped decoding gives, or the same error.
func FuzzRecordAs(f *testing.F) {
	seed := func(ticks int64, p Properties) {
		names := sortedNames(p)
		f.Add(encodeRecord(ticks, p, names))
	}
	seed(1, Properties{})
	seed(ticksOf(maxDateTime), Properties{"Text": String("héllo"), "Blob": Binary{1, 2}, "Flag": Boolean(true),
		"When": DateTime(minDateTime), "Ratio": Double(math.NaN()), "ID": Guid{1}, "IDText": Guid{2},
		"Small": Int32(math.MinInt32), "Wide": Int32(3), "Big": Int64(math.MinInt64), "Plain": Int64(math.MaxInt64),
		"Narrow": Int32(-1), "Maybe": String(""), "MaybeWhen": DateTime(maxDateTime), "Zzz": Int64(5)})
	seed(7, Properties{"Small": Int64(1)})                                                        // a misfit
	seed(7, Properties{"Narrow": Int64(1)})                                                       // another
	seed(7, Properties{"Other": Binary(nil)})                                                     // to the catch-all
	f.Add([]byte{recordVersion, 0x01, 0x91, 0xa4, 'T', 'e', 'x', 't', 0x07, 0xd2, 0x80, 0, 0, 0}) // Int32 under a String field
	f.Add([]byte{recordVersion, 0x01, 0x92, 0xa1, 'b', 0x07, 0x01, 0xa1, 'a', 0x07, 0x02})        // names out of order

	c, err := codecOf[typedAll]()
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, record []byte) {
		r := c.newRecordReader()
		var got typedAll
		ticks, err := r.decode(record, unsafe.Pointer(&got), nil)

		d := newRecordDecoder()
		var names []string
		props := Properties{}
		wantTicks, wantErr := d.each(record, nil, func(name string, v odata.Value) {
			names = append(names, name)
			props[name] = PropertyOf(v)
		})
		if wantErr != nil {
			assert.Equal(t, wantErr, err, "the typed decoder refuses what the untyped one does")
			return
		}
		if _, misfit := err.(*StructError); !misfit {
			require.NoError(t, err)
		}
		assert.Equal(t, wantTicks, ticks)
		if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
			return // not a record the engine writes: decoding it is only required not to fail
		}
		want, wantErr := EntityAs[typedAll](Entity{Timestamp: time.Time{}, Properties: props})
		if wantErr != nil {
			assert.Equal(t, wantErr, err)
			return
		}
		require.NoError(t, err)
		assert.Equal(t, canonicalTyped(want), canonicalTyped(got))
	})
}
