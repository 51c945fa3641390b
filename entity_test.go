package tabula

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/odata"
)

func manyProps(n int) Properties {
	p := Properties{}
	for i := range n {
		p[fmt.Sprintf("P%03d", i)] = Int32(i)
	}
	return p
}

// atSizeLimit builds properties whose entity (with empty keys) is exactly MaxEntitySize
// bytes by the service's formula, plus extra bytes.
func atSizeLimit(extra int) Properties {
	p := Properties{}
	// 15 full strings of 3-letter names: 15 × (8 + 6 + 2·32768 + 4) = 983,310; with the
	// entity's 4 bytes that leaves 65,262 = 8 + 6 + 2·32,622 + 4 for the last one.
	for i := range 15 {
		p[fmt.Sprintf("s%02d", i)] = String(strings.Repeat("x", MaxStringLength))
	}
	p["s99"] = String(strings.Repeat("x", 32622+extra))
	return p
}

func TestValidationRules(t *testing.T) {
	emoji := "\U0001F600" // two UTF-16 code units
	cases := []struct {
		name string
		e    Entity
		code string // "" means accepted
	}{
		{"key at limit", Entity{PartitionKey: strings.Repeat("k", 1024), RowKey: strings.Repeat("r", 1024)}, ""},
		{"PartitionKey one over", Entity{PartitionKey: strings.Repeat("k", 1025)}, "KeyValueTooLarge"},
		{"RowKey one over", Entity{RowKey: strings.Repeat("r", 1025)}, "KeyValueTooLarge"},
		{"key limit counts UTF-16", Entity{PartitionKey: strings.Repeat(emoji, 512)}, ""},
		{"key surrogate pair over", Entity{PartitionKey: strings.Repeat(emoji, 512) + "a"}, "KeyValueTooLarge"},
		{"key slash", Entity{PartitionKey: "a/b"}, "OutOfRangeInput"},
		{"key backslash", Entity{RowKey: `a\b`}, "OutOfRangeInput"},
		{"key hash", Entity{RowKey: "a#"}, "OutOfRangeInput"},
		{"key question mark", Entity{RowKey: "?"}, "OutOfRangeInput"},
		{"key NUL", Entity{RowKey: "a\x00"}, "OutOfRangeInput"},
		{"key U+001F", Entity{RowKey: "\x1f"}, "OutOfRangeInput"},
		{"key U+007F", Entity{RowKey: "\x7f"}, "OutOfRangeInput"},
		{"key U+0080", Entity{PartitionKey: "\u0080"}, "OutOfRangeInput"},
		{"key U+009F", Entity{PartitionKey: "\u009f"}, "OutOfRangeInput"},
		{"key neighbours of forbidden ranges", Entity{PartitionKey: " \u00a0~", RowKey: "$%&'()*+,-.:;<=>@[]^_`{|}"}, ""},
		{"key invalid UTF-8", Entity{PartitionKey: "\xff"}, "InvalidInput"},
		{"empty keys", Entity{}, ""},
		{"252 properties", Entity{Properties: manyProps(252)}, ""},
		{"253 properties", Entity{Properties: manyProps(253)}, "TooManyProperties"},
		{"nil values are dropped, not counted", Entity{Properties: func() Properties {
			p := manyProps(252)
			p["Null"] = nil
			return p
		}()}, ""},
		{"name at 255", Entity{Properties: Properties{strings.Repeat("n", 255): Int32(1)}}, ""},
		{"name at 256", Entity{Properties: Properties{strings.Repeat("n", 256): Int32(1)}}, "PropertyNameTooLong"},
		{"name underscore and digits", Entity{Properties: Properties{"_a1": Int32(1), "a_1": Int32(1)}}, ""},
		{"name letters of any script and combining marks", Entity{Properties: Properties{"Ünïcode": Int32(1), "名前": Int32(1), "e\u0301": Int32(1)}}, ""},
		{"name leading digit", Entity{Properties: Properties{"1a": Int32(1)}}, "PropertyNameInvalid"},
		{"name dash", Entity{Properties: Properties{"a-b": Int32(1)}}, "PropertyNameInvalid"},
		{"name space", Entity{Properties: Properties{"a b": Int32(1)}}, "PropertyNameInvalid"},
		{"name leading combining mark", Entity{Properties: Properties{"\u0301a": Int32(1)}}, "PropertyNameInvalid"},
		{"name supplementary letter", Entity{Properties: Properties{"\U0001D49C": Int32(1)}}, "PropertyNameInvalid"},
		{"name empty", Entity{Properties: Properties{"": Int32(1)}}, "PropertyNameInvalid"},
		{"name PartitionKey", Entity{Properties: Properties{"PartitionKey": String("x")}}, "PropertyNameInvalid"},
		{"name Timestamp", Entity{Properties: Properties{"Timestamp": DateTime(time.Now())}}, "PropertyNameInvalid"},
		{"name is case-sensitive", Entity{Properties: Properties{"partitionKey": String("x"), "rowkey": String("y")}}, ""},
		{"name invalid UTF-8", Entity{Properties: Properties{"a\xff": Int32(1)}}, "PropertyNameInvalid"},
		{"string at limit", Entity{Properties: Properties{"S": String(strings.Repeat("s", 32768))}}, ""},
		{"string one over", Entity{Properties: Properties{"S": String(strings.Repeat("s", 32769))}}, "PropertyValueTooLarge"},
		{"string limit counts UTF-16", Entity{Properties: Properties{"S": String(strings.Repeat(emoji, 16384))}}, ""},
		{"string surrogate pair over", Entity{Properties: Properties{"S": String(strings.Repeat(emoji, 16384) + "a")}}, "PropertyValueTooLarge"},
		{"string invalid UTF-8", Entity{Properties: Properties{"S": String("\xc3")}}, "InvalidInput"},
		{"binary at limit", Entity{Properties: Properties{"B": Binary(make([]byte, 65536))}}, ""},
		{"binary one over", Entity{Properties: Properties{"B": Binary(make([]byte, 65537))}}, "PropertyValueTooLarge"},
		{"DateTime earliest", Entity{Properties: Properties{"D": DateTime(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC))}}, ""},
		{"DateTime one tick early", Entity{Properties: Properties{"D": DateTime(time.Date(1600, 12, 31, 23, 59, 59, 999999900, time.UTC))}}, "OutOfRangeInput"},
		{"DateTime latest", Entity{Properties: Properties{"D": DateTime(time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC))}}, ""},
		{"DateTime one tick late", Entity{Properties: Properties{"D": DateTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))}}, "OutOfRangeInput"},
		{"entity at 1 MiB", Entity{Properties: atSizeLimit(0)}, ""},
		{"entity over 1 MiB", Entity{Properties: atSizeLimit(1)}, "EntityTooLarge"},
	}
	ctx := context.Background()
	db := openTestDB(t, nil)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl := createTable(t, db, fmt.Sprintf("Rules%d", i))
			// An existing entity under the same keys (when they are valid) must survive a
			// rejected Insert, Update, Merge and Upsert byte for byte.
			if validateKeys(c.e.PartitionKey, c.e.RowKey) == nil {
				existing := Entity{PartitionKey: c.e.PartitionKey, RowKey: c.e.RowKey, Properties: Properties{"Old": String("value")}}
				_, err := tbl.Upsert(ctx, existing, Replace)
				require.NoError(t, err)
			}
			before := rawTable(t, tbl)

			if c.code == "" {
				_, err := tbl.Upsert(ctx, c.e, Replace)
				require.NoError(t, err)
				got, err := tbl.Get(ctx, c.e.PartitionKey, c.e.RowKey)
				require.NoError(t, err)
				want := Properties{}
				for k, v := range c.e.Properties {
					if v != nil {
						want[k] = v
					}
				}
				assert.Equal(t, len(want), len(got.Properties))
				return
			}
			check := func(op string, err error) {
				var te *Error
				require.ErrorAs(t, err, &te, op)
				assert.Equal(t, c.code, te.Code, "%s: %v", op, err)
				assert.Equal(t, 400, te.StatusCode, op)
				assert.NotEmpty(t, te.Detail, op)
				assert.Equal(t, before, rawTable(t, tbl), "%s changed stored data", op)
			}
			_, err := tbl.Insert(ctx, c.e)
			check("Insert", err)
			_, err = tbl.Upsert(ctx, c.e, Replace)
			check("InsertOrReplace", err)
			_, err = tbl.Upsert(ctx, c.e, Merge)
			check("InsertOrMerge", err)
			_, err = tbl.Update(ctx, c.e, Merge, AnyETag)
			check("Merge", err)
			_, err = tbl.Update(ctx, c.e, Replace, AnyETag)
			check("Update", err)
		})
	}
}

func TestMergeIsValidatedOnTheResult(t *testing.T) {
	ctx := context.Background()
	tbl := createTable(t, openTestDB(t, nil), "Merges")
	_, err := tbl.Insert(ctx, Entity{PartitionKey: "p", RowKey: "r", Properties: manyProps(200)})
	require.NoError(t, err)
	before := rawTable(t, tbl)

	extra := Properties{}
	for i := range 53 {
		extra[fmt.Sprintf("X%02d", i)] = Boolean(true)
	}
	_, err = tbl.Update(ctx, Entity{PartitionKey: "p", RowKey: "r", Properties: extra}, Merge, AnyETag)
	assert.ErrorIs(t, err, ErrTooManyProperties)
	_, err = tbl.Upsert(ctx, Entity{PartitionKey: "p", RowKey: "r", Properties: extra}, Merge)
	assert.ErrorIs(t, err, ErrTooManyProperties)
	assert.Equal(t, before, rawTable(t, tbl))

	// Replacing with the same 53 properties is fine: Replace drops the other 200.
	_, err = tbl.Upsert(ctx, Entity{PartitionKey: "p", RowKey: "r", Properties: extra}, Replace)
	assert.NoError(t, err)
}

func TestErrorMessages(t *testing.T) {
	_, err := validateKey("RowKey", strings.Repeat("r", 1025))
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "The 'RowKey' property exceeds the maximum allowed key size (2KB). It is a UTF-16 encoded string and the maximum number of characters should be 1K or less.", te.Message)
	assert.Equal(t, "tabula: RowKey is 1025 UTF-16 code units long; the limit is 1024 (KeyValueTooLarge)", te.Error())

	_, err = validateKey("PartitionKey", "a#b")
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "The 'PartitionKey' parameter of value 'a#b' is out of range.", te.Message)

	_, err = validateValue("Born", DateTime(time.Date(1500, 3, 4, 5, 6, 7, 0, time.UTC)))
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "The 'Born' parameter of value '03/04/1500 05:06:07' is out of range.", te.Message)

	assert.True(t, errorsIs(ErrEntityAlreadyExists.WithDetail("x"), ErrEntityAlreadyExists))
	assert.False(t, errorsIs(ErrEntityAlreadyExists.WithDetail("x"), ErrResourceNotFound))
	assert.Equal(t, "tabula: The specified resource does not exist. (ResourceNotFound)", ErrResourceNotFound.Error())
}

func errorsIs(err, target error) bool {
	e, ok := err.(*Error)
	return ok && e.Is(target)
}

func TestETagFormat(t *testing.T) {
	ts := time.Date(2022, 3, 1, 20, 40, 24, 431753500, time.UTC)
	assert.Equal(t, ETag(`W/"datetime'2022-03-01T20%3A40%3A24.4317535Z'"`), etagOf(ticksOf(ts)))
	// Trailing zeros are trimmed; a whole second has no fraction.
	assert.Equal(t, ETag(`W/"datetime'2022-03-01T20%3A40%3A24.910481Z'"`), etagOf(ticksOf(time.Date(2022, 3, 1, 20, 40, 24, 910481000, time.UTC))))
	assert.Equal(t, ETag(`W/"datetime'2022-03-01T20%3A40%3A24Z'"`), etagOf(ticksOf(time.Date(2022, 3, 1, 20, 40, 24, 0, time.UTC))))

	ticks, err := ETag(`W/"datetime'2022-03-01T20:40:24.4317535Z'"`).ticks()
	require.NoError(t, err)
	assert.Equal(t, ticksOf(ts), ticks, "a colon instead of %%3A is accepted")
	// A strong tag is refused, as the service refuses it (Azure/Azurite#1229 and #1231).
	for _, bad := range []ETag{`W/"datetime'2022-03-01T20%3A40%3A24Z'`, `datetime'2022-03-01T20:40:24Z'`, `W/x`, `"a"b"`, `"a b"`, `"x"`,
		`"datetime'2022-03-01T20%3A40%3A24.4317535Z'"`} {
		assert.ErrorIs(t, bad.check(), ErrInvalidInput, "%s", bad)
	}
	// Weak tags that Tabula never made, in either case of W, are usable conditions matching
	// nothing; the lower-case form of a current one matches it.
	for _, foreign := range []ETag{`W/"datetime'nope'"`, `W/"wrong"`, `w/"wrong"`} {
		assert.NoError(t, foreign.check(), "%s", foreign)
		assert.False(t, foreign.matches(ticksOf(ts)), "%s", foreign)
	}
	lower := ETag(`w/"datetime'2022-03-01T20%3A40%3A24.4317535Z'"`)
	assert.NoError(t, lower.check())
	assert.True(t, lower.matches(ticksOf(ts)))
	// Tabula's own form matches its version and no other; so do its other spellings.
	assert.True(t, etagOf(ticksOf(ts)).matches(ticksOf(ts)))
	assert.False(t, etagOf(ticksOf(ts)).matches(ticksOf(ts)+1))
	assert.False(t, etagOf(ticksOf(ts)+1).matches(ticksOf(ts)))
	colons := ETag(`W/"datetime'2022-03-01T20:40:24.4317535Z'"`)
	assert.True(t, colons.matches(ticksOf(ts)))
	assert.False(t, colons.matches(ticksOf(ts)+1))
	assert.True(t, ETag(`W/"datetime'2022-03-01T20%3A40%3A24.43175350Z'"`).matches(ticksOf(ts)), "a trailing zero")
	assert.NoError(t, AnyETag.check())
	assert.NoError(t, ETag("").check())
}

func TestTicks(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999900, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC),
	} {
		assert.True(t, tm.Equal(timeOfTicks(ticksOf(tm))), "%v", tm)
	}
	assert.Equal(t, int64(0), ticksOf(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)))
	assert.Equal(t, int64(621355968000000000), ticksOf(time.Unix(0, 0)), ".NET's tick count of the Unix epoch")
}

func TestGuid(t *testing.T) {
	g, err := ParseGuid("C9DA6455-213D-42C9-9A79-3E9149A57833")
	require.NoError(t, err)
	assert.Equal(t, "c9da6455-213d-42c9-9a79-3e9149a57833", g.String())
	for _, bad := range []string{"", "c9da6455213d42c99a793e9149a57833", "g9da6455-213d-42c9-9a79-3e9149a57833", "c9da6455-213d-42c9-9a79-3e9149a5783"} {
		_, err := ParseGuid(bad)
		assert.ErrorIs(t, err, ErrInvalidInput, bad)
	}
}

// The hand-written formatter agrees with time.Format everywhere in the service's range.
func TestFormatTimeAgreesWithTimeFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		ticks := r.Int64N(odata.MaxTicks + 1)
		if r.IntN(4) == 0 {
			ticks -= ticks % ticksPerSecond // whole seconds, no fraction
		}
		tm := timeOfTicks(ticks)
		require.Equal(t, tm.Format("2006-01-02T15:04:05.9999999Z07:00"), formatTime(tm), "ticks %d", ticks)
		text, err := DateTime(tm).AppendText([]byte("x"))
		require.NoError(t, err)
		require.Equal(t, "x"+DateTime(tm).String(), string(text), "AppendText appends what String returns")
	}
}

func TestETagIsEntityTag(t *testing.T) {
	for tag, want := range map[ETag]bool{
		`W/"datetime'2024-05-06T07%3A08%3A09.1234567Z'"`: true,
		`W/"wrong"`: true,
		`"strong"`:  true,
		`""`:        true,
		`*`:         false,
		`wrong`:     false,
		`W/wrong`:   false,
		`"a"b"`:     false,
		"\"a b\"":   false,
		`"`:         false,
	} {
		assert.Equal(t, want, tag.IsEntityTag(), "%s", tag)
	}
}

// validateKey's pass for plain ASCII keys agrees with the full checks, byte by byte and at
// the length limit.
func TestValidateKeyShortcutAgrees(t *testing.T) {
	keys := []string{"", strings.Repeat("k", MaxKeyLength), strings.Repeat("k", MaxKeyLength+1), "é", "\u0085"}
	for c := range 256 {
		keys = append(keys, "a"+string([]byte{byte(c)})+"b")
	}
	for _, k := range keys {
		n, err := validateKey(propRowKey, k)
		wantN, wantErr := validateKeyFully(propRowKey, k)
		assert.Equal(t, wantN, n, "%q", k)
		assert.Equal(t, wantErr, err, "%q", k)
	}
}

// BenchmarkValidateKeys checks the keys of the core benchmarks' entities, which every read
// and write does.
func BenchmarkValidateKeys(b *testing.B) {
	pk, rk := "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "JobID0001_VM0000000001_Worker0001_0000000042"
	for b.Loop() {
		if err := validateKeys(pk, rk); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPropertyOfAndValueOf pins the one conversion between Property and odata.Value that the
// engine, the server and package remote share: every EDM type, at its edges, both ways.
func TestPropertyOfAndValueOf(t *testing.T) {
	ticks := func(tm time.Time) int64 { return odata.TicksFromTime(tm) }
	var ones [16]byte
	for i := range ones {
		ones[i] = 0xff
	}
	for _, tc := range []struct {
		name string
		p    Property
		v    odata.Value
		back Property // PropertyOf(v), when it is not p itself
	}{
		{name: "nil", p: nil, v: odata.Value{}},
		{name: "empty string", p: String(""), v: odata.Value{Type: odata.String}},
		{name: "string", p: String("héllo\x00𝄞"), v: odata.Value{Type: odata.String, Str: "héllo\x00𝄞"}},
		{name: "empty binary", p: Binary{}, v: odata.Value{Type: odata.Binary, Bytes: []byte{}}},
		{name: "binary", p: Binary{0, 0xff}, v: odata.Value{Type: odata.Binary, Bytes: []byte{0, 0xff}}},
		{name: "false", p: Boolean(false), v: odata.Value{Type: odata.Boolean}},
		{name: "true", p: Boolean(true), v: odata.Value{Type: odata.Boolean, Int: 1}},
		{name: "earliest datetime", p: DateTime(minDateTime), v: odata.Value{Type: odata.DateTime, Int: ticks(minDateTime)}},
		{name: "latest datetime", p: DateTime(maxDateTime), v: odata.Value{Type: odata.DateTime, Int: ticks(maxDateTime)}},
		{name: "datetime before 1970", p: DateTime(time.Date(1969, 12, 31, 23, 59, 59, 100, time.UTC)),
			v: odata.Value{Type: odata.DateTime, Int: 621355967990000001}},
		{name: "datetime finer than a tick is truncated", p: DateTime(time.Date(2024, 2, 29, 1, 2, 3, 123456789, time.UTC)),
			v:    odata.Value{Type: odata.DateTime, Int: 638447653231234567},
			back: DateTime(time.Date(2024, 2, 29, 1, 2, 3, 123456700, time.UTC))},
		{name: "datetime in another zone reads back in UTC", p: DateTime(time.Date(2024, 1, 1, 1, 0, 0, 0, time.FixedZone("CET", 3600))),
			v:    odata.Value{Type: odata.DateTime, Int: 638396640000000000},
			back: DateTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))},
		{name: "zero double", p: Double(0), v: odata.Value{Type: odata.Double}},
		{name: "negative zero", p: Double(math.Copysign(0, -1)), v: odata.Value{Type: odata.Double, Float: math.Copysign(0, -1)}},
		{name: "largest double", p: Double(math.MaxFloat64), v: odata.Value{Type: odata.Double, Float: math.MaxFloat64}},
		{name: "smallest double", p: Double(math.SmallestNonzeroFloat64), v: odata.Value{Type: odata.Double, Float: math.SmallestNonzeroFloat64}},
		{name: "+Inf", p: Double(math.Inf(1)), v: odata.Value{Type: odata.Double, Float: math.Inf(1)}},
		{name: "-Inf", p: Double(math.Inf(-1)), v: odata.Value{Type: odata.Double, Float: math.Inf(-1)}},
		{name: "zero guid", p: Guid{}, v: odata.Value{Type: odata.Guid}},
		{name: "guid", p: Guid(ones), v: odata.Value{Type: odata.Guid, Guid: ones}},
		{name: "zero int32", p: Int32(0), v: odata.Value{Type: odata.Int32}},
		{name: "least int32", p: Int32(math.MinInt32), v: odata.Value{Type: odata.Int32, Int: math.MinInt32}},
		{name: "greatest int32", p: Int32(math.MaxInt32), v: odata.Value{Type: odata.Int32, Int: math.MaxInt32}},
		{name: "zero int64", p: Int64(0), v: odata.Value{Type: odata.Int64}},
		{name: "least int64", p: Int64(math.MinInt64), v: odata.Value{Type: odata.Int64, Int: math.MinInt64}},
		{name: "greatest int64", p: Int64(math.MaxInt64), v: odata.Value{Type: odata.Int64, Int: math.MaxInt64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := ValueOf(tc.p)
			assert.Equal(t, tc.v, v)
			if tc.p != nil && v.Type != 0 {
				assert.Equal(t, string(tc.p.EdmType()), v.Type.String(), "EDM type names agree")
			}
			want := tc.p
			if tc.back != nil {
				want = tc.back
			}
			assert.Equal(t, want, PropertyOf(v))
		})
	}
	t.Run("NaN", func(t *testing.T) {
		v := ValueOf(Double(math.NaN()))
		require.Equal(t, odata.Double, v.Type)
		assert.True(t, math.IsNaN(v.Float))
		back, ok := PropertyOf(v).(Double)
		require.True(t, ok)
		assert.True(t, math.IsNaN(float64(back)))
	})
	t.Run("a Value of no type is no property", func(t *testing.T) {
		assert.Equal(t, odata.Value{}, ValueOf(embeddedString{"x"}), "a type beyond the eight")
		assert.Nil(t, PropertyOf(odata.Value{}))
		assert.Nil(t, PropertyOf(odata.Value{Type: odata.Int64 + 1, Int: 7}))
	})
}

// embeddedString is a Property by embedding, of none of the eight types.
type embeddedString struct{ String }
