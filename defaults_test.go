package stint_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
)

// Defaults by kind and by queue: the job's spec first, then its kind's,
// then its queue's, then the pool's or client's own.

func TestClientDefaultsByKindAndQueue(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	c, err := stint.NewClient(e.s, stint.ClientConfig{
		KindDefaults:  map[string]stint.JobDefaults{"k": {MaxAttempts: 5, Timeout: time.Minute}},
		QueueDefaults: map[string]stint.JobDefaults{"q": {MaxAttempts: 7, Timeout: 2 * time.Minute}, "default": {Timeout: 3 * time.Minute}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		spec        stint.Spec
		maxAttempts int
		timeout     time.Duration
	}{
		{"kind over queue", stint.Spec{Kind: "k", Queue: "q"}, 5, time.Minute},
		{"queue", stint.Spec{Kind: "other", Queue: "q"}, 7, 2 * time.Minute},
		{"job over kind", stint.Spec{Kind: "k", Queue: "q", MaxAttempts: 2, Timeout: time.Second}, 2, time.Second},
		{"the default queue's, then stint's", stint.Spec{Kind: "other"}, lifecycle.DefaultMaxAttempts, 3 * time.Minute},
		{"none", stint.Spec{Kind: "other", Queue: "plain"}, lifecycle.DefaultMaxAttempts, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Enqueue(context.Background(), tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if j := res.Job; j.MaxAttempts != tt.maxAttempts || j.Timeout.D() != tt.timeout {
				t.Errorf("max_attempts %d, timeout %s; want %d, %s", j.MaxAttempts, j.Timeout.D(), tt.maxAttempts, tt.timeout)
			}
		})
	}
}

func TestPoolDefaultsByKindAndQueue(t *testing.T) {
	t.Parallel()
	e := newSQLite(t)
	cfg := e.config()
	cfg.Queues = map[string]int{"default": 10, "q": 10}
	cfg.QueueDefaults = map[string]stint.JobDefaults{
		"default": {LeaseTTL: 30 * time.Second, Permanent: []string{"compile_error"}},
		"q":       {LeaseTTL: 40 * time.Second},
	}
	cfg.KindDefaults = map[string]stint.JobDefaults{
		"short": {LeaseTTL: 10 * time.Second, Backoff: lifecycle.Backoff{Base: 7 * time.Second, Max: 7 * time.Second}},
	}
	b := newBlocker()
	mux := stint.NewMux()
	mux.Handle("short", b)
	mux.Handle("long", b)
	mux.HandleFunc("build", func(context.Context, *stint.Job) error {
		return stint.WithCode("compile_error", errors.New("main.go:3: syntax error"))
	})
	e.start(mux, cfg)

	leases := map[string]time.Duration{}
	for _, spec := range []stint.Spec{{Kind: "short"}, {Kind: "long"}, {Kind: "long", Queue: "q"}, {Kind: "short", Queue: "q"}} {
		id := e.enqueue(spec).ID
		j := receive(t, b.started, "a handler to start").Record()
		leases[spec.Kind+"@"+e.get(id).Queue] = j.LeaseExpiresAt.Sub(j.UpdatedAt)
	}
	want := map[string]time.Duration{"short@default": 10 * time.Second, "long@default": 30 * time.Second,
		"long@q": 40 * time.Second, "short@q": 10 * time.Second}
	for k, d := range want {
		if leases[k] != d {
			t.Errorf("the lease of %s is %s, want %s", k, leases[k], d)
		}
	}
	for range 4 {
		b.release <- errors.New("flaky")
	}
	eventually(t, "the four attempts to fail", func() bool {
		jobs, _ := e.client.List(context.Background(), stint.ListParams{States: []stint.State{stint.Retrying}})
		return len(jobs) == 4
	})
	jobs, _ := e.client.List(context.Background(), stint.ListParams{States: []stint.State{stint.Retrying}})
	for _, j := range jobs {
		delay := j.RunAt.Sub(j.UpdatedAt)
		lo, hi := time.Duration(0), time.Millisecond // the pool's own backoff
		if j.Kind == "short" {
			lo, hi = 3500*time.Millisecond, 7*time.Second // its kind's
		}
		if delay < lo || delay > hi {
			t.Errorf("%s@%s retries after %s, want %s to %s", j.Kind, j.Queue, delay, lo, hi)
		}
	}

	build := e.waitState(e.enqueue(stint.Spec{Kind: "build"}).ID, stint.Failed)
	if build.Attempt != 1 || build.Error == nil || !strings.Contains(build.Error.Message, "syntax error") {
		t.Errorf("build: attempt %d, error %+v: want it failed at once (compile_error never retries in its queue)", build.Attempt, build.Error)
	}
}
