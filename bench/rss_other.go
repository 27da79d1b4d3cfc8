//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package bench

// maxRSS is unavailable here.
func maxRSS() uint64 { return 0 }
