package stint_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stint-dev/stint"
)

// TestPoolClaimsByTopic: a pool with Config.Topics claims only the jobs of
// its queues whose topic matches a pattern. One worker slot claims in
// order, so the older jobs of other topics (and without one) would have
// been claimed first had the filter not held.
func TestPoolClaimsByTopic(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, e *env) {
		mail := e.enqueue(stint.Spec{Kind: "k", Topic: "job.mail.send"})
		bare := e.enqueue(stint.Spec{Kind: "k"})
		deep := e.enqueue(stint.Spec{Kind: "k", Topic: "job.chat.a.b"})
		chat := e.enqueue(stint.Spec{Kind: "k", Topic: "job.chat.simple"})
		cfg := e.config()
		cfg.Queues = map[string]int{"default": 1}
		cfg.Topics = []string{"job.chat.*"}
		e.start(muxOf("k", stint.HandlerFunc(func(context.Context, *stint.Job) error { return nil })), cfg)
		e.waitState(chat.ID, stint.Succeeded)
		for _, j := range []stint.JobRecord{mail, bare, deep} {
			if got := e.get(j.ID); got.State != stint.Queued {
				t.Errorf("job of topic %q is %s: a pool claiming job.chat.* took it", j.Topic, got.State)
			}
		}
	})
}

// TestPoolTopicsAreValidated: a pattern the store would refuse stops
// NewPool, with the store's message, rather than failing every claim.
func TestPoolTopicsAreValidated(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	mux := muxOf("k", stint.HandlerFunc(func(context.Context, *stint.Job) error { return nil }))
	for _, tc := range []struct{ pattern, want string }{
		{"job..chat", "empty token"},
		{"job.>.chat", "may only be the last token"},
		{"job.ch*", "whole tokens"},
	} {
		_, err := stint.NewPool(e.s, mux, stint.Config{Topics: []string{"job.ok.*", tc.pattern}})
		if err == nil || !strings.Contains(err.Error(), "Config.Topics") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewPool with topic %q: %v, want an error on Config.Topics mentioning %q", tc.pattern, err, tc.want)
		}
	}
}
