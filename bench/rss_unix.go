//go:build linux || darwin || freebsd || netbsd || openbsd

package bench

import (
	"runtime"
	"syscall"
)

// maxRSS returns the process's peak resident set size in bytes.
func maxRSS() uint64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return uint64(ru.Maxrss) // bytes on Darwin
	}
	return uint64(ru.Maxrss) * 1024 // kilobytes elsewhere
}
