package remote_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	stint "github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/server/dispatch"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
)

// counted is a real store that counts the calls remote workers cause.
type counted struct {
	store.Store
	calls atomic.Int64
}

func (c *counted) JobClaim(ctx context.Context, p *store.JobClaimParams) ([]store.Job, error) {
	c.calls.Add(1)
	return c.Store.JobClaim(ctx, p)
}

func (c *counted) JobGet(ctx context.Context, id string) (store.Job, error) {
	c.calls.Add(1)
	return c.Store.JobGet(ctx, id)
}

func (c *counted) JobList(ctx context.Context, p *store.JobListParams) ([]store.Job, error) {
	c.calls.Add(1)
	return c.Store.JobList(ctx, p)
}

// TestIdlePoolsCostNothing: twenty stock pools over remote stores wait on an
// empty queue. Their long polls end (the server's clock is moved past the
// wait) and start again, three times over: the server's store hears not one
// call from it. Then a job arrives and one of them runs it.
func TestIdlePoolsCostNothing(t *testing.T) {
	t.Parallel()
	s := &counted{Store: backends[0].open(t)}
	clk := clock.NewManual(time.Now())
	d, err := dispatch.New(dispatch.Config{Store: s, Clock: clk, Recheck: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(server.Config{Store: s, NoAuth: true, Clock: clk, Dispatcher: d})
	if err != nil {
		t.Fatal(err)
	}
	var polls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/Claim") {
			polls.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	const pools, wait = 20, 20 * time.Second
	ran := make(chan string, 1)
	for i := range pools {
		st, err := remote.New(remote.Options{URL: srv.URL, ClaimWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		mux := stint.NewMux()
		mux.HandleFunc("k", func(ctx context.Context, j *stint.Job) error { ran <- j.ID(); return nil })
		p, err := stint.NewPool(st, mux, stint.Config{Queues: map[string]int{"q": 2}, WorkerID: fmt.Sprint("pool-", i),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(context.Background()); st.Close() })
	}
	parkedAfter := func(n int64) {
		t.Helper()
		for {
			changed := d.Changed()
			if polls.Load() >= n && d.Waiting() == pools {
				return
			}
			select {
			case <-changed:
			case <-t.Context().Done():
				t.Fatalf("%d long polls, %d parked; want %d and %d", polls.Load(), d.Waiting(), n, pools)
			}
		}
	}
	parkedAfter(pools)
	before := s.calls.Load()
	for round := 2; round <= 4; round++ {
		clk.Advance(wait)
		parkedAfter(int64(round * pools))
	}
	if n := s.calls.Load() - before; n != 0 {
		t.Fatalf("%d store calls while %d idle pools long-polled three more times, want 0", n, pools)
	}
	res, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "k", Queue: "q"}}})
	if err != nil {
		t.Fatal(err)
	}
	if id := <-ran; id != res[0].Job.ID {
		t.Fatalf("ran %s, want %s", id, res[0].Job.ID)
	}
}
