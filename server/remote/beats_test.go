package remote_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
)

// TestHeartbeatsTravelTogether: heartbeats sent while one is under way go in
// one HeartbeatMany call, and each gets its own answer: renewed, or refused
// as stale for a lease that is not the job's.
func TestHeartbeatsTravelTogether(t *testing.T) {
	t.Parallel()
	s := backends[0].open(t)
	h, err := server.New(server.Config{Store: s, NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := map[string]int{}
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		mu.Lock()
		calls[name]++
		first := name == "Heartbeat" && calls[name] == 1
		mu.Unlock()
		if first {
			<-hold // the others queue up behind the first
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	st, err := remote.New(remote.Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	specs := make([]lifecycle.Spec, 11)
	for i := range specs {
		specs[i] = lifecycle.Spec{Kind: "k", Queue: "q"}
	}
	if _, err := st.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs}); err != nil {
		t.Fatal(err)
	}
	jobs, err := st.JobClaim(t.Context(), &store.JobClaimParams{WorkerID: "w", Queues: []string{"q"}, Limit: 11, LeaseTTL: time.Minute, Start: true})
	if err != nil || len(jobs) != 11 {
		t.Fatalf("claimed %d: %v", len(jobs), err)
	}
	jobs[10].LeaseID = "not-the-lease"
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	beat := func(i int) {
		_, errs[i] = st.JobHeartbeat(t.Context(), &store.JobHeartbeatParams{
			OwnerParams: store.OwnerParams{JobID: jobs[i].ID, LeaseID: jobs[i].LeaseID}, LeaseTTL: time.Minute})
	}
	wg.Go(func() { beat(0) })
	for { // the first is under way, held at the server
		mu.Lock()
		n := calls["Heartbeat"]
		mu.Unlock()
		if n == 1 {
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the first heartbeat never reached the server")
		case <-time.After(time.Millisecond):
		}
	}
	for i := 1; i < len(jobs); i++ {
		wg.Go(func() { beat(i) })
	}
	for remote.PendingBeats(st) < len(jobs)-1 {
		select {
		case <-t.Context().Done():
			t.Fatal("the heartbeats never queued")
		case <-time.After(time.Millisecond):
		}
	}
	close(hold)
	wg.Wait()
	for i, err := range errs[:10] {
		if err != nil {
			t.Errorf("heartbeat %d: %v", i, err)
		}
	}
	if !errors.Is(errs[10], store.ErrStaleLease) {
		t.Errorf("the heartbeat with a wrong lease got %v, want ErrStaleLease", errs[10])
	}
	if calls["Heartbeat"] != 1 || calls["HeartbeatMany"] != 1 {
		t.Errorf("calls %v: want the first heartbeat alone, the ten others in one HeartbeatMany", calls)
	}
}
