//go:build !linux

package tabula

import "time"

// processCPU is not measured here: the benchmarks report no CPU time.
func processCPU() time.Duration { return 0 }
