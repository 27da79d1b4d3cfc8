package store

import (
	"context"
	"errors"
	"testing"
)

// TestTurns: a queue's turn is held by one claim at a time; a claim whose
// context ends while it waits gets the context's error and holds nothing
// (not even the turns it already took); released turns can be taken again.
func TestTurns(t *testing.T) {
	var ts turns
	release, err := ts.take(t.Context(), []string{"b", "a", "a"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	// "a" is free of a claim of "c" only; "b" is held: the wait for it ends with ctx.
	if _, err := ts.take(ctx, []string{"c", "b"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("took a held turn: %v", err)
	}
	again, err := ts.take(t.Context(), []string{"c"}) // "c" was given back
	if err != nil {
		t.Fatal(err)
	}
	again()
	release()
	both, err := ts.take(t.Context(), []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	both()
	none, err := ts.take(ctx, nil) // no limited queue: no wait, whatever ctx
	if err != nil {
		t.Fatal(err)
	}
	none()
}
