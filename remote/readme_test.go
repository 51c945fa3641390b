package remote_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMESnippet keeps README.md's snippet for this package compiled and run: it must be
// the text between the README markers of example_test.go, which Example runs.
func TestREADMESnippet(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(readme), "\n## Moving from embedded to a storage account\n")
	require.True(t, found, "README.md has the section")
	_, block, found := strings.Cut(section, "```go\n")
	require.True(t, found, "the section has a Go snippet")
	snippet, _, found := strings.Cut(block, "```")
	require.True(t, found, "the snippet ends")

	source, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	_, code, found := strings.Cut(string(source), "// README: begin")
	require.True(t, found)
	_, code, _ = strings.Cut(code, "\n\n")
	code, _, found = strings.Cut(code, "\n// README: end")
	require.True(t, found)
	require.Equal(t, code, snippet, "README.md's snippet differs from example_test.go; copy it over")
}
