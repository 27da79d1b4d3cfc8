package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stint-dev/stint/cli"
)

// TestBench runs a small benchmark through the command line. It checks the
// report's consistency, never a speed.
func TestBench(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	profile := filepath.Join(t.TempDir(), "cpu.out")
	out := stint(t, db, "bench", "--jobs", "300", "--batch", "100", "--latency-samples", "10", "--cancel-samples", "3", "--json", "--cpuprofile", profile).ok(t).stdout
	var rep struct {
		Backend  string `json:"backend"`
		Database string `json:"database"`
		Jobs     int    `json:"jobs"`
		Enqueue  struct {
			Jobs      int     `json:"jobs"`
			PerSecond float64 `json:"jobs_per_second"`
			Batch     int     `json:"batch"`
		} `json:"enqueue"`
		Work struct {
			PerSecond float64 `json:"jobs_per_second"`
		} `json:"work"`
		Pickup struct {
			Samples int     `json:"samples"`
			P99MS   float64 `json:"p99_ms"`
		} `json:"pickup"`
		Cancel struct {
			Samples int `json:"samples"`
		} `json:"cancel"`
		Check struct {
			OK        bool `json:"ok"`
			Succeeded int  `json:"succeeded"`
		} `json:"check"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	if rep.Backend != "sqlite" || !strings.Contains(rep.Database, db) || rep.Jobs != 300 || rep.Enqueue.Jobs != 300 ||
		rep.Enqueue.Batch != 100 || rep.Enqueue.PerSecond <= 0 || rep.Work.PerSecond <= 0 || rep.Pickup.Samples != 10 || rep.Cancel.Samples != 3 ||
		!rep.Check.OK || rep.Check.Succeeded != 310 {
		t.Errorf("report %+v", rep)
	}
	if fi, err := os.Stat(profile); err != nil || fi.Size() == 0 {
		t.Errorf("no CPU profile in %s (%v)", profile, err)
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("the database named by --db is gone: %v", err)
	}
}

func TestBenchHuman(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	r := stintEnv(t, envWithTmp(tmp), "bench", "--jobs", "50", "--latency-samples", "5", "--cancel-samples", "0").ok(t)
	for _, want := range []string{"stint bench: 50 no-op jobs on SQLite", "enqueue  ", "work  ", "pickup  ", "p99", "memory  ", "check    ok: 55 jobs succeeded exactly once"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.stdout)
		}
	}
	// The temporary database is removed.
	if left, _ := filepath.Glob(filepath.Join(tmp, "stint-bench-*")); len(left) > 0 {
		t.Errorf("bench left %v behind", left)
	}
}

func TestBenchBadInput(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"existing database", []string{"--db", s.db, "bench"}, "bench needs a fresh database, and " + s.db + " exists"},
		{"schema", []string{"--schema", "x", "bench"}, "bench makes a fresh schema of its own"},
		{"jobs zero", []string{"bench", "--jobs", "0"}, "expected an integer from 1 to"},
		{"batch too large", []string{"bench", "--batch", "10001"}, "expected an integer from 1 to 10000"},
		{"profile in a missing directory", []string{"bench", "--cpuprofile", "/no/such/dir/cpu.out"}, "--cpuprofile"},
		{"bad database URL", []string{"--database-url", "postgres://a b", "bench"}, "bad --database-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stintEnv(t, envWithTmp(t.TempDir()), tt.args...).usageError(t, tt.want)
		})
	}
}

// envWithTmp is an empty environment but for TMPDIR.
func envWithTmp(dir string) cli.Env {
	return cli.Env{Getenv: func(k string) string {
		if k == "TMPDIR" {
			return dir
		}
		return ""
	}}
}
