//go:build !unix

package bench

import "io/fs"

// allocated is the disk space a file takes; without block counts, its apparent size.
func allocated(info fs.FileInfo) int64 { return info.Size() }
