package storage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/dgraph-io/badger/v4/y"
)

// logEntryBytes encodes one entry as Badger writes it to a log: flags, user meta, the
// lengths and expiry as varints, key, value, and the CRC-32C of all that.
func logEntryBytes(flags byte, key, value []byte) []byte {
	b := []byte{flags, 0}
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = binary.AppendUvarint(b, uint64(len(value)))
	b = binary.AppendUvarint(b, 0)
	b = append(append(b, key...), value...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, y.CastagnoliCrcTable))
}

// FuzzMemtableLog feeds arbitrary bytes to what reads a memtable log on its own (Open's
// inspection, salvage's repair): nothing panics, every whole entry it keeps passes its
// checksum, and a log of whole transactions is kept whole.
func FuzzMemtableLog(f *testing.F) {
	header := make([]byte, logHeaderSize)
	txn := append(logEntryBytes(bitTxn, []byte("key1\x00\x00\x00\x00\x00\x00\x00\x01"), []byte("v1")),
		logEntryBytes(bitFinTxn, []byte("!badger!txn\x00\x00\x00\x00\x00\x00\x00\x01"), []byte("1"))...)
	f.Add(append(append([]byte(nil), header...), txn...))
	f.Add(append(append(append([]byte(nil), header...), txn...), txn...))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0x41}, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		end := logEntriesEnd(data, min(logHeaderSize, len(data)))
		if end > len(data) {
			t.Fatalf("entries end at %d, past the log's %d bytes", end, len(data))
		}
		wholeEntryAfter(data, end)
		if len(data) < logHeaderSize {
			return
		}
		kept, _ := wholeTransactions(data)
		if !bytes.Equal(kept[:logHeaderSize], data[:logHeaderSize]) {
			t.Fatal("the header is not kept")
		}
		for off := logHeaderSize; off < len(kept); {
			n := logEntry(kept, off)
			if n == 0 {
				t.Fatalf("kept bytes at %d are not a whole entry", off)
			}
			off += n
		}
		if logEntriesEnd(data, logHeaderSize) == len(data) && len(data) > logHeaderSize &&
			data[len(data)-1] != 0 && !bytes.Equal(kept, data) && lastIsFin(data) {
			t.Fatal("a log of whole transactions lost some")
		}
	})
}

// lastIsFin says the log's entries end with a transaction's end marker.
func lastIsFin(data []byte) bool {
	off, last := logHeaderSize, byte(0)
	for off < len(data) {
		n := logEntry(data, off)
		if n == 0 {
			return false
		}
		last = data[off]
		off += n
	}
	return last&bitFinTxn != 0
}
