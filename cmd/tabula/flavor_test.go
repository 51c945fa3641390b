package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// --flavor picks Options.Flavor; the default is the Table service's, an unknown name is an
// error, and --help says what the Cosmos flavour enforces.
func TestFlavorFlag(t *testing.T) {
	noEnv := func(string) string { return "" }
	cfg, err := parseServe(nil, noEnv, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, tabula.FlavorTable, cfg.db.Flavor)
	cfg, err = parseServe([]string{"--flavor", "cosmos"}, noEnv, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, tabula.FlavorCosmos, cfg.db.Flavor)
	cfg, err = parseServe([]string{"--flavor=table"}, noEnv, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, tabula.FlavorTable, cfg.db.Flavor)
	_, err = parseServe([]string{"--flavor", "mongo"}, noEnv, io.Discard)
	assert.ErrorContains(t, err, `unknown flavor "mongo"`)

	var out bytes.Buffer
	_, err = parseServe([]string{"--help"}, noEnv, &out)
	require.ErrorIs(t, err, errHelp)
	assert.Contains(t, out.String(), "\n  --flavor name\n")
	assert.Contains(t, out.String(), "RowKey at most 255 bytes")
}
