package storetest

import (
	"slices"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// topicsUnderTest are the topics of the jobs each pattern case claims from;
// "" is a job without a topic, which no pattern matches. "jobxchat.simple"
// and "a+b.(x)" check that a pattern's dots and punctuation are literal.
var topicsUnderTest = []string{"", "job", "job.chat", "job.chat.simple", "job.chat.simple.x", "job.tool.simple",
	"jobs.chat.simple", "other.chat.simple", "jobxchat.simple", "a+b.(x)"}

// topicCases are patterns (one claim's topics) and the topics they claim,
// exactly as specified: * one token, > one or more trailing tokens.
var topicCases = []struct {
	patterns []string
	want     []string
}{
	{[]string{"job.chat.simple"}, []string{"job.chat.simple"}},
	{[]string{"job.chat.*"}, []string{"job.chat.simple"}},
	{[]string{"job.*.simple"}, []string{"job.chat.simple", "job.tool.simple"}},
	{[]string{"job.*"}, []string{"job.chat"}},
	{[]string{"job.>"}, []string{"job.chat", "job.chat.simple", "job.chat.simple.x", "job.tool.simple"}},
	{[]string{"job.chat.>"}, []string{"job.chat.simple", "job.chat.simple.x"}},
	{[]string{"*.chat.simple"}, []string{"job.chat.simple", "jobs.chat.simple", "other.chat.simple"}},
	{[]string{"*"}, []string{"job"}},
	{[]string{"*.*"}, []string{"job.chat", "jobxchat.simple", "a+b.(x)"}},
	{[]string{"*.*.*.>"}, []string{"job.chat.simple.x"}},
	{[]string{">"}, []string{"job", "job.chat", "job.chat.simple", "job.chat.simple.x", "job.tool.simple",
		"jobs.chat.simple", "other.chat.simple", "jobxchat.simple", "a+b.(x)"}},
	{[]string{"job"}, []string{"job"}},
	{[]string{"jo"}, nil},
	{[]string{"job.cha"}, nil},
	{[]string{"job.chat.simple.x.y"}, nil},
	{[]string{"a+b.*"}, []string{"a+b.(x)"}},
	{[]string{"a.>"}, nil},
	{[]string{"job.chat.*", "other.>"}, []string{"job.chat.simple", "other.chat.simple"}},
}

// testClaimTopics: topic patterns filter a claim within its queues, both on
// the plain claim path and on a fair-share queue's per-tenant path, and
// invalid patterns are refused with nothing claimed.
func testClaimTopics(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	enqueue := func(queue, tenant string) {
		at := h.tick()
		specs := make([]lifecycle.Spec, len(topicsUnderTest))
		for i, topic := range topicsUnderTest {
			specs[i] = lifecycle.Spec{Kind: "k", Queue: queue, Topic: topic, Tenant: tenant}
		}
		if _, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: specs, Now: at}); err != nil {
			t.Fatalf("enqueue: %v", err)
		}
	}
	claimTopics := func(queue string, patterns []string) []string {
		jobs, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{queue}, Topics: patterns,
			Limit: 100, LeaseTTL: leaseTTL, Now: h.tick()})
		if err != nil {
			t.Fatalf("claim %v: %v", patterns, err)
		}
		var got []string
		for _, j := range jobs {
			got = append(got, j.Topic)
		}
		slices.Sort(got)
		return got
	}
	for _, c := range topicCases {
		want := slices.Sorted(slices.Values(c.want))
		var ref []string // lifecycle.MatchTopic must agree with the table
		for _, topic := range topicsUnderTest {
			if slices.ContainsFunc(c.patterns, func(p string) bool { return lifecycle.MatchTopic(p, topic) }) {
				ref = append(ref, topic)
			}
		}
		if slices.Sort(ref); !slices.Equal(ref, want) {
			t.Errorf("lifecycle.MatchTopic %v matches %q, want %q", c.patterns, ref, want)
		}
		q := h.name("topics")
		enqueue(q, "")
		if got := claimTopics(q, c.patterns); !slices.Equal(got, want) {
			t.Errorf("claim with topics %v got %q, want %q", c.patterns, got, want)
		}
	}

	// A fair-share queue claims per tenant (another query): same filter.
	if qs, err := store.Queues(h.s); err == nil {
		q := h.name("fair")
		yes := true
		if _, err := qs.QueueLimit(h.ctx, q, store.QueueLimits{FairTenants: &yes}); err != nil {
			t.Fatalf("queue limit: %v", err)
		}
		enqueue(q, "acme")
		enqueue(q, "globex")
		want := []string{"job.chat.simple", "job.chat.simple", "job.tool.simple", "job.tool.simple"}
		if got := claimTopics(q, []string{"job.*.simple"}); !slices.Equal(got, want) {
			t.Errorf("fair-share claim with topics job.*.simple got %q, want %q", got, want)
		}
	}

	q := h.name("invalid")
	enqueue(q, "")
	for _, p := range []string{"", ".", "job..chat", ".job", "job.", "job.>.x", ">.job", "job.ch*", "job.*x", "job.a>b", "job chat.*", "job.\x00"} {
		_, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{q}, Topics: []string{"job.>", p},
			Limit: 100, LeaseTTL: leaseTTL, Now: h.tick()})
		rejected(t, err, store.ErrValidation)
	}
	if got := claimTopics(q, nil); len(got) != len(topicsUnderTest) {
		t.Errorf("after the refused claims a claim without topics got %d jobs, want all %d", len(got), len(topicsUnderTest))
	}
}
