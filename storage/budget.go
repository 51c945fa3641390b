package storage

import "github.com/tabuladb/tabula/internal/badgertuning"

// MinMemoryBudget is the smallest Options.MemoryBudget a store honours; a smaller one is
// raised to it (internal/badgertuning says why).
const MinMemoryBudget = badgertuning.MinMemoryBudget
