package tabula

import (
	"encoding/binary"
	"strings"

	"github.com/tabuladb/tabula/storage"
)

// The store's whole key space. Every key starts with one of these bytes; esc is storage's
// order-preserving part encoding (AppendPart), sep its separator (AppendSeparator), and
// tableID eight bytes, big-endian.
//
//	'e' | tableID | esc(PartitionKey) | sep | esc(RowKey)   an entity's record (record.go)
//	't' | lower(table name)                               a root-namespace table (catalog.go)
//	'n' | esc(namespace) | sep | lower(table name)        a table of another namespace
//	'a' | tableID                                         a table's stored access policies (acl.go)
//	'p' | esc(namespace)                                  a namespace's service properties
//	'd' | tableID                                         a deleted table's data, still to drop
//	'o' | esc(account)                                    the namespace an account's data is in (accounts.go)
//	'm' | name                                            DB metadata: the table-ID counter, the clock,
//	                                                      the format version (format.go)
//
// Table IDs are never reused, so deleting a table is one catalog write; its entities become
// unreachable at once and are dropped in the background. The root namespace keeps its
// catalog under 't', as before namespaces existed, and no namespace's range contains
// another's.
const (
	prefixEntity         = 'e'
	prefixTable          = 't'
	prefixNamespaceTable = 'n'
	prefixACL            = 'a'
	prefixProperties     = 'p'
	prefixDrop           = 'd'
	prefixOwner          = 'o'
	prefixMeta           = 'm'
)

var (
	nextTableIDKey = []byte{prefixMeta, 'n', 'e', 'x', 't', 'T', 'a', 'b', 'l', 'e', 'I', 'D'}
	clockKey       = []byte{prefixMeta, 'c', 'l', 'o', 'c', 'k'}
	formatKey      = []byte{prefixMeta, 'f', 'o', 'r', 'm', 'a', 't'}
)

// tablePrefix is the prefix of every entity key of a table.
func tablePrefix(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixEntity}, id)
}

// tableBounds are the lower (inclusive) and upper (exclusive) keys of a table's entities.
func tableBounds(id uint64) (lower, upper []byte) {
	return tablePrefix(id), tablePrefix(id + 1)
}

func entityKey(id uint64, pk, rk string) []byte {
	// Sized for the prefix, both parts and the separator; only an escaped NUL, which valid
	// keys never hold, would grow it.
	return appendEntityKey(make([]byte, 0, 11+len(pk)+len(rk)), id, pk, rk)
}

// appendEntityKey appends the key of an entity to dst.
func appendEntityKey(dst []byte, id uint64, pk, rk string) []byte {
	k := binary.BigEndian.AppendUint64(append(dst, prefixEntity), id)
	return storage.AppendPart(storage.AppendSeparator(storage.AppendPart(k, pk)), rk)
}

// decodeEntityKey returns the keys of an entity key of a known table.
func decodeEntityKey(key []byte) (pk, rk string, err error) {
	pkEnc, rkEnc, err := cutEntityKey(key)
	if err != nil {
		return "", "", err
	}
	return storage.DecodePart(pkEnc), storage.DecodePart(rkEnc), nil
}

// cutEntityKey returns the encoded keys of an entity key, undecoded.
func cutEntityKey(key []byte) (pk, rk []byte, err error) {
	if len(key) < 9 || key[0] != prefixEntity {
		return nil, nil, errCorrupt("entity key too short")
	}
	pk, rest, last, err := storage.CutPart(key[9:])
	if err != nil || last {
		return nil, nil, errCorrupt("entity key has no RowKey")
	}
	rk, _, last, err = storage.CutPart(rest)
	if err != nil || !last {
		return nil, nil, errCorrupt("entity key has extra parts")
	}
	return pk, rk, nil
}

// tableKey is a table's catalog key. Names are ASCII and case-insensitive.
func tableKey(name string) []byte {
	return append([]byte{prefixTable}, strings.ToLower(name)...)
}

func dropKey(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixDrop}, id)
}

func namespacePrefix(ns string) []byte {
	return storage.AppendSeparator(storage.AppendPart([]byte{prefixNamespaceTable}, ns))
}

// catalogKey is a table's catalog key in namespace ns.
func catalogKey(ns, name string) []byte {
	if ns == "" {
		return tableKey(name)
	}
	return append(namespacePrefix(ns), lowerASCII(name)...)
}

// catalogBounds are the lower (inclusive) and upper (exclusive) keys of namespace ns's
// catalog.
func catalogBounds(ns string) (lower, upper []byte) {
	if ns == "" {
		return []byte{prefixTable}, []byte{prefixTable + 1}
	}
	return namespacePrefix(ns), storage.AppendPartEnd(storage.AppendPart([]byte{prefixNamespaceTable}, ns))
}

func lowerASCII(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}

func aclKey(id uint64) []byte { return binary.BigEndian.AppendUint64([]byte{prefixACL}, id) }

func ownerKey(owner string) []byte { return storage.AppendPart([]byte{prefixOwner}, owner) }

func propertiesKey(ns string) []byte { return storage.AppendPart([]byte{prefixProperties}, ns) }
