package dispatch_test

import (
	"testing"
	"time"

	"github.com/stint-dev/stint/clock"
)

// deaf is a store whose wake-ups never come: SQLite's listener may hear
// the test's enqueue after the dispatcher subscribed, which would make the
// line undrained at a moment the test cannot know.
type deaf struct{ *many }

func (deaf) Wakeups() (<-chan string, func()) { return nil, func() {} }

// TestClaimNowSharesAClaim: claims that do not wait (ClaimNow, a worker's
// CompleteAndClaim) and arrive while a claim of their line runs join the
// line and are served together by one group claim; one that the group
// claim leaves short is answered with nothing rather than kept waiting;
// and on a drained line a ClaimNow is the store's claim, at once.
func TestClaimNowSharesAClaim(t *testing.T) {
	t.Parallel()
	s := &deaf{newMany(t)}
	d := newDispatcher(t, s, clock.NewManual(time.Now()), 1)
	enqueue(t, s, 2)
	gate := make(chan struct{})
	s.gate.Store(&gate)
	out := make(chan got, 3)
	claimNow := func(worker string) {
		go func() {
			jobs, err := d.ClaimNow(t.Context(), params(worker))
			out <- got{worker, jobs, err}
		}()
	}
	claimNow("a")
	<-s.held // a's own claim runs, held
	claimNow("b")
	waitParked(t, d, 1)
	claimNow("c")
	waitParked(t, d, 2)
	s.gate.Store(nil)
	close(gate)
	byWorker := map[string]got{}
	for range 3 {
		g := <-out
		byWorker[g.worker] = g
	}
	for _, w := range []string{"a", "b"} {
		if g := byWorker[w]; g.err != nil || len(g.jobs) != 1 || g.jobs[0].Owner != w {
			t.Fatalf("%s got %+v, want one job leased to it", w, g)
		}
	}
	if g := byWorker["c"]; g.err != nil || len(g.jobs) != 0 {
		t.Fatalf("c got %+v, want nothing: the queue ran dry", g)
	}
	if d.Waiting() != 0 {
		t.Fatalf("%d claims still parked, want 0: a ClaimNow does not wait", d.Waiting())
	}
	if n, m := s.claims.Load(), s.groups.Load(); n != 1 || m != 1 {
		t.Fatalf("%d single claims and %d group claims, want a's own and one for b and c", n, m)
	}
	jobs, err := d.ClaimNow(t.Context(), params("d"))
	if err != nil || len(jobs) != 0 {
		t.Fatalf("a ClaimNow of the drained line got %v, %v; want nothing", jobs, err)
	}
	if n, m := s.claims.Load(), s.groups.Load(); n != 2 || m != 1 {
		t.Fatalf("%d single claims and %d group claims after a ClaimNow of a drained line, want its own claim (a retry must find what it leased)", n, m)
	}
}
