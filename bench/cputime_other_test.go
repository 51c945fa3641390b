//go:build !linux

package bench

import "time"

// threadCPU reports that this system's thread CPU clock is not read here; the wire
// benchmarks then measure wall time only.
func threadCPU() (time.Duration, bool) { return 0, false }

// processCPU reports that the process's CPU time is not read here; the core benchmarks then
// report wall time only.
func processCPU() (time.Duration, bool) { return 0, false }
