package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The walk-through must keep running as the engine changes, in memory and on disk (twice,
// so the reopen path is exercised too).
func TestWalkThrough(t *testing.T) {
	require.NoError(t, run(context.Background(), ""))
	dir := t.TempDir()
	require.NoError(t, run(context.Background(), dir))
	require.NoError(t, run(context.Background(), dir))
}
