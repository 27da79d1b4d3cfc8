package stinttest

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stint-dev/stint"
)

// ReplayGolden replays handler h against the golden file at path (made by
// `stint jobs export-steps ID > path`) with the job's recorded seed, and
// fails t at the first divergence: a step asked for under another name or
// kind at a place, a step the golden job never recorded, fewer steps, or
// another final result. Keep golden files of jobs in flight in the
// repository: a change to a handler that would break them fails `go test`.
func ReplayGolden(t testing.TB, path string, h stint.Handler) {
	t.Helper()
	if err := ReplayGoldenErr(path, h); err != nil {
		t.Errorf("%s: %v", path, err)
	}
}

// ReplayGoldenErr is ReplayGolden returning the divergence (a
// *stint.Divergence) instead of failing a test.
func ReplayGoldenErr(path string, h stint.Handler) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var g stint.Golden
	if err := json.Unmarshal(b, &g); err != nil {
		return err
	}
	return stint.ReplayGolden(context.Background(), g, h)
}
