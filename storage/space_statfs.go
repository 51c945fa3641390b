//go:build linux || darwin || freebsd || openbsd

package storage

import "syscall"

// freeSpaceOf asks the file system how many bytes an unprivileged process may still write
// in dir.
func freeSpaceOf(dir string) func() (uint64, error) {
	return func() (uint64, error) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			return 0, err
		}
		return uint64(st.Bavail) * uint64(st.Bsize), nil
	}
}
