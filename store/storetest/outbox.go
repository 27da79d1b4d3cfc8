package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testOutbox checks the transactional outbox: rows written exactly with the
// transitions that commit, matched by the webhooks' filters, claimed head
// first per aggregate, fenced, dead-lettered and replayed.
func testOutbox(t *testing.T, newStore func(*testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(*runHarness)
	}{
		{"RowIfAndOnlyIfTransitionCommits", outboxCommitted},
		{"Filters", outboxFilters},
		{"HeadsInOrderPerAggregate", outboxOrder},
		{"HeadsOfSomeWebhooksSkipNothing", outboxHeadsOf},
		{"StaleReporterIsFenced", outboxFenced},
		{"DeadAndReplay", outboxDead},
		{"RunFinalSetsReportedAt", outboxReported},
		{"BadWebhookRefused", outboxBadWebhook},
		{"RetentionDeletesFinished", outboxRetained},
		{"RetentionDeletesFinishedRuns", runsRetained},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rh := &runHarness{harness: newHarness(t, newStore)}
			tc.fn(rh)
			if f := rh.findings(); len(f) > 0 {
				t.Fatalf("verify found %v", f)
			}
		})
	}
}

const secret = "0123456789abcdef0123"

func (h *runHarness) hook(w store.Webhook) store.Webhook {
	h.t.Helper()
	if w.URL == "" {
		w.URL = "http://127.0.0.1:1/hook"
	}
	w.Secret = secret
	w, err := h.s.WebhookAdd(h.ctx, w)
	h.ok("webhook add", err)
	return w
}

func (h *runHarness) outbox(state store.OutboxState) []store.OutboxMessage {
	h.t.Helper()
	ms, err := h.s.OutboxList(h.ctx, &store.OutboxListParams{State: state, Limit: 1000})
	h.ok("outbox list", err)
	return ms
}

func (h *runHarness) claimOutbox(limit int) []store.OutboxDelivery {
	h.t.Helper()
	ds, err := h.s.OutboxClaim(h.ctx, &store.OutboxClaimParams{Limit: limit, Lease: time.Minute, Now: h.tick()})
	h.ok("outbox claim", err)
	return ds
}

func (h *runHarness) delivered(d store.OutboxDelivery) {
	h.t.Helper()
	h.ok("outbox delivered", h.s.OutboxDelivered(h.ctx, &store.OutboxReportParams{ID: d.Message.ID, Attempt: d.Message.Attempts, Now: h.tick()}))
}

func eventTypes(ms []store.OutboxMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.EventType
	}
	return out
}

func outboxCommitted(h *runHarness) {
	h.hook(store.Webhook{})
	f := h.enqueue()
	h.claim(&f)
	n := len(h.outbox(""))
	if n != 2 {
		h.t.Fatalf("enqueue and claim wrote %d outbox rows, want 2: %v", n, eventTypes(h.outbox("")))
	}
	// Rejected transitions write nothing.
	stale := f
	stale.Lease = "stale-lease"
	if _, err := h.s.JobStart(h.ctx, ptrTo(h.own(stale))); !errors.Is(err, lifecycle.ErrStaleLease) {
		h.t.Fatalf("start with a stale lease: %v", err)
	}
	if _, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: ""}}, Now: h.tick()}); err == nil {
		h.t.Fatal("a bad enqueue was accepted")
	}
	// Heartbeats never reach the outbox.
	_, err := h.s.JobHeartbeat(h.ctx, &store.JobHeartbeatParams{OwnerParams: h.own(f), LeaseTTL: leaseTTL})
	h.ok("heartbeat", err)
	if got := len(h.outbox("")); got != n {
		h.t.Fatalf("rejected transitions and heartbeats wrote %d outbox rows", got-n)
	}
	h.start(f)
	h.complete(f)
	if got := eventTypes(h.outbox("")); len(got) != 4 || got[3] != string(lifecycle.EventSucceeded) {
		h.t.Fatalf("outbox %v", got)
	}
}

func outboxFilters(h *runHarness) {
	only := h.hook(store.Webhook{EventTypes: []string{"succeeded", "run_succeeded"}})
	v := h.create(lifecycle.RunSpec{}, rj{name: "a"})
	h.hook(store.Webhook{Queues: []string{"no-such-queue"}, Runs: []string{v.Run.ID}})
	h.succeed("a")
	var got []string
	for _, m := range h.outbox("") {
		if m.WebhookID != only.ID {
			if m.Aggregate == store.AggregateJob {
				h.t.Fatalf("a queue filter let a job event of another queue through: %+v", m)
			}
			continue
		}
		got = append(got, m.EventType)
	}
	if len(got) != 2 || got[0] != "succeeded" || got[1] != "run_succeeded" {
		h.t.Fatalf("filtered outbox %v", got)
	}
}

func outboxOrder(h *runHarness) {
	h.hook(store.Webhook{})
	a, b := h.enqueue(), h.enqueue()
	h.claim(&a)
	// a: enqueued, claimed; b: enqueued. One head per aggregate.
	heads := h.claimOutbox(10)
	if len(heads) != 2 || heads[0].Message.AggregateID != a.ID || heads[1].Message.AggregateID != b.ID ||
		heads[0].Message.EventType != "enqueued" {
		h.t.Fatalf("heads %+v", heads)
	}
	if more := h.claimOutbox(10); len(more) != 0 {
		h.t.Fatalf("claimed %d messages behind held heads", len(more))
	}
	h.delivered(heads[0])
	next := h.claimOutbox(10)
	if len(next) != 1 || next[0].Message.AggregateID != a.ID || next[0].Message.EventType != "claimed" {
		h.t.Fatalf("after the head was delivered: %+v", next)
	}
}

// outboxHeadsOf claims some webhooks' heads (the bus bridge's batch claim,
// which starts its walk at the oldest pending message): a message made
// pending again below every other pending one (a replayed dead letter) is
// still claimed, in id order, leases hold, and a batch report is fenced.
func outboxHeadsOf(h *runHarness) {
	w := h.hook(store.Webhook{})
	claim := func() []store.OutboxMessage {
		h.t.Helper()
		ds, err := h.s.OutboxClaim(h.ctx, &store.OutboxClaimParams{Limit: 10, Lease: time.Minute, Now: h.tick(), Webhooks: []string{w.ID}})
		h.ok("outbox claim of one webhook", err)
		ms := make([]store.OutboxMessage, len(ds))
		for i, d := range ds {
			ms[i] = d.Message
		}
		return ms
	}
	r, ok := store.As[store.OutboxBatchReporter](h.s)
	if !ok {
		h.t.Skip("this store records no batch of deliveries")
	}
	deliver := func(ms ...store.OutboxMessage) []int64 {
		h.t.Helper()
		stale, err := r.OutboxDeliveredMany(h.ctx, &store.OutboxDeliveredManyParams{Messages: ms, Now: h.tick()})
		h.ok("outbox delivered many", err)
		return stale
	}
	a, b, c := h.enqueue(), h.enqueue(), h.enqueue()
	first := claim()
	if len(first) != 3 {
		h.t.Fatalf("claimed %d heads of 3 jobs", len(first))
	}
	if stale := deliver(first[0], first[1]); len(stale) != 0 {
		h.t.Fatalf("fresh claims reported stale: %v", stale)
	}
	h.ok("dead", h.s.OutboxFailed(h.ctx, &store.OutboxReportParams{ID: first[2].ID, Attempt: first[2].Attempts, Error: "gone", Dead: true, Now: h.tick()}))
	h.claim(&a) // a's claimed message, and d's enqueued one after it
	d := h.enqueue()
	if _, err := h.s.OutboxReplay(h.ctx, first[2].ID); err != nil {
		h.t.Fatal(err)
	}
	h.tick()
	heads := claim()
	want := []string{c.ID, a.ID, d.ID}
	if len(heads) != len(want) {
		h.t.Fatalf("heads %+v, want the messages of %v", heads, want)
	}
	for i, m := range heads {
		if m.AggregateID != want[i] || (i > 0 && m.ID <= heads[i-1].ID) {
			h.t.Fatalf("heads %+v, want the messages of %v in id order", heads, want)
		}
	}
	if more := claim(); len(more) != 0 {
		h.t.Fatalf("claimed %d leased messages", len(more))
	}
	h.advance(2 * time.Minute)
	again := claim()
	if len(again) != 3 || again[0].ID != heads[0].ID || again[0].Attempts != heads[0].Attempts+1 {
		h.t.Fatalf("after the lease: %+v", again)
	}
	if stale := deliver(heads[1], again[0], again[2]); len(stale) != 1 || stale[0] != heads[1].ID {
		h.t.Fatalf("a stale claim's delivery: stale %v, want [%d]", stale, heads[1].ID)
	}
	if got := claim(); len(got) != 0 {
		h.t.Fatalf("claimed %+v while a's head is still leased", got)
	}
	_ = b
}

func outboxFenced(h *runHarness) {
	h.hook(store.Webhook{})
	h.enqueue()
	first := h.claimOutbox(1)[0]
	h.advance(2 * time.Minute) // the lease ends: the message is due again
	second := h.claimOutbox(1)[0]
	if second.Message.ID != first.Message.ID || second.Message.Attempts != first.Message.Attempts+1 {
		h.t.Fatalf("reclaim: %+v then %+v", first.Message, second.Message)
	}
	err := h.s.OutboxDelivered(h.ctx, &store.OutboxReportParams{ID: first.Message.ID, Attempt: first.Message.Attempts, Now: h.tick()})
	if !errors.Is(err, lifecycle.ErrStaleLease) {
		h.t.Fatalf("a stale deliverer's report: %v", err)
	}
	h.delivered(second)
	if ms := h.outbox(store.OutboxDelivered); len(ms) != 1 || ms[0].DeliveredAt == nil {
		h.t.Fatalf("delivered: %+v", ms)
	}
}

func outboxDead(h *runHarness) {
	h.hook(store.Webhook{})
	h.enqueue()
	d := h.claimOutbox(1)[0]
	retry := h.now.Add(time.Hour)
	h.ok("failed", h.s.OutboxFailed(h.ctx, &store.OutboxReportParams{ID: d.Message.ID, Attempt: 1, Error: "503 Service Unavailable", RetryAt: &retry, Now: h.tick()}))
	if more := h.claimOutbox(1); len(more) != 0 {
		h.t.Fatal("claimed a message before its retry time")
	}
	h.advance(time.Hour)
	d = h.claimOutbox(1)[0]
	h.ok("dead", h.s.OutboxFailed(h.ctx, &store.OutboxReportParams{ID: d.Message.ID, Attempt: 2, Error: "connection refused", Dead: true, Now: h.tick()}))
	dead := h.outbox(store.OutboxDead)
	if len(dead) != 1 || dead[0].LastError != "connection refused" || dead[0].Attempts != 2 {
		h.t.Fatalf("dead: %+v", dead)
	}
	if _, err := h.s.OutboxReplay(h.ctx, dead[0].ID); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.s.OutboxReplay(h.ctx, dead[0].ID); !errors.Is(err, lifecycle.ErrInvalidTransition) {
		h.t.Fatalf("replay of a pending message: %v", err)
	}
	h.tick()
	if again := h.claimOutbox(1); len(again) != 1 || again[0].Message.ID != dead[0].ID {
		h.t.Fatalf("replayed message not claimed: %+v", again)
	}
}

func outboxReported(h *runHarness) {
	h.hook(store.Webhook{EventTypes: []string{"run_succeeded"}})
	h.create(lifecycle.RunSpec{}, rj{name: "a"})
	h.succeed("a")
	if h.refresh().Run.ReportedAt != nil {
		h.t.Fatal("reported before delivery")
	}
	d := h.claimOutbox(1)
	if len(d) != 1 || d[0].Message.Aggregate != store.AggregateRun {
		h.t.Fatalf("claimed %+v", d)
	}
	h.delivered(d[0])
	if r := h.refresh().Run; r.ReportedAt == nil || r.State != lifecycle.RunSucceeded {
		h.t.Fatalf("after delivery: %+v", r)
	}
}

func outboxBadWebhook(h *runHarness) {
	for _, w := range []store.Webhook{{URL: "ftp://x/y", Secret: secret}, {URL: "not a url", Secret: secret}, {URL: "http://x/y", Secret: "short"}} {
		if _, err := h.s.WebhookAdd(h.ctx, w); !errors.Is(err, lifecycle.ErrValidation) {
			h.t.Fatalf("webhook %+v: %v", w, err)
		}
	}
	if ws, err := h.s.WebhookList(h.ctx); err != nil || len(ws) != 0 {
		h.t.Fatalf("refused webhooks were written: %v %v", ws, err)
	}
	if err := h.s.WebhookRemove(h.ctx, "nope"); !errors.Is(err, lifecycle.ErrNotFound) {
		h.t.Fatalf("remove of a missing webhook: %v", err)
	}
}

// outboxRetained: retention deletes delivered and dead messages that ended
// before its cutoff, never a pending one however old, nor a recent one.
func outboxRetained(h *runHarness) {
	h.hook(store.Webhook{})
	for range 3 {
		h.enqueue()
	}
	ds := h.claimOutbox(10)
	if len(ds) != 3 {
		h.t.Fatalf("claimed %d messages, want 3", len(ds))
	}
	h.delivered(ds[0])
	h.ok("dead", h.s.OutboxFailed(h.ctx, &store.OutboxReportParams{ID: ds[1].Message.ID, Attempt: 1, Error: "gone", Dead: true, Now: h.tick()}))
	pending := ds[2].Message.ID // claimed, never reported
	cutoff := h.now.Add(time.Minute)
	h.advance(time.Hour)
	h.enqueue()
	var recent []store.OutboxDelivery // the new one; the pending one's lease has lapsed, so it comes again
	for _, d := range h.claimOutbox(10) {
		if d.Message.ID != pending {
			recent = append(recent, d)
		}
	}
	if len(recent) != 1 {
		h.t.Fatalf("claimed %d recent messages, want 1", len(recent))
	}
	h.delivered(recent[0])
	res, err := h.s.JobRetain(h.ctx, &store.RetainParams{FinishedBefore: cutoff})
	h.ok("retain", err)
	if store.HistoryPartitioned(h.s) {
		// The outbox goes by whole partitions of created_at, and these four
		// share one with a pending message: none goes (the drops are tested
		// with the driver, store/postgres/partitions_test.go).
		if ms := h.outbox(""); res.Outbox != 0 || len(ms) != 4 {
			h.t.Errorf("retention deleted %d outbox messages and left %d; want none deleted from a partition holding a pending one", res.Outbox, len(ms))
		}
		return
	}
	if res.Outbox != 2 {
		h.t.Errorf("retention deleted %d outbox messages, want the old delivered and dead ones", res.Outbox)
	}
	left := map[int64]bool{}
	for _, m := range h.outbox("") {
		left[m.ID] = true
	}
	if len(left) != 2 || !left[pending] || !left[recent[0].Message.ID] {
		h.t.Errorf("left %v, want the pending %d and the recent %d", left, pending, recent[0].Message.ID)
	}
}

// runsRetained: retention deletes a finished run once its jobs are gone, with
// its run_jobs and run_events, and never a live run; verify stays clean.
func runsRetained(h *runHarness) {
	done := h.create(lifecycle.RunSpec{}, rj{name: "a"}).Run.ID
	h.succeed("a")
	h.states(lifecycle.RunSucceeded, nil)
	live := h.create(lifecycle.RunSpec{}, rj{name: "b"}, rj{name: "c", deps: []string{"b"}}).Run.ID
	cutoff := h.now.Add(time.Minute)
	h.advance(time.Hour)
	res, err := h.s.JobRetain(h.ctx, &store.RetainParams{FinishedBefore: cutoff})
	h.ok("retain", err)
	if res.Runs != 1 || res.Jobs != 1 {
		h.t.Errorf("retention deleted %d runs and %d jobs, want the finished run and its job", res.Runs, res.Jobs)
	}
	if _, err := h.s.RunGet(h.ctx, done); !errors.Is(err, store.ErrNotFound) {
		h.t.Errorf("finished run after retention: %v, want not found", err)
	}
	if evs, err := h.s.RunEvents(h.ctx, done); err == nil && len(evs) != 0 {
		h.t.Errorf("finished run's events after retention: %d", len(evs))
	}
	if v, err := h.s.RunGet(h.ctx, live); err != nil || len(v.Jobs) != 2 {
		h.t.Errorf("live run after retention: %+v, %v", v, err)
	}
}
