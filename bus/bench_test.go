package bus

import (
	"flag"
	"testing"

	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
)

var benchEventWorkers = flag.Int("bus.event-workers", 0, "outbox workers publishing events in TestBench (0: the default)")

// The bench runs end to end (a few jobs; the figures come from stint bench bus).
func TestBench(t *testing.T) {
	t.Parallel()
	needNATS(t, machineNATS)
	rep, err := Bench(t.Context(), sqliteStore(t, store.Options{}), BenchConfig{URL: machineNATS, Jobs: *benchJobs,
		Outbox: outbox.Config{BatchWorkers: *benchEventWorkers}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	if rep.Jobs != *benchJobs || rep.JobsPerS <= 0 || rep.EndToEndP99 < rep.EndToEndP50 {
		t.Fatalf("report %+v", rep)
	}
}
