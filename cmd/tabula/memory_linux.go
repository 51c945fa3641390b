package main

import "golang.org/x/sys/unix"

// machineMemory is the machine's physical memory in bytes, 0 if unknown.
func machineMemory() uint64 {
	var info unix.Sysinfo_t
	if unix.Sysinfo(&info) != nil {
		return 0
	}
	return uint64(info.Totalram) * uint64(info.Unit)
}
