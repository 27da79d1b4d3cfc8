package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Sizes of the concurrent-claim test. In -short mode it uses shortJobs.
const (
	claimers    = 64
	claimJobs   = 10000
	shortJobs   = 1000
	claimLimit  = 4
	enqueueSize = 1000
)

// testConcurrency: 64 workers claim (and start) jobs a few at a time and
// complete each one, racing over one queue. Counted from the event log,
// every job is claimed exactly once: no double claims, none left behind.
func testConcurrency(t *testing.T, newStore func(*testing.T) store.Store) {
	n := claimJobs
	if testing.Short() {
		n = shortJobs
	}
	h := newHarness(t, newStore)
	ids := h.enqueueMany(n, func(i int) lifecycle.Spec {
		return lifecycle.Spec{Kind: "work", Queue: "race", Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	})
	claimAt, doneAt := h.tick(), h.tick()

	var mu sync.Mutex
	claimedBy := map[string][]string{} // job → workers that claim returned it to
	errs := make(chan error, claimers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- h.claimLoop(fmt.Sprintf("worker-%02d", w), claimAt, doneAt, func(id, worker string) {
				mu.Lock()
				claimedBy[id] = append(claimedBy[id], worker)
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d claimers over %d jobs: %s", claimers, n, time.Since(start).Round(time.Millisecond))

	doubles := 0
	for id, ws := range claimedBy {
		if len(ws) != 1 {
			doubles++
			t.Errorf("job %s was handed to %v", id, ws)
		}
	}
	if len(claimedBy) != n {
		t.Errorf("claims returned %d distinct jobs of %d", len(claimedBy), n)
	}
	h.checkClaimedOnce(ids)
	rep, err := h.s.Verify(h.ctx, nil)
	if err != nil || len(rep.Findings) != 0 || rep.Jobs != n || rep.Events != 4*n {
		t.Errorf("verify: %d jobs %d events, findings %v, err %v; want %d jobs, %d events, none", rep.Jobs, rep.Events, rep.Findings, err, n, 4*n)
	}
}

// enqueueMany enqueues n jobs in batches and returns their ids.
func (h *harness) enqueueMany(n int, spec func(i int) lifecycle.Spec) []string {
	h.t.Helper()
	ids := make([]string, 0, n)
	for lo := 0; lo < n; lo += enqueueSize {
		batch := make([]lifecycle.Spec, 0, enqueueSize)
		for i := lo; i < n && i < lo+enqueueSize; i++ {
			batch = append(batch, spec(i))
		}
		res, err := h.s.JobEnqueue(h.ctx, &store.JobEnqueueParams{Jobs: batch, Now: h.tick()})
		if err != nil {
			h.t.Fatalf("enqueue batch at %d: %v", lo, err)
		}
		for _, r := range res {
			ids = append(ids, r.Job.ID)
		}
	}
	return ids
}

// claimLoop claims and completes jobs until a claim comes back empty.
func (h *harness) claimLoop(worker string, claimAt, doneAt *time.Time, seen func(id, worker string)) error {
	for {
		jobs, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{
			WorkerID: worker, Queues: []string{"race"}, Limit: claimLimit, LeaseTTL: leaseTTL, Start: true, Now: claimAt,
		})
		if err != nil {
			return fmt.Errorf("%s: claim: %w", worker, err)
		}
		if len(jobs) == 0 {
			return nil
		}
		done := make([]store.JobCompleteParams, len(jobs))
		for i, j := range jobs {
			seen(j.ID, worker)
			if j.Owner != worker || j.State != lifecycle.Running || j.Attempt != 1 {
				return fmt.Errorf("%s: claimed %s", worker, asJSON(j))
			}
			done[i] = store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, Now: doneAt}, Result: json.RawMessage(`true`)}
		}
		res, err := h.s.JobComplete(h.ctx, done)
		if err != nil {
			return fmt.Errorf("%s: complete: %w", worker, err)
		}
		for i, r := range res {
			if r.Err != nil {
				return fmt.Errorf("%s: complete %s: %w", worker, jobs[i].ID, r.Err)
			}
		}
	}
}

// checkClaimedOnce reads every job's events (a few readers at a time) and
// checks that each has exactly one claimed event and ended succeeded.
func (h *harness) checkClaimedOnce(ids []string) {
	h.t.Helper()
	const readers = 8
	problems := make(chan string, len(ids))
	var wg sync.WaitGroup
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := r; i < len(ids); i += readers {
				evs, err := h.s.JobEvents(h.ctx, ids[i])
				if err != nil {
					problems <- fmt.Sprintf("events of %s: %v", ids[i], err)
					continue
				}
				claims := 0
				for _, e := range evs {
					if e.Type == lifecycle.EventClaimed {
						claims++
					}
				}
				if claims != 1 || len(evs) != 4 || evs[3].ToState != lifecycle.Succeeded {
					problems <- fmt.Sprintf("job %s: %d claimed events, log %s; want one claim and succeeded", ids[i], claims, asJSON(evs))
				}
			}
		}()
	}
	wg.Wait()
	close(problems)
	n := 0
	for p := range problems {
		if n++; n <= 20 {
			h.t.Error(p)
		}
	}
	if n > 0 {
		h.t.Errorf("%d jobs were not claimed exactly once", n)
	}
}
