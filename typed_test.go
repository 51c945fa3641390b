package tabula

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// typedAll has a field of every kind the mapping knows, and a catch-all.
type typedAll struct {
	PartitionKey string
	RowKey       string
	Timestamp    time.Time
	ETag         ETag
	Text         string
	Blob         []byte
	Flag         bool
	When         time.Time
	Ratio        float64
	ID           Guid
	IDText       string `tabula:",Edm.Guid"`
	Small        int32
	Wide         int32 `tabula:",Edm.Int64"`
	Big          int64
	Plain        int
	Narrow       int64 `tabula:",Edm.Int32"`
	Maybe        *string
	MaybeWhen    *time.Time `tabula:"MaybeWhen"`
	Rest         Properties
}

var (
	edgeStrings = []string{"", "a", "é", "\U0001F600", "quote ' and \"", strings.Repeat("s", MaxStringLength),
		strings.Repeat("\U0001F600", MaxStringLength/2)}
	edgeInt64s   = []int64{math.MinInt64, math.MaxInt64, 0, -1, 1 << 53}
	edgeInt32s   = []int32{math.MinInt32, math.MaxInt32, 0, -1}
	edgeDoubles  = []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1}
	edgeDateTime = []time.Time{minDateTime, maxDateTime, time.Date(2024, 2, 29, 23, 59, 59, 123456789, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 100, time.FixedZone("X", 3600))}
)

func pick[E any](r *rand.Rand, s []E) E { return s[r.IntN(len(s))] }

// randomTyped returns a random typedAll of edge values and the properties the service must
// store for it, worked out by hand rather than by the mapping under test.
func randomTyped(r *rand.Rand, pk, rk string) (typedAll, Properties) {
	v := typedAll{PartitionKey: pk, RowKey: rk}
	want := Properties{}
	v.Text = pick(r, edgeStrings)
	want["Text"] = String(v.Text)
	if r.IntN(3) > 0 {
		v.Blob = make([]byte, pick(r, []int{0, 1, 16, MaxBinaryLength}))
		for i := range v.Blob {
			v.Blob[i] = byte(r.UintN(256))
		}
	}
	want["Blob"] = Binary(v.Blob)
	v.Flag = r.IntN(2) == 0
	want["Flag"] = Boolean(v.Flag)
	v.When = pick(r, edgeDateTime)
	want["When"] = DateTime(v.When)
	v.Ratio = pick(r, edgeDoubles)
	want["Ratio"] = Double(v.Ratio)
	for i := range v.ID {
		v.ID[i] = byte(r.UintN(256))
	}
	want["ID"] = v.ID
	var g Guid
	g[r.IntN(16)] = byte(r.UintN(256))
	v.IDText = g.String()
	want["IDText"] = g
	v.Small, v.Wide = pick(r, edgeInt32s), pick(r, edgeInt32s)
	want["Small"], want["Wide"] = Int32(v.Small), Int64(v.Wide)
	v.Big, v.Plain = pick(r, edgeInt64s), int(pick(r, edgeInt64s))
	want["Big"], want["Plain"] = Int64(v.Big), Int64(v.Plain)
	v.Narrow = int64(pick(r, edgeInt32s))
	want["Narrow"] = Int32(v.Narrow)
	if r.IntN(2) == 0 {
		s := pick(r, edgeStrings[:5])
		v.Maybe = &s
		want["Maybe"] = String(s)
	}
	if r.IntN(2) == 0 {
		t := pick(r, edgeDateTime)
		v.MaybeWhen = &t
		want["MaybeWhen"] = DateTime(t)
	}
	for i := range r.IntN(4) {
		if v.Rest == nil {
			v.Rest = Properties{}
		}
		p := randomValue(r)
		if p == nil {
			p = Int64(int64(i))
		}
		name := fmt.Sprintf("Extra%d", i)
		v.Rest[name] = p
		want[name] = p
	}
	return v, want
}

// stored is what the service keeps of a written value: DateTimes in 100 ns ticks, in UTC.
func stored(p Property) Property {
	switch v := p.(type) {
	case DateTime:
		return DateTime(timeOfTicks(ticksOf(time.Time(v))))
	case Binary:
		if v == nil {
			return Binary{} // a nil Binary is an empty one
		}
	}
	return p
}

// canonical makes a value comparable with assert.Equal: NaN, which equals nothing, becomes a
// string, and stored() is applied.
func canonical(p Property) any {
	if d, ok := p.(Double); ok && math.IsNaN(float64(d)) {
		return "NaN"
	}
	return stored(p)
}

func canonicalProps(ps Properties) map[string]any {
	out := map[string]any{}
	for name, p := range ps {
		if p != nil {
			out[name] = canonical(p)
		}
	}
	return out
}

// canonicalTyped is a typedAll comparable with assert.Equal.
func canonicalTyped(v typedAll) map[string]any {
	e, err := EntityOf(v)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	out := canonicalProps(e.Properties)
	out["PartitionKey"], out["RowKey"], out["Timestamp"], out["ETag"] = v.PartitionKey, v.RowKey, v.Timestamp, v.ETag
	return out
}

// TestTypedMatchesUntyped writes random structs of every EDM type's edge values through the
// typed path, and checks that the engine stores exactly the properties worked out by hand,
// and that every typed read (GetAs, QueryAs with exact and residual filters, with $select)
// equals the untyped read converted with EntityAs.
func TestTypedMatchesUntyped(t *testing.T) {
	if bothStores(t, TestTypedMatchesUntyped) {
		return
	}
	ctx := context.Background()
	db := openStore(t, nil)
	tbl := createTable(t, db, "Typed")
	r := rand.New(rand.NewPCG(36, 1))
	for i := range 60 {
		pk := fmt.Sprintf("p%d", i%3)
		v, want := randomTyped(r, pk, fmt.Sprintf("r%02d", i))
		got, err := InsertAs(ctx, tbl, v)
		require.NoError(t, err)
		require.NotEmpty(t, got.ETag)
		e, err := tbl.Get(ctx, v.PartitionKey, v.RowKey)
		require.NoError(t, err)
		assert.Equal(t, canonicalProps(want), canonicalProps(e.Properties), "row %d as stored", i)
		assert.Equal(t, got.ETag, e.ETag)
		assert.Equal(t, got.Timestamp, e.Timestamp)

		typed, err := GetAs[typedAll](ctx, tbl, v.PartitionKey, v.RowKey)
		require.NoError(t, err)
		viaMap, err := EntityAs[typedAll](e)
		require.NoError(t, err)
		assert.Equal(t, canonicalTyped(viaMap), canonicalTyped(typed), "row %d", i)
		assert.Equal(t, canonicalProps(want), canonicalProps(mustEntity(t, typed).Properties), "row %d read back", i)
	}
	for _, q := range []Query{
		{},
		{Filter: "PartitionKey eq 'p1'"},
		{Filter: "PartitionKey eq 'p2' and RowKey eq 'r05'"},
		{Filter: "Flag eq true", Top: 7},
		{Filter: "Small gt 0 or Big lt 0", Select: []string{"Small", "Big", "Extra0"}},
		{Filter: "PartitionKey eq 'p0'", Select: []string{"Text", "Maybe", "Extra1"}},
	} {
		compareQueries(t, tbl, q)
	}
}

func mustEntity(t *testing.T, v typedAll) Entity {
	t.Helper()
	e, err := EntityOf(v)
	require.NoError(t, err)
	return e
}

func compareQueries(t *testing.T, tbl TableAPI, q Query) {
	t.Helper()
	ctx := context.Background()
	var want, got []map[string]any
	for e, err := range tbl.QueryAll(ctx, q) {
		require.NoError(t, err)
		v, err := EntityAs[typedAll](e)
		require.NoError(t, err)
		want = append(want, canonicalTyped(v))
	}
	for v, err := range QueryAs[typedAll](ctx, tbl, q) {
		require.NoError(t, err)
		got = append(got, canonicalTyped(v))
	}
	assert.Equal(t, want, got, "query %+v", q)
	assert.NotEmpty(t, got, "query %+v", q)
}

// TestTypedReadsAnyStoredEntity stores random untyped entities under the field names of
// typedAll and checks that a typed read succeeds exactly when converting the untyped read
// does, with the same struct or the same error.
func TestTypedReadsAnyStoredEntity(t *testing.T) {
	if bothStores(t, TestTypedReadsAnyStoredEntity) {
		return
	}
	ctx := context.Background()
	tbl := createTable(t, openStore(t, nil), "Any")
	names := []string{"Text", "Blob", "Flag", "When", "Ratio", "ID", "IDText", "Small", "Wide", "Big", "Plain", "Narrow", "Maybe", "Other"}
	r := rand.New(rand.NewPCG(36, 2))
	for i := range 200 {
		e := Entity{PartitionKey: "p", RowKey: fmt.Sprintf("r%03d", i), Properties: Properties{}}
		for range r.IntN(4) {
			e.Properties[pick(r, names)] = randomValue(r)
		}
		_, err := tbl.Insert(ctx, e)
		require.NoError(t, err)
		stored, err := tbl.Get(ctx, e.PartitionKey, e.RowKey)
		require.NoError(t, err)
		want, wantErr := EntityAs[typedAll](stored)
		got, err := GetAs[typedAll](ctx, tbl, e.PartitionKey, e.RowKey)
		if wantErr != nil {
			require.Error(t, err, "row %d: %v", i, e.Properties)
			assert.Equal(t, wantErr.Error(), err.Error())
			continue
		}
		require.NoError(t, err, "row %d: %v", i, e.Properties)
		assert.Equal(t, canonicalTyped(want), canonicalTyped(got))
	}
}

// TestTypedWritesKeepTheRules: the typed writes are the untyped ones, rule for rule.
func TestTypedWritesKeepTheRules(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openStore(t, nil), "Rules")
	type movie struct {
		Genre   string `tabula:"PartitionKey"`
		Title   string `tabula:"RowKey"`
		ETag    ETag
		Rating  float64
		Year    int32     `tabula:"ReleaseYear,omitempty"`
		Release time.Time `tabula:",omitempty"`
		Notes   string    `tabula:",omitempty"`
		Rest    Properties
	}
	m, err := InsertAs(ctx, tbl, movie{Genre: "Action", Title: "Heat", Rating: 4.5, Year: 1995})
	require.NoError(t, err)
	_, err = InsertAs(ctx, tbl, m)
	assert.ErrorIs(t, err, ErrEntityAlreadyExists)

	// A property the struct does not name survives a read and a Replace, in the catch-all.
	_, err = tbl.Update(ctx, Entity{PartitionKey: "Action", RowKey: "Heat", Properties: Properties{"Director": String("Mann")}}, Merge, AnyETag)
	require.NoError(t, err)
	m, err = GetAs[movie](ctx, tbl, "Action", "Heat")
	require.NoError(t, err)
	assert.Equal(t, Properties{"Director": String("Mann")}, m.Rest)
	m.Rating = 5
	etag, err := UpdateAs(ctx, tbl, m, Replace, m.ETag)
	require.NoError(t, err)
	_, err = UpdateAs(ctx, tbl, m, Replace, m.ETag) // stale now
	assert.ErrorIs(t, err, ErrUpdateConditionNotSatisfied)
	e, err := tbl.Get(ctx, "Action", "Heat")
	require.NoError(t, err)
	assert.Equal(t, etag, e.ETag)
	assert.Equal(t, Properties{"Director": String("Mann"), "Rating": Double(5), "ReleaseYear": Int32(1995)}, e.Properties)

	// Merge keeps what the struct leaves out (omitempty).
	_, err = UpsertAs(ctx, tbl, movie{Genre: "Action", Title: "Heat", Notes: "long"}, Merge)
	require.NoError(t, err)
	e, err = tbl.Get(ctx, "Action", "Heat")
	require.NoError(t, err)
	assert.Equal(t, Properties{"Director": String("Mann"), "Rating": Double(0), "ReleaseYear": Int32(1995), "Notes": String("long")}, e.Properties)

	for _, tc := range []struct {
		name string
		v    movie
		want error
	}{
		{"string too long", movie{Title: "x", Notes: strings.Repeat("n", MaxStringLength+1)}, ErrPropertyValueTooLarge},
		{"key with /", movie{Genre: "a/b", Title: "x"}, ErrOutOfRangeInput},
		{"DateTime before 1601", movie{Title: "x", Release: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)}, ErrOutOfRangeInput},
		{"catch-all name", movie{Title: "x", Rest: Properties{"bad name": Int32(1)}}, ErrPropertyNameInvalid},
		{"catch-all system name", movie{Title: "x", Rest: Properties{"Timestamp": Int32(1)}}, ErrPropertyNameInvalid},
		{"too many", movie{Title: "x", Rest: manyProps(MaxProperties)}, ErrTooManyProperties},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := InsertAs(ctx, tbl, tc.v)
			assert.ErrorIs(t, err, tc.want)
			_, untyped := tbl.Insert(ctx, mustEntityOf(t, tc.v))
			assert.Equal(t, untyped, err, "the same error as the untyped write")
		})
	}

	// A zero time.Time predates the service's DateTimes: refused, as for an Entity.
	type dated struct {
		PartitionKey, RowKey string
		When                 time.Time
	}
	_, err = InsertAs(ctx, tbl, dated{RowKey: "zero"})
	assert.ErrorIs(t, err, ErrOutOfRangeInput)

	// Transactions take typed actions.
	ins, err := InsertActionOf(movie{Genre: "Drama", Title: "A"})
	require.NoError(t, err)
	ups, err := UpsertActionOf(movie{Genre: "Drama", Title: "B", Rating: 3}, Replace)
	require.NoError(t, err)
	res, err := tbl.SubmitTransaction(ctx, []Action{ins, ups})
	require.NoError(t, err)
	upd, err := UpdateActionOf(movie{Genre: "Drama", Title: "A", Rating: 2}, Merge, res[0].ETag)
	require.NoError(t, err)
	_, err = tbl.SubmitTransaction(ctx, []Action{upd})
	require.NoError(t, err)
	res, err = tbl.SubmitTransaction(ctx, []Action{RetrieveAction("Drama", "A")})
	require.NoError(t, err)
	a, err := EntityAs[movie](*res[0].Entity)
	require.NoError(t, err)
	assert.Equal(t, 2.0, a.Rating)
	assert.Equal(t, res[0].ETag, a.ETag)
}

func mustEntityOf[T any](t *testing.T, v T) Entity {
	t.Helper()
	e, err := EntityOf(v)
	require.NoError(t, err)
	return e
}

// TestTypedReadErrors: a stored property that does not fit its field is an error naming the
// field; the read of a missing entity is ResourceNotFound.
func TestTypedReadErrors(t *testing.T) {
	if bothStores(t, TestTypedReadErrors) {
		return
	}
	ctx := context.Background()
	tbl := createTable(t, openStore(t, nil), "ReadErrors")
	type narrow struct {
		PartitionKey, RowKey string
		Count                int32
		Wide                 int64
	}
	for _, tc := range []struct {
		stored Property
		field  string
		want   string
		ok     bool
	}{
		{Int64(1), "Count", `property "Count" is Edm.Int64, not the field's Edm.Int32`, false},
		{String("1"), "Count", `property "Count" is Edm.String, not the field's Edm.Int32`, false},
		{Int32(-7), "Wide", "", true}, // an Int32 always fits an Edm.Int64 field
		{Double(1), "Wide", `property "Wide" is Edm.Double, not the field's Edm.Int64`, false},
	} {
		_, err := tbl.Upsert(ctx, Entity{PartitionKey: "p", RowKey: tc.field, Properties: Properties{tc.field: tc.stored}}, Replace)
		require.NoError(t, err)
		got, err := GetAs[narrow](ctx, tbl, "p", tc.field)
		for _, err := range []error{err, firstErr(QueryAs[narrow](ctx, tbl, Query{Filter: "RowKey eq '" + tc.field + "'"}))} {
			if tc.ok {
				require.NoError(t, err)
				continue
			}
			var se *StructError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.field, se.Field)
			assert.Equal(t, tc.want, se.Problem)
		}
		if tc.ok {
			assert.Equal(t, int64(-7), got.Wide)
		}
	}
	_, err := GetAs[narrow](ctx, tbl, "p", "missing")
	assert.ErrorIs(t, err, ErrResourceNotFound)
	_, err = GetAs[narrow](ctx, tbl, "p", "bad/key")
	assert.ErrorIs(t, err, ErrOutOfRangeInput)
	_, err = GetAs[narrow](ctx, db404(t), "p", "r")
	assert.ErrorIs(t, err, ErrTableNotFound)
}

func db404(t *testing.T) *Table { return openStore(t, nil).Table("Missing") }

func firstErr[T any](seq func(func(T, error) bool)) error {
	var first error
	for _, err := range seq {
		if err != nil {
			first = err
			break
		}
	}
	return first
}

// TestStructErrors: a struct that does not map is a *StructError naming the field, from
// every typed function, before anything is sent.
func TestStructErrors(t *testing.T) {
	type (
		keys  struct{ PartitionKey, RowKey string }
		pkInt struct {
			PartitionKey int
			RowKey       string
		}
		twoETags struct {
			keys
			A ETag
			B ETag
		}
		badTime struct {
			keys
			Timestamp string
		}
		unsupported struct {
			keys
			Count uint32
		}
		float32s struct {
			keys
			Score float32
		}
		badOption struct {
			keys
			N int64 `tabula:",Edm.Double"`
		}
		unknownOption struct {
			keys
			N int64 `tabula:",string"`
		}
		badName struct {
			keys
			N int64 `tabula:"2fast"`
		}
		systemName struct {
			keys
			X string `tabula:"Timestamp"`
		}
		duplicate struct {
			keys
			A int64 `tabula:"N"`
			B int64 `tabula:"N"`
		}
		twoRests struct {
			keys
			A, B Properties
		}
		namedRest struct {
			keys
			A Properties `tabula:"Rest"`
		}
		taggedUnexported struct {
			keys
			n int64 `tabula:"N"`
		}
		nested struct {
			keys
			Inner struct{ A int }
		}
	)
	_ = taggedUnexported{}.n
	for _, tc := range []struct {
		name    string
		check   func() error
		field   string
		problem string
		is      error
	}{
		{"not a struct", errorOf[int], "", "is a int, not a struct", nil},
		{"PartitionKey int", errorOf[pkInt], "PartitionKey", "is the PartitionKey, so it must be a string, not int", nil},
		{"two ETags", errorOf[twoETags], "B", "is a second ETag field", nil},
		{"Timestamp string", errorOf[badTime], "Timestamp", "is the Timestamp, so it must be a time.Time, not string", nil},
		{"uint32", errorOf[unsupported], "Count", "type uint32 maps to no EDM type (string, []byte, bool, float64, int32, int64, int, [16]byte, time.Time, or a pointer to one)", nil},
		{"float32", errorOf[float32s], "Score", "type float32 maps to no EDM type (string, []byte, bool, float64, int32, int64, int, [16]byte, time.Time, or a pointer to one)", nil},
		{"int64 as Double", errorOf[badOption], "N", "type int64 cannot be stored as Edm.Double", nil},
		{"unknown option", errorOf[unknownOption], "N", `tag option "string" is neither omitempty nor one EDM type such as Edm.Int64`, nil},
		{"bad name", errorOf[badName], "N", `property name "2fast": U+0032 is not allowed in a C# identifier at that position`, ErrPropertyNameInvalid},
		{"Timestamp on a string", errorOf[systemName], "X", "is the Timestamp, so it must be a time.Time, not string", nil},
		{"duplicate", errorOf[duplicate], "B", `maps to property "N", as field A does`, nil},
		{"two catch-alls", errorOf[twoRests], "B", "is a second catch-all of unnamed properties field", nil},
		{"named catch-all", errorOf[namedRest], "A", "is the catch-all of unnamed properties, so it must be a Properties without a name, not tabula.Properties", nil},
		{"tagged unexported", errorOf[taggedUnexported], "n", "is unexported, so it cannot be tagged", nil},
		{"struct field", errorOf[nested], "Inner", "type struct { A int } maps to no EDM type (string, []byte, bool, float64, int32, int64, int, [16]byte, time.Time, or a pointer to one)", nil},
		{"no keys to write", func() error { _, err := EntityOf(struct{ A int }{}); return err }, "", "has no PartitionKey field, so it cannot be written", nil},
		{"no RowKey to write", func() error { _, err := EntityOf(struct{ PartitionKey string }{}); return err }, "", "has no RowKey field, so it cannot be written", nil},
		{"Int32 overflow", func() error {
			_, err := EntityOf(struct {
				keys
				N int64 `tabula:",Edm.Int32"`
			}{N: math.MaxInt32 + 1})
			return err
		}, "N", "value 2147483648 does not fit the field's Edm.Int32", nil},
		{"Guid text", func() error {
			_, err := EntityOf(struct {
				keys
				ID string `tabula:",Edm.Guid"`
			}{ID: "nope"})
			return err
		}, "ID", `guid "nope" is not in the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, ErrInvalidInput},
		{"field and catch-all", func() error {
			_, err := EntityOf(struct {
				keys
				N    int64
				Rest Properties
			}{Rest: Properties{"N": Int64(1)}})
			return err
		}, "N", `property "N" is also in the catch-all of unnamed properties`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.check()
			var se *StructError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.field, se.Field)
			assert.Equal(t, tc.problem, se.Problem)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Contains(t, err.Error(), se.Type.String())
		})
	}
}

// errorOf returns the mapping error of T, from each typed function: they must agree.
func errorOf[T any]() error {
	ctx := context.Background()
	var zero T
	db, err := OpenInMemory(nil)
	if err != nil {
		return err
	}
	defer db.Close()
	tbl, err := db.CreateTable(ctx, "Typed")
	if err != nil {
		return err
	}
	_, first := GetAs[T](ctx, tbl, "p", "r")
	for _, err := range []error{
		func() error { _, err := InsertAs(ctx, tbl, zero); return err }(),
		func() error { _, err := UpdateAs(ctx, tbl, zero, Merge, AnyETag); return err }(),
		func() error { _, err := UpsertAs(ctx, tbl, zero, Merge); return err }(),
		firstErr(QueryAs[T](ctx, tbl, Query{})),
		func() error { _, err := EntityOf(zero); return err }(),
		func() error { _, err := EntityAs[T](Entity{}); return err }(),
	} {
		if !reflect.DeepEqual(err, first) {
			return fmt.Errorf("typed functions disagree: %v and %v", first, err)
		}
	}
	if !errors.As(first, new(*StructError)) {
		return fmt.Errorf("not a StructError: %v", first)
	}
	return first
}

// TestTypedEmbeddedAndPointers: embedded structs flatten; nil pointers are not written and
// absent properties read as nil; the mapping is cached once per type.
func TestTypedEmbeddedAndPointers(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openStore(t, nil), "Shapes")
	type Base struct {
		PartitionKey string
		RowKey       string
		Created      time.Time
	}
	type order struct {
		Base
		Total *float64
		Note  *string
	}
	total := 9.5
	created := time.Date(2024, 1, 2, 3, 4, 5, 600, time.UTC)
	_, err := InsertAs(ctx, tbl, order{Base: Base{"o", "1", created}, Total: &total})
	require.NoError(t, err)
	e, err := tbl.Get(ctx, "o", "1")
	require.NoError(t, err)
	assert.Equal(t, Properties{"Created": DateTime(created), "Total": Double(9.5)}, e.Properties)
	got, err := GetAs[order](ctx, tbl, "o", "1")
	require.NoError(t, err)
	assert.Equal(t, created, got.Created)
	require.NotNil(t, got.Total)
	assert.Equal(t, 9.5, *got.Total)
	assert.Nil(t, got.Note)

	c1, _ := codecOf[order]()
	c2, _ := codecOf[order]()
	assert.Same(t, c1, c2)
	var se *StructError
	_, err = codecOf[struct{ N uint }]()
	require.ErrorAs(t, err, &se)
	_, err2 := codecOf[struct{ N uint }]()
	assert.Same(t, err, err2, "a bad struct's error is cached too")
}

// TestTypedScanHonoursPaging: QueryAs follows continuations and Top, on pages the flavor may
// reverse, as QueryAll does.
func TestTypedScanHonoursPaging(t *testing.T) {
	ctx := context.Background()
	for _, opts := range []*Options{nil, {Flavor: FlavorCosmos}} {
		tbl := createTable(t, openStore(t, opts), "Pages")
		for i := range 25 {
			_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%02d", i), Properties: Properties{"N": Int32(int32(i))}})
			require.NoError(t, err)
		}
		type row struct {
			RowKey string
			N      int32
		}
		var want, got []row
		for e, err := range tbl.QueryAll(ctx, Query{Top: 4, Filter: "N ge 3"}) {
			require.NoError(t, err)
			want = append(want, row{e.RowKey, int32(e.Properties["N"].(Int32))})
		}
		for v, err := range QueryAs[row](ctx, tbl, Query{Top: 4, Filter: "N ge 3"}) {
			require.NoError(t, err)
			got = append(got, v)
			if len(got) == 30 {
				break
			}
		}
		assert.Len(t, got, 22)
		assert.Equal(t, want, got)
	}
}

// TestTypedConcurrentFirstUse reads and writes a type not used before from many goroutines
// at once: the mapping is made once under contention, and the pooled readers are never
// shared (run with -race).
func TestTypedConcurrentFirstUse(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openStore(t, nil), "Concurrent")
	type fresh struct {
		PartitionKey, RowKey string
		ETag                 ETag
		N                    int64
		Rest                 Properties
	}
	const workers, rows = 8, 20
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			errs <- func() error {
				pk := fmt.Sprintf("w%d", w)
				for i := range rows {
					if _, err := InsertAs(ctx, tbl, fresh{PartitionKey: pk, RowKey: fmt.Sprintf("%02d", i), N: int64(w*100 + i)}); err != nil {
						return err
					}
					got, err := GetAs[fresh](ctx, tbl, pk, fmt.Sprintf("%02d", i))
					if err != nil {
						return err
					}
					if got.N != int64(w*100+i) || got.ETag == "" {
						return fmt.Errorf("read %+v", got)
					}
				}
				n := 0
				for v, err := range QueryAs[fresh](ctx, tbl, Query{Filter: "PartitionKey eq '" + pk + "'"}) {
					if err != nil {
						return err
					}
					if v.N != int64(w*100+n) {
						return fmt.Errorf("query row %d: %+v", n, v)
					}
					n++
				}
				if n != rows {
					return fmt.Errorf("query gave %d rows", n)
				}
				return nil
			}()
		}()
	}
	for range workers {
		require.NoError(t, <-errs)
	}
}

// TestTypedScanStopsAtTheMisfit: a query yields the structs before the first entity that
// does not fit, in the order the page returns them (reversed by the Cosmos flavor), then
// that entity's error, as converting QueryAll's entities one by one does.
func TestTypedScanStopsAtTheMisfit(t *testing.T) {
	ctx := context.Background()
	for _, opts := range []*Options{nil, {Flavor: FlavorCosmos}} {
		tbl := createTable(t, openStore(t, opts), "Misfit")
		for i := range 10 {
			var n Property = Int32(int32(i))
			if i == 3 {
				n = String("three")
			}
			_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%02d", i), Properties: Properties{"N": n}})
			require.NoError(t, err)
		}
		type row struct {
			RowKey string
			N      int32
		}
		var want, got []row
		var wantErr, gotErr error
		for e, err := range tbl.QueryAll(ctx, Query{}) {
			require.NoError(t, err)
			v, err := EntityAs[row](e)
			if err != nil {
				wantErr = err
				break
			}
			want = append(want, v)
		}
		for v, err := range QueryAs[row](ctx, tbl, Query{}) {
			if err != nil {
				gotErr = err
				break
			}
			got = append(got, v)
		}
		require.Error(t, wantErr)
		assert.Equal(t, wantErr, gotErr)
		assert.Equal(t, want, got)
	}
}
