//go:build unix

package bench

import (
	"io/fs"
	"syscall"
)

// allocated is the disk space a file takes: its allocated blocks, not its apparent size.
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
