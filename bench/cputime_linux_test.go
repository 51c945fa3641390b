//go:build linux

package bench

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU is the CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID), ok
// false if the clock cannot be read. Callers lock their goroutine to its thread.
func threadCPU() (time.Duration, bool) {
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// processCPU is the CPU time the whole process has used, on every thread
// (CLOCK_PROCESS_CPUTIME_ID), ok false if the clock cannot be read.
func processCPU() (time.Duration, bool) {
	const clockProcessCPUTime = 2
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockProcessCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
