package tabula

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula/internal/wire"
)

// TestETagCacheMatchesAppendETag holds the typed scan's ETag formatting to the one every
// other path uses, across seconds, within one, and with no fraction at all.
func TestETagCacheMatchesAppendETag(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cache := etagCache{second: -1}
	ticks := ticksOf(minDateTime)
	for range 10_000 {
		switch r.IntN(4) {
		case 0:
			ticks = r.Int64N(ticksOf(maxDateTime) + 1)
		case 1:
			ticks -= ticks % ticksPerSecond // a whole second
		case 2:
			ticks += r.Int64N(100) // the same second, mostly
		}
		require.Equal(t, string(wire.AppendETag(nil, ticks)), string(cache.appendETag([]byte("x"), ticks)[1:]), "ticks %d", ticks)
	}
}
