package tabula

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testRecord encodes a record the way the write path does.
func testRecord(ticks int64, props Properties) []byte {
	return encodeRecord(ticks, props, sortedNames(props))
}

func TestRecordRoundTrip(t *testing.T) {
	props := Properties{
		"S": String("x"), "B": Binary{1}, "T": Boolean(true), "D": DateTime(time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)),
		"X": Double(1.5), "G": Guid{1, 2}, "I": Int32(-7), "L": Int64(1 << 40),
	}
	rec := testRecord(42, props)
	assert.Equal(t, byte(recordVersion), rec[0])
	got := Properties{}
	ticks, err := newRecordDecoder().decode(rec, nil, got)
	require.NoError(t, err)
	assert.Equal(t, int64(42), ticks)
	// DateTime keeps 100 ns ticks: the 600 ns become 600 ns, a 650 ns value would lose 50.
	assert.Equal(t, props, got)

	// Selected decoding skips the rest; a nil map skips everything.
	got = Properties{}
	_, err = newRecordDecoder().decode(rec, func(n string) bool { return n == "L" }, got)
	require.NoError(t, err)
	assert.Equal(t, Properties{"L": Int64(1 << 40)}, got)
	ticks, err = newRecordDecoder().decode(rec, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(42), ticks)

	// The encoding is canonical: the same entity always gives the same bytes.
	assert.Equal(t, rec, testRecord(42, props))
}

func TestRecordRejectsCorruption(t *testing.T) {
	rec := testRecord(1, Properties{"S": String("hello")})
	for name, b := range map[string][]byte{
		"empty":           nil,
		"unknown version": append([]byte{9}, rec[1:]...),
		"truncated":       rec[:len(rec)-2],
		"trailing bytes":  append(append([]byte{}, rec...), 0xc0),
	} {
		_, err := newRecordDecoder().decode(b, nil, Properties{})
		assert.ErrorIs(t, err, ErrInternal, name)
	}
}

func FuzzRecordDecode(f *testing.F) {
	f.Add(testRecord(1, Properties{"S": String("hello"), "G": Guid{1}, "B": Binary{}}))
	f.Add(testRecord(-5, Properties{"D": DateTime(time.Unix(0, 0)), "L": Int64(-1), "I": Int32(3), "X": Double(2)}))
	f.Add([]byte{recordVersion, 0x01, 0x91, 0xa1, 'a', 0x09, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		props := Properties{}
		ticks, err := newRecordDecoder().decode(b, nil, props)
		if err != nil {
			return
		}
		// Whatever decodes must encode back to a record that decodes to the same thing.
		again := Properties{}
		ticks2, err := newRecordDecoder().decode(testRecord(ticks, props), nil, again)
		if err != nil || ticks2 != ticks || len(again) != len(props) {
			t.Fatalf("re-encoding %x: %v, %d vs %d, %d vs %d properties", b, err, ticks2, ticks, len(again), len(props))
		}
	})
}

// Records carved from one arena stay what they were encoded as while the arena grows past
// them, and the arena gives a large buffer up when reset.
func TestWriteArena(t *testing.T) {
	var arena writeArena
	var records [][]byte
	var want [][]byte
	for i := range 200 {
		props := Properties{"S": String(strings.Repeat("x", i*37)), "I": Int32(int32(i))}
		start := len(arena.b)
		arena.b = appendRecord(arena.b, int64(i), props, sortedNames(props))
		records = append(records, arena.carve(start))
		want = append(want, testRecord(int64(i), props))
	}
	for i := range records {
		require.Equal(t, want[i], records[i], "record %d", i)
		assert.Equal(t, len(records[i]), cap(records[i]), "appending to a carved record cannot reach the next")
	}
	require.Greater(t, cap(arena.b), maxArenaKept)
	arena.reset()
	assert.Zero(t, cap(arena.b), "a buffer past maxArenaKept is not kept")
	arena.b = append(arena.b, make([]byte, 100)...)
	arena.reset()
	assert.Equal(t, 0, len(arena.b))
	assert.NotZero(t, cap(arena.b), "a small buffer is kept for the next call")
}
