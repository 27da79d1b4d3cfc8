package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchSoak runs a soak of a second and a half through the command
// line: it completes, reports every interval and draws the chart. It never
// asserts a speed.
func TestBenchSoak(t *testing.T) {
	t.Parallel()
	chart := filepath.Join(t.TempDir(), "soak.svg")
	out := stint(t, newDB(t), "bench", "soak", "--rate", "100", "--duration", "1500ms", "--interval", "250ms", "--chart", chart, "--json").ok(t).stdout
	var rep struct {
		Backend   string            `json:"backend"`
		Intervals []json.RawMessage `json:"intervals"`
		Summary   struct {
			FirstPerSec float64 `json:"first_third_jobs_per_second"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Backend != "sqlite" || len(rep.Intervals) == 0 {
		t.Fatalf("--json printed %q (%v)", out, err)
	}
	if b, err := os.ReadFile(chart); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("no SVG chart in %s (%v)", chart, err)
	}
}

func TestBenchSoakBadInput(t *testing.T) {
	t.Parallel()
	stint(t, newDB(t), "bench", "soak", "--chart", "x.gif").usageError(t, ".png or .svg")
	stint(t, newDB(t), "bench", "soak", "--duration", "1s", "--interval", "1s").usageError(t, "three intervals")
	stint(t, newDB(t), "bench", "soak", "--rate", "0").usageError(t, "--rate")
}
