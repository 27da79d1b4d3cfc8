package server

import (
	"fmt"
	"testing"
)

// TestOwnersRemembersTwoGenerations: a noted job is known as its tenant's
// and no other's, through one rollover; older ones are forgotten (and read
// from the store again).
func TestOwnersRemembersTwoGenerations(t *testing.T) {
	t.Parallel()
	o := newOwners(2)
	o.note("a", "acme", "w1")
	if !o.is("a", "acme") || o.is("a", "other") || o.is("b", "acme") {
		t.Fatal("a noted job must be known as its tenant's only")
	}
	if o.worker("a") != "w1" || o.worker("b") != "" {
		t.Fatalf("worker of a: %q, of b: %q; want w1 and none", o.worker("a"), o.worker("b"))
	}
	for i := range 4 { // a rolls into the previous generation, then out
		o.note(fmt.Sprint("j", i), "acme", "w1")
		if got, want := o.is("a", "acme"), i < 3; got != want {
			t.Fatalf("after %d more notes: remembered %v, want %v", i+1, got, want)
		}
	}
}
