package wire

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// EncodeToken writes a continuation token in the service's form: "1!", the length of the
// encoded part, "!", then the key's UTF-8 bytes in base64 with its '=' padding written as
// '-'. The service's tokens for NextPartitionKey, NextRowKey and NextTableName all take it,
// so clients see the shape they see from Azure.
func EncodeToken(key string) string {
	b64 := strings.ReplaceAll(base64.StdEncoding.EncodeToString([]byte(key)), "=", "-")
	return "1!" + strconv.Itoa(len(b64)) + "!" + b64
}

// Why DecodeToken refuses a token; callers name the field and wrap them in their errors.
var (
	errTokenPrefix = errors.New(`it does not start with "1!"`)
	errTokenLength = errors.New("its length does not match")
	errTokenBase64 = errors.New("it is not base64")
)

// DecodeToken reads a token EncodeToken wrote and returns its key, or an error saying why
// the token is not of that form. The key may be any bytes; the caller checks it is one.
func DecodeToken(token string) (string, error) {
	rest, ok := strings.CutPrefix(token, "1!")
	if !ok {
		return "", errTokenPrefix
	}
	length, b64, ok := strings.Cut(rest, "!")
	if n, err := strconv.Atoi(length); !ok || err != nil || n != len(b64) {
		return "", errTokenLength
	}
	raw, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(b64, "-", "="))
	if err != nil {
		return "", errTokenBase64
	}
	return string(raw), nil
}
