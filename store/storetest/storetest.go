package storetest

import (
	"testing"

	"github.com/stint-dev/stint/store"
)

// Run runs the whole conformance suite against the stores newStore opens.
//
// newStore must return a Store on a fresh, empty database and clean it up
// when t ends (t.Cleanup). The suite calls it once per subtest, and once per
// rapid check in the state-machine test; it may Close a store before t ends,
// so the cleanup must tolerate a second Close. Subtests run in parallel, so
// newStore must be safe to call from several goroutines.
//
// In -short mode the concurrency and random-walk tests use fewer jobs.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	groups := []struct {
		name string
		fn   func(*testing.T, func(*testing.T) store.Store)
	}{
		{"Transitions", testTransitions},
		{"Rejections", testRejections},
		{"OutsideTable", testOutsideTable},
		{"Fencing", testFencing},
		{"Idempotency", testIdempotency},
		{"Dedupe", testDedupe},
		{"Invariants", testInvariants},
		{"Claim", testClaim},
		{"Reads", testReads},
		{"Verify", testVerify},
		{"StoreClock", testStoreClock},
		{"Inputs", testInputs},
		{"LeaseNotices", testLeaseNotices},
		{"SubMicrosecond", testSubMicrosecond},
		{"Retain", testRetain},
		{"Leader", testLeader},
		{"Concurrency", testConcurrency},
		{"Races", testRaces},
		{"RandomWalk", testRandomWalk},
		{"StateMachine", testStateMachine},
		{"Runs", testRuns},
		{"Outbox", testOutbox},
		{"RunWalk", testRunWalk},
		{"Steps", testSteps},
		{"History", testHistory},
		{"Search", testSearch},
		{"ScheduleTick", testScheduleTick},
		{"Differential", testDifferential},
		{"Batches", testBatches},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.fn(t, newStore)
		})
	}
}
