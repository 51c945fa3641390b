package tabula

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// typedWriteMutations break, or come close to breaking, one rule of a write each: the
// typed writes must answer every one of them as the untyped writes do.
var typedWriteMutations = []func(r *rand.Rand, v *typedAll){
	func(r *rand.Rand, v *typedAll) { v.Text = strings.Repeat("s", MaxStringLength+r.IntN(2)) },
	func(r *rand.Rand, v *typedAll) { v.Text = strings.Repeat("\U0001F600", MaxStringLength/2+r.IntN(2)) },
	func(r *rand.Rand, v *typedAll) { v.Text = "bad \xff utf-8" },
	func(r *rand.Rand, v *typedAll) { s := strings.Repeat("m", MaxStringLength+1); v.Maybe = &s },
	func(r *rand.Rand, v *typedAll) { v.Blob = make([]byte, MaxBinaryLength+r.IntN(2)) },
	func(r *rand.Rand, v *typedAll) { v.Blob = []byte{} },
	func(r *rand.Rand, v *typedAll) {
		v.When = pick(r, []time.Time{{}, minDateTime.Add(-time.Nanosecond), minDateTime.Add(99),
			maxDateTime.Add(50), maxDateTime.Add(99), maxDateTime.Add(100), time.Date(1601, 1, 1, 0, 30, 0, 0, time.FixedZone("E", 3600))})
	},
	func(r *rand.Rand, v *typedAll) { t := maxDateTime.Add(time.Hour); v.MaybeWhen = &t },
	func(r *rand.Rand, v *typedAll) {
		v.IDText = pick(r, []string{"", "not a guid", "0123456789ABCDEF0123456789abcdef0123"})
	},
	func(r *rand.Rand, v *typedAll) {
		v.IDText = "01234567-89AB-CDEF-0123-456789abcdef" // upper case: parsed, written as bytes
	},
	func(r *rand.Rand, v *typedAll) {
		v.Narrow = pick(r, []int64{math.MaxInt32 + 1, math.MinInt32 - 1, math.MaxInt32})
	},
	func(r *rand.Rand, v *typedAll) {
		v.PartitionKey = pick(r, []string{"", "a/b", "a#", "\x01", "\xff", "é\u0085", strings.Repeat("k", MaxKeyLength+r.IntN(2)),
			strings.Repeat("\U0001F600", MaxKeyLength/2+r.IntN(2))})
	},
	func(r *rand.Rand, v *typedAll) {
		v.RowKey = pick(r, []string{"", "?", "a\\b", "\x7f", strings.Repeat("r", MaxKeyLength+1)})
	},
	func(r *rand.Rand, v *typedAll) {
		if v.Rest == nil {
			v.Rest = Properties{}
		}
		name := pick(r, []string{"Text", "Maybe", "MaybeWhen", "bad name", "Timestamp", "RowKey", "", "_x", "é", "\U0001F600",
			"9lives", strings.Repeat("n", MaxPropertyNameLength+r.IntN(2)), "Zz", "A"})
		v.Rest[name] = pick(r, []Property{nil, String("x"), String("\xfe"), Binary(make([]byte, MaxBinaryLength+1)),
			DateTime(time.Time{}), DateTime(maxDateTime), Int64(-1), Guid{1}})
	},
	func(r *rand.Rand, v *typedAll) {
		// Around the property count's limit: typedAll writes 12 to 14 fields.
		v.Rest = manyProps(MaxProperties - 14 + r.IntN(4))
	},
	func(r *rand.Rand, v *typedAll) {
		// Around the size's limit: 15 to 16 full binaries with the struct's own values.
		v.Rest = Properties{}
		for i := range 15 + r.IntN(2) {
			v.Rest[fmt.Sprintf("B%02d", i)] = Binary(make([]byte, MaxBinaryLength-r.IntN(2)*30_000))
		}
	},
}

// TestTypedWritesEncodeAsUntyped writes random structs of every EDM type's edge values, and
// values past every limit, through InsertAs, UpsertAs and UpdateAs (Replace, which encode
// the struct straight into a record) and through EntityOf and the untyped writes, on
// tables side by side: every write must fail with the same error or store the same record
// bytes (but for the Timestamp).
func TestTypedWritesEncodeAsUntyped(t *testing.T) {
	if bothStores(t, TestTypedWritesEncodeAsUntyped) {
		return
	}
	ctx := context.Background()
	db := openStore(t, nil)
	typed, untyped := createTable(t, db, "Typed"), createTable(t, db, "Untyped")
	r := rand.New(rand.NewPCG(36, 3))
	failures := 0
	for i := range 400 {
		v, _ := randomTyped(r, fmt.Sprintf("p%d", i%3), fmt.Sprintf("r%03d", i/4))
		for range r.IntN(3) {
			pick(r, typedWriteMutations)(r, &v)
		}
		if r.IntN(4) == 0 {
			fillToSizeLimit(&v, r.IntN(3)-1)
		}
		op := r.IntN(4)
		var errT, errU error
		e, errE := EntityOf(v)
		switch op {
		case 0:
			_, errT = InsertAs(ctx, typed, v)
			if errU = errE; errE == nil {
				_, errU = untyped.Insert(ctx, e)
			}
		case 1:
			_, errT = UpsertAs(ctx, typed, v, Replace)
			if errU = errE; errE == nil {
				_, errU = untyped.Upsert(ctx, e, Replace)
			}
		default:
			ifMatch := pick(r, []ETag{AnyETag, "", `W/"datetime'2000-01-01T00%3A00%3A00Z'"`, `"strong"`})
			_, errT = UpdateAs(ctx, typed, v, Replace, ifMatch)
			if errU = errE; errE == nil {
				_, errU = untyped.Update(ctx, e, Replace, ifMatch)
			}
		}
		if errU != nil {
			failures++
			require.Error(t, errT, "write %d (%d) of %+.200v: %v", i, op, v, errU)
			assert.Equal(t, storedETag.ReplaceAllString(errU.Error(), "…"), storedETag.ReplaceAllString(errT.Error(), "…"), "write %d (%d)", i, op)
			assert.Equal(t, errorCode(errU), errorCode(errT), "write %d (%d)", i, op)
			continue
		}
		require.NoError(t, errT, "write %d (%d)", i, op)
		assert.Equal(t, recordBody(t, untyped, v.PartitionKey, v.RowKey), recordBody(t, typed, v.PartitionKey, v.RowKey),
			"write %d (%d): record", i, op)
	}
	assert.Greater(t, failures, 50, "the mutations break rules")
	assert.Less(t, failures, 350, "most writes succeed")
}

// fillToSizeLimit adds binaries to v's catch-all to make its entity extra bytes past the
// size limit, when it has an entity.
func fillToSizeLimit(v *typedAll, extra int) {
	e, err := EntityOf(*v)
	if err != nil {
		return
	}
	const frame = 8 + 2*len("F00") + 4 // a filler's name and framing
	need := MaxEntitySize + extra - EntitySize(&e)
	if v.Rest == nil {
		v.Rest = Properties{}
	}
	for i := 0; need >= frame; i++ {
		n := min(need-frame, MaxBinaryLength)
		v.Rest[fmt.Sprintf("F%02d", i)] = Binary(make([]byte, n))
		need -= frame + n
	}
}

// storedETag is the ETag of the stored entity in an UpdateConditionNotSatisfied, which
// differs between the two tables.
var storedETag = regexp.MustCompile(`has ETag W/"datetime'[^']*'"`)

// errorCode is err's service error code, or its type.
func errorCode(err error) string {
	var te *Error
	if errors.As(err, &te) {
		return te.Code
	}
	return fmt.Sprintf("%T", err)
}

// recordBody reads the stored record of pk and rk, without its version and Timestamp.
func recordBody(t *testing.T, tbl *Table, pk, rk string) []byte {
	t.Helper()
	var body []byte
	op := getOpPool.Get().(*getOp)
	op.sink = func(record []byte) error {
		d := newRecordDecoder()
		d.b = record[1:]
		_, err := d.int()
		body = bytes.Clone(d.b[d.i:])
		return err
	}
	err := tbl.lookup(context.Background(), op, pk, rk)
	op.release()
	require.NoError(t, err)
	return body
}

// TestTypedWritesUnderAFlavour: a flavour's rules read an entity's Properties, so the typed
// writes build it there, and the flavour's rules hold for them.
func TestTypedWritesUnderAFlavour(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openStore(t, &Options{Flavor: FlavorCosmos}), "Cosmos")
	type row struct{ PartitionKey, RowKey, Name string }
	_, err := InsertAs(ctx, tbl, row{PartitionKey: "p", Name: "x"})
	assert.ErrorIs(t, err, ErrPropertiesNeedValue)
	_, err = UpsertAs(ctx, tbl, row{PartitionKey: "p", RowKey: "r", Name: "x"}, Replace)
	require.NoError(t, err)
}
