//go:build !(linux || darwin || freebsd || openbsd)

package storage

// freeSpaceOf returns nil where the store has no portable way to ask for free space: the
// disk is then not watched.
func freeSpaceOf(string) func() (uint64, error) { return nil }
