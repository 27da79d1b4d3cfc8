package cli_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBenchBus runs a small bus bench through the command line against the
// machine's NATS, with a CPU profile. It checks the report, never a speed.
// Not parallel: the CPU profiler is one per process, and TestBench's
// profile runs beside the parallel tests.
func TestBenchBus(t *testing.T) {
	if c, err := net.DialTimeout("tcp", "127.0.0.1:4222", 2*time.Second); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("NATS is not on 127.0.0.1:4222 (CI starts it): %v", err)
		}
		t.Skipf("NATS is not on 127.0.0.1:4222: %v", err)
	} else {
		_ = c.Close()
	}
	profile := filepath.Join(t.TempDir(), "cpu.out")
	out := stint(t, newDB(t), "bench", "bus", "--jobs", "50", "--json", "--cpuprofile", profile).ok(t).stdout
	var rep struct {
		Jobs     int     `json:"jobs"`
		JobsPerS float64 `json:"jobs_per_s"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench bus --json: %v\n%s", err, out)
	}
	if rep.Jobs != 50 || rep.JobsPerS <= 0 {
		t.Fatalf("report %s", out)
	}
	if st, err := os.Stat(profile); err != nil || st.Size() == 0 {
		t.Fatalf("no CPU profile in %s: %v", profile, err)
	}
}
