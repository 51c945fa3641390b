package wire

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTokens(t *testing.T) {
	// The service's own examples (REST docs: "Querying tables and entities").
	assert.Equal(t, "1!12!Y29udFRva2Vu", EncodeToken("contToken"))
	assert.Equal(t, "1!4!MQ--", EncodeToken("1"))
	assert.Equal(t, "1!8!U21pdGg-", EncodeToken("Smith"))
	for _, s := range []string{"", "a", "\U0001F600 key", strings.Repeat("k", 1024), "\x00\xff"} {
		got, err := DecodeToken(EncodeToken(s))
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	for token, why := range map[string]error{
		"nonsense":     errTokenPrefix,
		"2!4!MQ--":     errTokenPrefix,
		"1!5!MQ--":     errTokenLength,
		"1!x!MQ--":     errTokenLength,
		"1!4MQ--":      errTokenLength,
		"1!4!M***":     errTokenBase64,
		"1!3!MQ-":      errTokenBase64,
		"1!4!MQ==":     nil, // padding written as it is reads too
		"1!0!":         nil,
		"1!4!U21p":     nil,
		"1!8!U21pdGg-": nil,
	} {
		_, err := DecodeToken(token)
		assert.Equal(t, why, err, "%s", token)
	}
}
