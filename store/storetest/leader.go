package storetest

import (
	"testing"
	"time"

	"github.com/stint-dev/stint/store"
)

// testLeader checks leader election: one holder per seat until its TTL
// passes by the store's clock, renewals keep the term, and the term rises
// whenever the seat changes hands, resignations included.
func testLeader(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("seat", func(t *testing.T) { t.Parallel(); testLeaderSeat(t, newStore) })
	t.Run("validation", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		for _, p := range []store.LeaderElectParams{{ID: "a", TTL: time.Minute}, {Name: "m", TTL: time.Minute}, {Name: "m", ID: "a"}} {
			p.Now = h.tick()
			_, err := h.s.LeaderElect(h.ctx, &p)
			rejected(t, err, store.ErrValidation)
		}
	})
}

func testLeaderSeat(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	elect := func(name, id string) store.Leadership {
		t.Helper()
		l, err := h.s.LeaderElect(h.ctx, &store.LeaderElectParams{Name: name, ID: id, TTL: time.Minute, Now: h.tick()})
		if err != nil {
			t.Fatalf("elect %s for %s: %v", id, name, err)
		}
		if l.Elected && !l.ExpiresAt.Equal(h.now.Add(time.Minute)) {
			t.Errorf("%s elected until %s, want now + TTL = %s", id, l.ExpiresAt, h.now.Add(time.Minute))
		}
		return l
	}
	a := elect("maintenance", "a")
	if !a.Elected || a.Term < 1 {
		t.Fatalf("the first candidate of a free seat: %+v, want elected with a term", a)
	}
	if b := elect("maintenance", "b"); b.Elected {
		t.Fatalf("b took a seat a holds: %+v", b)
	}
	if other := elect("outbox", "b"); !other.Elected {
		t.Errorf("seats are independent: b should hold outbox")
	}
	if again := elect("maintenance", "a"); !again.Elected || again.Term != a.Term {
		t.Errorf("a renewing: %+v, want elected with the same term %d", again, a.Term)
	}
	h.advance(2 * time.Minute) // a's seat expires
	b := elect("maintenance", "b")
	if !b.Elected || b.Term <= a.Term {
		t.Fatalf("b after a's seat expired: %+v, want elected with a term above %d", b, a.Term)
	}
	if a2 := elect("maintenance", "a"); a2.Elected {
		t.Fatalf("a took the seat back from b: %+v", a2)
	}
	if err := h.s.LeaderResign(h.ctx, "maintenance", "a"); err != nil {
		t.Fatalf("a resigning a seat it does not hold: %v", err)
	}
	if a2 := elect("maintenance", "a"); a2.Elected {
		t.Fatalf("a's resignation freed b's seat: %+v", a2)
	}
	if err := h.s.LeaderResign(h.ctx, "maintenance", "b"); err != nil {
		t.Fatalf("b resigning: %v", err)
	}
	c := elect("maintenance", "c")
	if !c.Elected || c.Term <= b.Term {
		t.Errorf("c after b resigned: %+v, want elected at once with a term above %d (a term never repeats, so it can fence a former leader)", c, b.Term)
	}
}
