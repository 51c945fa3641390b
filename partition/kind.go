package partition

import (
	"strconv"
	"strings"
)

// Kind is the kind of operation being admitted. Rate limits count entities
// whatever the kind; the kind matters to fault injection, which can be aimed
// at some kinds only (for example only writes, to test a client's insert
// retry path while its reads stay clean).
type Kind uint8

// Operation kinds, one per service operation the root package performs.
const (
	KindGet             Kind = iota // point query: one PartitionKey and RowKey
	KindQuery                       // query page (any plan other than a point)
	KindInsert                      // Insert Entity
	KindReplace                     // Update Entity (PUT with If-Match)
	KindMerge                       // Merge Entity (MERGE with If-Match)
	KindInsertOrReplace             // Insert Or Replace Entity
	KindInsertOrMerge               // Insert Or Merge Entity
	KindDelete                      // Delete Entity
	KindBatch                       // entity group transaction
	KindCreateTable                 // Create Table
	KindDeleteTable                 // Delete Table
	KindQueryTables                 // Query Tables
	numKinds
)

var kindNames = [numKinds]string{
	KindGet:             "get",
	KindQuery:           "query",
	KindInsert:          "insert",
	KindReplace:         "replace",
	KindMerge:           "merge",
	KindInsertOrReplace: "insert-or-replace",
	KindInsertOrMerge:   "insert-or-merge",
	KindDelete:          "delete",
	KindBatch:           "batch",
	KindCreateTable:     "create-table",
	KindDeleteTable:     "delete-table",
	KindQueryTables:     "query-tables",
}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// KindSet is a set of operation kinds. The zero KindSet, where a set of kinds
// is configured, means every kind.
type KindSet uint32

// AllKinds holds every kind.
const AllKinds KindSet = 1<<numKinds - 1

// WriteKinds holds the kinds that write entities.
const WriteKinds = KindSet(1<<KindInsert | 1<<KindReplace | 1<<KindMerge |
	1<<KindInsertOrReplace | 1<<KindInsertOrMerge | 1<<KindDelete | 1<<KindBatch)

// ReadKinds holds the kinds that read entities.
const ReadKinds = KindSet(1<<KindGet | 1<<KindQuery)

// Kinds returns the set holding the given kinds.
func Kinds(kinds ...Kind) KindSet {
	var s KindSet
	for _, k := range kinds {
		if k < numKinds {
			s |= 1 << k
		}
	}
	return s
}

// Has reports whether k is in s.
func (s KindSet) Has(k Kind) bool { return k < numKinds && s&(1<<k) != 0 }

func (s KindSet) String() string {
	if s&AllKinds == AllKinds {
		return "all"
	}
	var parts []string
	for k := Kind(0); k < numKinds; k++ {
		if s.Has(k) {
			parts = append(parts, k.String())
		}
	}
	return strings.Join(parts, ",")
}
