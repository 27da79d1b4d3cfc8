// Package storetest is the conformance suite every stint storage backend
// runs: the one definition of what a [store.Store] must do.
//
// A backend's test calls [Run] with a factory that opens a fresh, empty
// database:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := sqlite.OpenStore(t.Context(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite talks to the Store only, never to SQL. It passes an explicit Now
// to every call (but those that test the store's own clock), so lease
// expiry, run_at, cancel deadlines and timeouts are reached by moving a
// clock value instead of sleeping. It covers every row of
// [lifecycle.Table] (generated from the table, so a new row cannot be
// forgotten), every kind of rejected request and that it changes nothing,
// lease fencing, request-id and dedupe idempotency, the lifecycle invariants
// LI-1 to LI-5, claim order and filters, reads, Verify, retention, leader
// election, the store's own clock, 64 concurrent claimers, races between
// the reaper, cancels and owners, random legal walks checked by Verify, and
// a pgregory.net/rapid state-machine test against a reference model.
//
// The random walk's seed is logged; STORETEST_SEED replays it. The rapid
// test takes rapid's flags (-rapid.checks, -rapid.steps, -rapid.seed).
package storetest
