package tabula

import (
	"encoding/binary"
	"strings"

	"github.com/tabuladb/tabula/storage"
)

// The store's key space (see ARCHITECTURE.md):
//
//	'e' | tableID | PartitionKey | 0x00 0x01 | RowKey   entity record
//	't' | lower(table name)                             table record
//	'd' | tableID                                       data of a deleted table, still to drop
//	'm' | name                                          DB metadata (table ID counter, clock)
//
// Table IDs are never reused, so deleting a table is one catalog write; its entities become
// unreachable at once and are dropped in the background.
const (
	prefixEntity = 'e'
	prefixTable  = 't'
	prefixDrop   = 'd'
	prefixMeta   = 'm'
)

var (
	nextTableIDKey = []byte{prefixMeta, 'n', 'e', 'x', 't', 'T', 'a', 'b', 'l', 'e', 'I', 'D'}
	clockKey       = []byte{prefixMeta, 'c', 'l', 'o', 'c', 'k'}
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
	k := binary.BigEndian.AppendUint64(append(make([]byte, 0, 11+len(pk)+len(rk)), prefixEntity), id)
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
