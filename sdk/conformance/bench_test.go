package conformance_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
)

// TestBench measures each language's worker with a no-op handler against
// one `stint server` (SQLite): jobs/s and the worker process's CPU per
// job. It runs only with STINT_SDK_BENCH=N (jobs per language);
// STINT_SDK_BENCH_CONCURRENCY sets the worker's slots (default 100),
// STINT_SDK_BENCH_LANGS the languages (go,typescript,python by default);
// STINT_SDK_BENCH_PROFILE=DIR writes the TypeScript worker's CPU profile
// (node --cpu-prof) there, to open in Chrome's DevTools.
//
//	STINT_SDK_BENCH=20000 go test ./sdk/conformance -run TestBench -v
func TestBench(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("STINT_SDK_BENCH"))
	if n <= 0 {
		t.Skip("a benchmark: set STINT_SDK_BENCH=N to run it")
	}
	conc := os.Getenv("STINT_SDK_BENCH_CONCURRENCY")
	if conc == "" {
		conc = "100"
	}
	bin := stintBinary(t)
	langs := os.Getenv("STINT_SDK_BENCH_LANGS") // comma-separated; default all
	for _, r := range runners {
		if langs != "" && !slices.Contains(strings.Split(langs, ","), r.lang) {
			continue
		}
		t.Run(r.lang, func(t *testing.T) { // one at a time: they share the machine
			s := startServer(t, bin)
			for i := 0; i < n; i += 1000 {
				specs := make([]*stintv1.Spec, min(1000, n-i))
				for k := range specs {
					specs[k] = &stintv1.Spec{Kind: "noop", Queue: "bench"}
				}
				if _, err := s.jobs.EnqueueMany(t.Context(), connect.NewRequest(&stintv1.EnqueueManyRequest{Jobs: specs})); err != nil {
					t.Fatal(err)
				}
			}
			cmd := r.cmd(t)
			if dir := os.Getenv("STINT_SDK_BENCH_PROFILE"); dir != "" && r.lang == "typescript" {
				// NODE_OPTIONS may not carry --cpu-prof: the flags go before the script.
				cmd.Args = append([]string{cmd.Args[0], "--cpu-prof", "--cpu-prof-dir=" + dir}, cmd.Args[1:]...)
			}
			cmd.Env = append(cmd.Env, "STINT_BENCH="+strconv.Itoa(n), "STINT_CONCURRENCY="+conc)
			w := startWorker(t, cmd, s, "bench") // from "ready": the runtime's start-up is not the worker's
			began, cpu0 := time.Now(), cpuOf(t, w.cmd.Process.Pid)
			w.expectWithin(t, "benched", 20*time.Minute)
			took := time.Since(began)
			cpu := cpuOf(t, w.cmd.Process.Pid) - cpu0
			t.Logf("%-10s %d jobs, %s slots: %6.0f jobs/s, worker CPU %.1f µs/job (%.2fs)", r.lang, n, conc, float64(n)/took.Seconds(),
				float64(cpu.Microseconds())/float64(n), cpu.Seconds())
			fmt.Printf("bench %s jobs=%d slots=%s jobs_per_s=%.0f cpu_us_per_job=%.1f\n", r.lang, n, conc, float64(n)/took.Seconds(), float64(cpu.Microseconds())/float64(n))
		})
	}
}

// cpuOf is a process's user and system CPU time so far (Linux /proc).
func cpuOf(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat, in clock ticks
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100
}
