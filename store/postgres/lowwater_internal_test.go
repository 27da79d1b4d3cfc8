package postgres

import (
	"testing"
	"time"
)

// The mark's bookkeeping, without a database.

func lwKey(priority int, sec int64, id string) claimKey {
	return claimKey{priority: priority, at: time.Unix(sec, 0).UTC(), id: id}
}

func TestClaimKeyOrder(t *testing.T) {
	keys := []claimKey{lwKey(5, 9, "z"), lwKey(0, 1, ""), lwKey(0, 1, "a"), lwKey(0, 2, "a"), lwKey(-3, 0, "")}
	for i := range keys {
		for j := range keys {
			if got, want := keys[i].less(keys[j]), i < j; got != want {
				t.Errorf("%v.less(%v) = %v, want %v", keys[i], keys[j], got, want)
			}
		}
	}
}

func TestLowWaterAdvanceAndLower(t *testing.T) {
	lw := newLowWater()
	f, _, ok := lw.begin("q", filterKey(nil, nil))
	if ok {
		t.Fatal("a mark before any claim")
	}
	f.first, f.got = lwKey(0, 10, "b"), true
	lw.end(f, true)
	if k, ok := lw.mark("q", nil, nil); !ok || k != lwKey(0, 10, "b") {
		t.Fatalf("mark after a claim: %v %v", k, ok)
	}
	lw.lower("q", lwKey(0, 20, ""), false) // above: no change
	if k, _ := lw.mark("q", nil, nil); k != lwKey(0, 10, "b") {
		t.Errorf("a key above the mark moved it to %v", k)
	}
	lw.lower("q", lwKey(1, 30, ""), false) // higher priority: below
	if k, _ := lw.mark("q", nil, nil); k != lwKey(1, 30, "") {
		t.Errorf("mark %v, want the higher-priority key", k)
	}
}

// A job committed while a claim is in flight, above the mark the claim read
// but below the first job it returned, caps the claim's advance.
func TestLowWaterFlightFloor(t *testing.T) {
	lw := newLowWater()
	f, _, _ := lw.begin("q", filterKey(nil, nil))
	lw.lower("q", lwKey(0, 15, ""), false)
	f.first, f.got = lwKey(0, 20, "x"), true
	lw.end(f, true)
	if k, _ := lw.mark("q", nil, nil); k != lwKey(0, 15, "") {
		t.Errorf("mark %v, want the key lowered during the claim", k)
	}
}

// A claim that rolls back lowers the marks to the jobs it had locked; one in
// flight when the marks are forgotten sets none.
func TestLowWaterRollbackAndForget(t *testing.T) {
	lw := newLowWater()
	a, _, _ := lw.begin("q", filterKey(nil, nil))
	a.first, a.got = lwKey(0, 50, "m"), true
	lw.end(a, true)
	b, _, _ := lw.begin("q", filterKey(nil, nil))
	b.first, b.got = lwKey(0, 40, "k"), true
	lw.end(b, false)
	if k, _ := lw.mark("q", nil, nil); k != lwKey(0, 40, "") {
		t.Errorf("mark %v after a rollback, want the rolled-back job's key", k)
	}
	c, _, _ := lw.begin("q", filterKey(nil, nil))
	lw.forget()
	c.first, c.got = lwKey(0, 60, "n"), true
	lw.end(c, true)
	if k, ok := lw.mark("q", nil, nil); ok {
		t.Errorf("mark %v after forget, want none", k)
	}
}

// Marks are per claim filter; a lowering lowers them all.
func TestLowWaterFilters(t *testing.T) {
	lw := newLowWater()
	fa, _, _ := lw.begin("q", filterKey([]string{"a"}, nil))
	fa.first, fa.got = lwKey(0, 50, "a"), true
	lw.end(fa, true)
	if _, ok := lw.mark("q", nil, nil); ok {
		t.Error("a filtered claim set the unfiltered mark")
	}
	lw.lower("q", lwKey(0, 5, ""), false)
	if k, _ := lw.mark("q", []string{"a"}, nil); k != lwKey(0, 5, "") {
		t.Errorf("filtered mark %v, want lowered", k)
	}
}

func TestMarkPayloadRoundTrip(t *testing.T) {
	k := claimKey{priority: -7, at: time.UnixMicro(1795471282476680).UTC()}
	q, got, ok := parseMarkPayload(markPayload("a:b", k)[len(markPrefix):])
	if !ok || q != "a:b" || got != k {
		t.Errorf("round trip: %q %v %v", q, got, ok)
	}
}
