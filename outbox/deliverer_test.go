package outbox_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

const secret = "whsec_" + "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// backends opens a fresh store of each backend this machine has.
func backends(t *testing.T) map[string]func(t *testing.T) store.Store {
	b := map[string]func(t *testing.T) store.Store{"sqlite": func(t *testing.T) store.Store {
		s, err := sqlite.OpenStore(t.Context(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}}
	if os.Getenv("STINT_TEST_DATABASE_URL") != "" {
		b["postgres"] = func(t *testing.T) store.Store { return pgtest.NewStore(t) }
	}
	return b
}

// receiver is a webhook endpoint that checks signatures and records what it
// got, per aggregate, in arrival order; behave decides each answer.
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	seen   map[string]bool     // webhook-ids processed (a deduping receiver)
	order  map[string][]int64  // aggregate id → message ids, first arrivals
	bodies map[string][]string // aggregate id → event types
	calls  atomic.Int64
	behave func(n int64, w http.ResponseWriter, r *http.Request) bool // true: answered
}

func newReceiver(t *testing.T) (*receiver, *httptest.Server) {
	rc := &receiver{t: t, seen: map[string]bool{}, order: map[string][]int64{}, bodies: map[string][]string{}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := rc.calls.Add(1)
	rc.mu.Lock()
	behave := rc.behave
	rc.mu.Unlock()
	if behave != nil && behave(n, w, r) {
		return
	}
	body, _ := io.ReadAll(r.Body)
	id, tsText := r.Header.Get(outbox.HeaderID), r.Header.Get(outbox.HeaderTimestamp)
	sec, _ := strconv.ParseInt(tsText, 10, 64)
	if !outbox.Verify(secret, id, time.Unix(sec, 0), body, r.Header.Get(outbox.HeaderSignature)) {
		rc.t.Errorf("bad signature on %s", id)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Header.Get(outbox.HeaderIdempotencyKey) != id {
		rc.t.Errorf("Idempotency-Key %q differs from webhook-id %q", r.Header.Get(outbox.HeaderIdempotencyKey), id)
	}
	var p store.OutboxPayload
	if err := json.Unmarshal(body, &p); err != nil {
		rc.t.Errorf("body: %v", err)
	}
	num, _ := strconv.ParseInt(strings.TrimPrefix(id, "msg_"), 10, 64)
	rc.mu.Lock()
	if !rc.seen[id] {
		rc.seen[id] = true
		rc.order[p.AggregateID] = append(rc.order[p.AggregateID], num)
		rc.bodies[p.AggregateID] = append(rc.bodies[p.AggregateID], p.Type)
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// setBehave sets how the receiver answers. Requests from another process
// (the kill test's child) reach ServeHTTP with no happens-before edge the
// race detector can see, so the field is read and written under rc.mu.
func (rc *receiver) setBehave(f func(n int64, w http.ResponseWriter, r *http.Request) bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.behave = f
}

func (rc *receiver) got() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen)
}

// eventually polls cond until it holds, failing the test after a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

func fast(workers int) *outbox.Config {
	return &outbox.Config{Workers: workers, Limit: 8, Timeout: 2 * time.Second, Lease: 10 * time.Second, MaxAttempts: 5,
		Backoff: lifecycle.Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond}, Interval: 2 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)}
}

func start(t *testing.T, s store.Store, cfg *outbox.Config) *outbox.Deliverer {
	t.Helper()
	d, err := outbox.New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

// jobsWithEvents makes n jobs with four events each (enqueued, claimed,
// started, succeeded): 4n outbox messages for one webhook.
func jobsWithEvents(t *testing.T, s store.Store, n int) {
	t.Helper()
	ctx := t.Context()
	specs := make([]lifecycle.Spec, n)
	for i := range specs {
		specs[i] = lifecycle.Spec{Kind: "k", Queue: "hooks"}
	}
	if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs}); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"hooks"}, Limit: n, LeaseTTL: time.Minute, Start: true})
	if err != nil || len(jobs) != n {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	ps := make([]store.JobCompleteParams, n)
	for i, j := range jobs {
		ps[i] = store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}, Result: json.RawMessage(`{}`)}
	}
	if _, err := s.JobComplete(ctx, ps); err != nil {
		t.Fatal(err)
	}
}

func addHook(t *testing.T, s store.Store, url string) {
	t.Helper()
	if _, err := s.WebhookAdd(t.Context(), store.Webhook{URL: url, Secret: secret}); err != nil {
		t.Fatal(err)
	}
}

func outboxOf(t *testing.T, s store.Store, st store.OutboxState) []store.OutboxMessage {
	t.Helper()
	ms, err := s.OutboxList(t.Context(), &store.OutboxListParams{State: st, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// checkOrder fails unless every aggregate's messages arrived in id order
// and in the lifecycle's order.
func (rc *receiver) checkOrder(t *testing.T) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for agg, ids := range rc.order {
		for i := 1; i < len(ids); i++ {
			if ids[i] < ids[i-1] {
				t.Fatalf("aggregate %s: message %d arrived after %d", agg, ids[i], ids[i-1])
			}
		}
		if got := strings.Join(rc.bodies[agg], ","); got != "enqueued,claimed,started,succeeded" {
			t.Fatalf("aggregate %s: events %s", agg, got)
		}
	}
}

// TestDeliveryUnderFaults runs several workers against a receiver that
// fails, rate-limits, hangs past the timeout and is down for a while:
// nothing is lost, every signature verifies, order per aggregate holds.
func TestDeliveryUnderFaults(t *testing.T) {
	t.Parallel()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			rc, srv := newReceiver(t)
			rc.setBehave(func(n int64, w http.ResponseWriter, r *http.Request) bool {
				switch {
				case n%7 == 1:
					w.WriteHeader(http.StatusInternalServerError)
				case n%7 == 3:
					w.Header().Set("Retry-After", "0")
					w.WriteHeader(http.StatusTooManyRequests)
				case n%11 == 5: // hangs past the client's timeout
					_, _ = io.ReadAll(r.Body) // then the server notices the client hang up
					<-r.Context().Done()
				case n > 20 && n < 40: // down: the connection drops
					hj, _ := w.(http.Hijacker)
					c, _, _ := hj.Hijack()
					c.Close()
				default:
					return false
				}
				return true
			})
			addHook(t, s, srv.URL)
			const jobs = 25
			jobsWithEvents(t, s, jobs)
			cfg := fast(4)
			cfg.Timeout, cfg.Lease, cfg.MaxAttempts = 300*time.Millisecond, 5*time.Second, 50
			start(t, s, cfg)
			start(t, s, cfg) // a second deliverer, as on another node
			eventually(t, "every message delivered", func() bool { return rc.got() == 4*jobs })
			rc.checkOrder(t)
			eventually(t, "every message recorded delivered", func() bool { return len(outboxOf(t, s, store.OutboxDelivered)) == 4*jobs })
			if dead := outboxOf(t, s, store.OutboxDead); len(dead) != 0 {
				t.Fatalf("%d messages dead", len(dead))
			}
		})
	}
}

// TestDeadLetter: a receiver that always answers 503 gets MaxAttempts tries,
// then the message is dead with the last error; a 400 is dead at once.
func TestDeadLetter(t *testing.T) {
	t.Parallel()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			rc, srv := newReceiver(t)
			rc.setBehave(func(n int64, w http.ResponseWriter, r *http.Request) bool {
				if strings.HasSuffix(r.URL.Path, "/bad") {
					http.Error(w, "no such hook", http.StatusBadRequest)
				} else {
					http.Error(w, "overloaded", http.StatusServiceUnavailable)
				}
				return true
			})
			addHook(t, s, srv.URL+"/busy")
			if _, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "k"}}}); err != nil {
				t.Fatal(err)
			}
			addHook(t, s, srv.URL+"/bad") // sees only what follows
			if _, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "k"}}}); err != nil {
				t.Fatal(err)
			}
			start(t, s, fast(2))
			eventually(t, "three dead messages", func() bool { return len(outboxOf(t, s, store.OutboxDead)) == 3 })
			for _, m := range outboxOf(t, s, store.OutboxDead) {
				switch {
				case strings.Contains(m.LastError, "503"):
					if m.Attempts != 5 {
						t.Fatalf("503s: dead after %d attempts, want 5", m.Attempts)
					}
				case strings.Contains(m.LastError, "400"):
					if m.Attempts != 1 {
						t.Fatalf("400: dead after %d attempts, want 1", m.Attempts)
					}
				default:
					t.Fatalf("last error %q", m.LastError)
				}
			}
		})
	}
}

func TestSignature(t *testing.T) {
	t.Parallel()
	ts := time.Unix(1700000000, 0)
	sig := outbox.Sign(secret, "msg_1", ts, []byte(`{"a":1}`))
	if !strings.HasPrefix(sig, "v1,") || !outbox.Verify(secret, "msg_1", ts, []byte(`{"a":1}`), "v1,bogus "+sig) {
		t.Fatalf("signature %q does not verify", sig)
	}
	if outbox.Verify(secret, "msg_1", ts, []byte(`{"a":2}`), sig) || outbox.Verify(secret, "msg_1", ts.Add(time.Second), []byte(`{"a":1}`), sig) {
		t.Fatal("a changed body or timestamp verifies")
	}
}
