//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package bench

import "time"

// processCPU is unavailable here.
func processCPU() time.Duration { return 0 }
