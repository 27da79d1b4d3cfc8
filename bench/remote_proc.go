package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of the CPU times in /proc/PID/stat (USER_HZ), 100
// on every Linux the project runs on.
const clockTicks = 100

// ProcCPU returns the CPU time (user and system) process pid has used, read
// from /proc/PID/stat: Linux only.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: read the CPU time of process %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces: the fields after it
	// start past its closing parenthesis; utime and stime are fields 14, 15.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("bench: /proc/%d/stat has %d fields after the name, want 13 or more", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
