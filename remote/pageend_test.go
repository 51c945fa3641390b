package remote

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tabuladb/tabula"
)

func TestPageEndFromTheResponse(t *testing.T) {
	next := tabula.Continuation{NextPartitionKey: "1!4!YQ--"}
	for _, tc := range []struct {
		name   string
		top, n int
		next   tabula.Continuation
		want   tabula.PageEnd
	}{
		{"last page", 0, 3, tabula.Continuation{}, tabula.PageEndResults},
		{"last page, exactly top", 3, 3, tabula.Continuation{}, tabula.PageEndResults},
		{"full at top", 3, 3, next, tabula.PageEndTop},
		{"full at 1,000", 0, 1000, next, tabula.PageEndMaxEntities},
		{"top of 1,000", 1000, 1000, next, tabula.PageEndMaxEntities},
		{"short of top", 5, 2, next, tabula.PageEndUnknown},
		{"empty with a token", 0, 0, next, tabula.PageEndUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, pageEnd(tc.top, tc.n, tc.next))
		})
	}
}
