package storage

import (
	"math"

	"github.com/tabuladb/tabula/internal/badgertuning"
)

// MinMemoryBudget is the smallest Options.MemoryBudget a store honours; a smaller one is
// raised to it (internal/badgertuning says why).
const MinMemoryBudget = badgertuning.MinMemoryBudget

// MaxUpdateBytes is the most an Update may write: Badger refuses a transaction whose entries
// in the LSM tree (keys, and values under the value threshold) exceed 15% of a memtable
// (ErrTooLarge), 2.4 MiB at the default budget. Writers of large batches of their own (an
// import's staging) size them by it; the service's transactions fit at every budget (see
// badgertuning.Options). In memory there is no such limit.
func (d *DB) MaxUpdateBytes() int64 {
	if d.mem != nil {
		return math.MaxInt64
	}
	return badgertuning.TxnLimit(d.bo)
}
