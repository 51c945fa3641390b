//go:build linux

package tabula

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, user and system: a measure of a
// benchmark's work that other processes on a shared machine move far less than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
