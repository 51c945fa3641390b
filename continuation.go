package tabula

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// Continuation tokens use the service's form: "1!" + the length of the encoded part + "!" +
// the key's UTF-8 bytes in base64 with '=' padding written as '-'.
func encodeToken(key string) string {
	b64 := strings.ReplaceAll(base64.StdEncoding.EncodeToString([]byte(key)), "=", "-")
	return "1!" + strconv.Itoa(len(b64)) + "!" + b64
}

func decodeToken(field, token string) (string, error) {
	bad := func(why string) (string, error) {
		return "", ErrInvalidInput.with("continuation token %s %q is malformed: %s", field, token, why)
	}
	rest, ok := strings.CutPrefix(token, "1!")
	if !ok {
		return bad(`it does not start with "1!"`)
	}
	length, b64, ok := strings.Cut(rest, "!")
	n, err := strconv.Atoi(length)
	if !ok || err != nil || n != len(b64) {
		return bad("its length does not match")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(b64, "-", "="))
	if err != nil {
		return bad("it is not base64")
	}
	key := string(raw)
	if _, err := validateKey(field, key); err != nil {
		return bad("it does not hold a valid key")
	}
	return key, nil
}

// decodeContinuation reads both tokens; a missing NextRowKey means the start of the partition.
func decodeContinuation(c Continuation) (pk, rk string, err error) {
	if c.NextPartitionKey == "" {
		return "", "", ErrInvalidInput.with("continuation has a NextRowKey but no NextPartitionKey")
	}
	if pk, err = decodeToken("NextPartitionKey", c.NextPartitionKey); err != nil {
		return "", "", err
	}
	if c.NextRowKey != "" {
		if rk, err = decodeToken("NextRowKey", c.NextRowKey); err != nil {
			return "", "", err
		}
	}
	return pk, rk, nil
}
