package tabula

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keySet finds a repeat wherever it is: among keys in order (searched), among those out of
// order (the map), and a key in order again after some out of order.
func TestKeySet(t *testing.T) {
	for _, c := range []struct {
		name  string
		keys  []string
		twice int // the index of the first repeat, -1 for none
	}{
		{"in order", []string{"a", "b", "c"}, -1},
		{"the last again", []string{"a", "b", "b"}, 2},
		{"an early one again", []string{"a", "b", "c", "a"}, 3},
		{"out of order, no repeat", []string{"b", "d", "a", "c", "e"}, -1},
		{"a repeat of one out of order", []string{"b", "d", "a", "c", "a"}, 4},
		{"a repeat of one in order after", []string{"b", "d", "a", "e", "e"}, 4},
		{"a prefix", []string{"ab", "abc", "a"}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s keySet
			first := -1
			for i, k := range c.keys {
				if s.add([]byte(k)) && first < 0 {
					first = i
				}
			}
			assert.Equal(t, c.twice, first)
			s.reset()
			assert.False(t, s.add([]byte(c.keys[len(c.keys)-1])), "reset empties it")
		})
	}
}

// CheckImport refuses a repeat in a table in key order, naming its line, as the import
// does; the same keys in another table are no repeat.
func TestCheckImportRepeat(t *testing.T) {
	ctx := context.Background()
	const n = 300
	lines := strings.SplitAfter(bulkFile(n, inOrder), "\n")
	lines[2+n-1] = lines[2+10]
	_, err := CheckImport(ctx, strings.NewReader(strings.Join(lines, "")), nil)
	var ie *ImportError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 2+n, ie.Line)
	assert.Contains(t, err.Error(), "is in the table twice")

	p, err := CheckImport(ctx, strings.NewReader(permutedFile(n, shuffled(n))), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(n), p.Entities)
	two := bulkFile(n, inOrder)
	two = strings.Replace(two, `{"@tabula":"eof","tables":1,"entities":300}`, strings.ReplaceAll(strings.Join(strings.SplitAfter(two, "\n")[1:2+n+1], ""), `"Bulk"`, `"Other"`)+`{"@tabula":"eof","tables":2,"entities":600}`, 1)
	p, err = CheckImport(ctx, strings.NewReader(two), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(2*n), p.Entities)
}
