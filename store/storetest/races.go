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

// raceJobs is how many jobs each race test runs; the racers go at once.
const raceJobs = 48

// testRaces runs requests that contend for the same jobs at the same time
// and checks that exactly one side of each race took the job: one outcome
// per job, one event per accepted transition, and a refused loser.
func testRaces(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("reaper_against_owners", func(t *testing.T) { t.Parallel(); testReaperRace(t, newStore) })
	t.Run("cancel_against_owners", func(t *testing.T) { t.Parallel(); testCancelRace(t, newStore) })
	t.Run("two_owners_of_one_lease", func(t *testing.T) { t.Parallel(); testTwinOwners(t, newStore) })
}

// runningJobs enqueues n jobs in one queue and claims and starts them all
// for one worker, returning them with their leases.
func (h *harness) runningJobs(n int) []fixture {
	h.t.Helper()
	h.enqueueMany(n, func(int) lifecycle.Spec { return lifecycle.Spec{Kind: "race", Queue: "race"} })
	jobs, err := h.s.JobClaim(h.ctx, &store.JobClaimParams{WorkerID: "owner", Queues: []string{"race"}, Limit: n, LeaseTTL: time.Minute, Start: true, Now: h.tick()})
	if err != nil || len(jobs) != n {
		h.t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	out := make([]fixture, n)
	for i, j := range jobs {
		out[i] = fixture{ID: j.ID, Queue: j.Queue, Worker: j.Owner, Lease: j.LeaseID}
	}
	return out
}

// race runs each racer in its own goroutine, all released at once.
func race(racers ...func()) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for _, r := range racers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			r()
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// testReaperRace: the reaper, judging leases expired at its time, races
// owners completing (each at a time its lease was still valid). Every job
// ends either succeeded (the owner won; the reaper skipped it) or stalled
// (the reaper won; the owner's completion was refused as stale).
func testReaperRace(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	jobs := h.runningJobs(raceJobs)
	ownerAt, reaperAt := h.now.Add(30*time.Second), h.now.Add(2*time.Minute)
	results := make([]error, len(jobs))
	reaped := 0
	var racers []func()
	for i, f := range jobs {
		racers = append(racers, func() {
			res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: ownerAt1(f, ownerAt), Result: json.RawMessage(`1`)}})
			if err == nil {
				err = res[0].Err
			}
			results[i] = err
		})
	}
	var reapErr error
	racers = append(racers, func() {
		for range raceJobs { // one job a pass, so passes land between completions
			n, err := h.s.JobStallExpired(h.ctx, &store.MaintainParams{Limit: 1, Now: &reaperAt})
			reaped += n
			if err != nil {
				reapErr = err
			}
		}
	})
	race(racers...)
	if reapErr != nil {
		t.Fatalf("reaper: %v", reapErr)
	}
	stalled := 0
	for i, f := range jobs {
		s := h.snap(f.ID)
		switch {
		case results[i] == nil && s.Job.State == lifecycle.Succeeded:
		case s.Job.State == lifecycle.Stalled && rejectionProblem(results[i], store.ErrStaleLease) == "":
			stalled++
		default:
			t.Errorf("job %s ended %s; the owner's completion returned %v: want succeeded, or stalled with the completion refused as stale", f.ID, s.Job.State, results[i])
		}
		checkJob(t, s)
	}
	if stalled != reaped {
		t.Errorf("the reaper reported %d stalls, %d jobs are stalled", reaped, stalled)
	}
	t.Logf("%d jobs: the reaper took %d, the owners %d", len(jobs), stalled, len(jobs)-stalled)
}

func ownerAt1(f fixture, at time.Time) store.OwnerParams {
	return store.OwnerParams{JobID: f.ID, LeaseID: f.Lease, Now: &at}
}

// testCancelRace: hard cancels race owners completing: each job ends
// cancelled or succeeded, and whichever lost was refused.
func testCancelRace(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	jobs := h.runningJobs(raceJobs)
	at := *h.tick()
	completed, cancelled := make([]error, len(jobs)), make([]error, len(jobs))
	var racers []func()
	for i, f := range jobs {
		racers = append(racers,
			func() {
				res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: ownerAt1(f, at), Result: json.RawMessage(`1`)}})
				if err == nil {
					err = res[0].Err
				}
				completed[i] = err
			},
			func() {
				_, cancelled[i] = h.s.JobCancel(h.ctx, &store.JobCancelParams{JobID: f.ID, Hard: true, Now: &at})
			})
	}
	race(racers...)
	for i, f := range jobs {
		s := h.snap(f.ID)
		var problem string
		switch s.Job.State {
		case lifecycle.Succeeded:
			problem = firstProblem(errString(completed[i]), rejectionProblem(cancelled[i], store.ErrInvalidTransition))
		case lifecycle.Cancelled:
			problem = firstProblem(errString(cancelled[i]), rejectionProblem(completed[i], store.ErrStaleLease))
		default:
			problem = fmt.Sprintf("state %s", s.Job.State)
		}
		if problem != "" {
			t.Errorf("job %s ended %s (complete: %v, cancel: %v): %s", f.ID, s.Job.State, completed[i], cancelled[i], problem)
		}
		checkJob(t, s)
	}
}

// testTwinOwners: two copies of one owner (the same lease) complete the
// same job at once, as a retried request might: one succeeds, the other is
// the idempotent repeat; one succeeded event.
func testTwinOwners(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	jobs := h.runningJobs(raceJobs)
	at := *h.tick()
	errs := make([]error, 2*len(jobs))
	var racers []func()
	for i, f := range jobs {
		for k := range 2 {
			racers = append(racers, func() {
				res, err := h.s.JobComplete(h.ctx, []store.JobCompleteParams{{OwnerParams: ownerAt1(f, at), Result: json.RawMessage(`1`)}})
				if err == nil {
					err = res[0].Err
				}
				errs[2*i+k] = err
			})
		}
	}
	race(racers...)
	for i, f := range jobs {
		s := h.snap(f.ID)
		if errs[2*i] != nil || errs[2*i+1] != nil || s.Job.State != lifecycle.Succeeded {
			t.Errorf("job %s: %s after two completions with one lease (%v, %v); want succeeded and both answered as done", f.ID, s.Job.State, errs[2*i], errs[2*i+1])
		}
		checkJob(t, s)
	}
}

func errString(err error) string {
	if err != nil {
		return err.Error()
	}
	return ""
}

func firstProblem(ps ...string) string {
	for _, p := range ps {
		if p != "" {
			return p
		}
	}
	return ""
}
