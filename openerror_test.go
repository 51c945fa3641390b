package tabula

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A directory another process holds is refused in the user's terms: which process, and what
// to do, without the store's internals.
func TestOpenADirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	_, err = Open(dir, nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrInternal))
	assert.Contains(t, err.Error(), fmt.Sprintf("the data directory %q is in use by process %d", dir, os.Getpid()))
	assert.Contains(t, err.Error(), "stop that process, or open another directory")
	assert.NotContains(t, err.Error(), "Badger")
}
