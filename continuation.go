package tabula

import "github.com/tabuladb/tabula/internal/wire"

// Continuation tokens are in the service's form (wire.EncodeToken) and hold a key.
func decodeToken(field, token string) (string, error) {
	bad := func(why string) (string, error) {
		return "", ErrInvalidInput.WithDetail("continuation token %s %q is malformed: %s", field, token, why)
	}
	key, err := wire.DecodeToken(token)
	if err != nil {
		return bad(err.Error())
	}
	if _, err := validateKey(field, key); err != nil {
		return bad("it does not hold a valid key")
	}
	return key, nil
}

// decodeContinuation reads both tokens; a missing NextRowKey means the start of the partition.
func decodeContinuation(c Continuation) (pk, rk string, err error) {
	if c.NextPartitionKey == "" {
		return "", "", ErrInvalidInput.WithDetail("continuation has a NextRowKey but no NextPartitionKey")
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
