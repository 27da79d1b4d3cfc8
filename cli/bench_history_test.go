package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// TestBenchHistory runs the history bench small through the command line on
// PostgreSQL: it completes, reports a point a simulated hour, and the
// history it ends with is within about two partitions' worth. It never
// asserts a speed.
func TestBenchHistory(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	out := stintEnv(t, cli.Env{}, "--database-url", url, "bench", "history", "--jobs", "6000", "--per-hour", "2000",
		"--batch", "500", "--maintain", "5m", "--json").ok(t).stdout
	var rep struct {
		Jobs   int               `json:"jobs"`
		Points []json.RawMessage `json:"points"`
		Ratio  float64           `json:"ratio"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Jobs != 6000 || len(rep.Points) < 3 {
		t.Fatalf("--json printed %q (%v)", out, err)
	}
	if rep.Ratio < 1 || rep.Ratio > 2.5 {
		t.Errorf("history ends at %.2f partitions' worth, want about 2 at most", rep.Ratio)
	}
}

func TestBenchHistoryBadInput(t *testing.T) {
	t.Parallel()
	stint(t, newDB(t), "bench", "history").usageError(t, "--database-url")
	stintEnv(t, cli.Env{}, "--database-url", "postgres://127.0.0.1:1/x", "bench", "history", "--partition", "30m").usageError(t, "--partition")
}
