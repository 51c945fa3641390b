//go:build !linux && !darwin

package main

// machineMemory is the machine's physical memory in bytes, 0 if unknown: here (Windows among
// others) it is not read, and --memory is bounded below only.
func machineMemory() uint64 { return 0 }
