package remote_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	stint "github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestRunsThroughServer: a producer creates runs with stint.NewClient over
// a server, and a stock pool on a remote worker store works them: a CI run
// (its lint allowed to fail) succeeds, its planner adding a job to its own
// run through AddToRun; a required failure fails its run and cancels its
// dependents; a rerun of the failed jobs only and a cancel go over the API
// too. On both backends.
func TestRunsThroughServer(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			url, clientTok, workerTok := serve(t, s)
			producer := dial(t, url, clientTok)
			client, err := stint.NewClient(producer, stint.ClientConfig{ActorID: "test"})
			if err != nil {
				t.Fatal(err)
			}
			workers := dial(t, url, workerTok)
			added := make(chan stint.RunView, 1)
			mux := stint.NewMux()
			mux.HandleFunc("ok", func(context.Context, *stint.Job) error { return nil })
			mux.HandleFunc("bad", func(context.Context, *stint.Job) error { return stint.Permanent(errors.New("bad on purpose")) })
			started := make(chan struct{}, 1)
			mux.HandleFunc("block", func(ctx context.Context, j *stint.Job) error {
				started <- struct{}{}
				<-ctx.Done() // until the run's cancel reaches it
				return ctx.Err()
			})
			mux.HandleFunc("plan", func(ctx context.Context, j *stint.Job) error {
				v, err := j.AddToRun(ctx, stint.RunJob{Name: "extra", DependsOn: []string{"plan"}, Spec: lifecycle.Spec{Kind: "ok", Queue: "ci"}})
				if err != nil {
					return err
				}
				added <- v
				return nil
			})
			pool, err := stint.NewPool(workers, mux, stint.Config{Queues: map[string]int{"ci": 4},
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := pool.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			defer pool.Stop(context.Background())
			job := func(name, kind string, deps ...string) stint.RunJob {
				return stint.RunJob{Name: name, DependsOn: deps, Spec: lifecycle.Spec{Kind: kind, Queue: "ci", MaxAttempts: 1}}
			}

			// A CI run with a planner and an allowed failure: it succeeds.
			lint := job("lint", "bad", "plan")
			lint.AllowFailure = true
			plan := job("plan", "plan")
			plan.Planner = true
			ci, err := client.CreateRun(t.Context(), stint.RunSpec{Name: "ci"},
				[]stint.RunJob{plan, job("test", "ok", "plan"), lint, job("deploy", "ok", "test", "lint")})
			if err != nil {
				t.Fatal(err)
			}
			if ci.Run.Tenant != "acme" || len(ci.Jobs) != 4 {
				t.Fatalf("created %+v", ci)
			}
			got := waitRun(t, client, ci.Run.ID)
			if got.Run.State != lifecycle.RunSucceeded {
				t.Fatalf("ci run is %s (%s), want succeeded: %+v", got.Run.State, got.Run.Reason, got.Jobs)
			}
			if v := <-added; len(v.Jobs) != 5 {
				t.Fatalf("AddToRun answered %d jobs, want 5", len(v.Jobs))
			}
			states := map[string]lifecycle.State{}
			for _, j := range got.Jobs {
				states[j.Name] = j.State
			}
			if states["extra"] != lifecycle.Succeeded || states["lint"] == lifecycle.Succeeded || states["deploy"] != lifecycle.Succeeded {
				t.Fatalf("job states %v", states)
			}
			evs, err := client.RunEvents(t.Context(), ci.Run.ID)
			if err != nil || len(evs) < 3 || evs[0].Type != lifecycle.RunEventCreated {
				t.Fatalf("run events %+v, %v", evs, err)
			}
			// The job rows of the run are the tenant's, in its namespace.
			j, err := s.JobGet(t.Context(), ci.Jobs[0].JobID)
			if err != nil || j.Tenant != "acme" || j.Queue != "acme/ci" {
				t.Fatalf("stored job %s/%s, %v", j.Tenant, j.Queue, err)
			}

			// A required failure: the run fails, its dependent is cancelled.
			failing, err := client.CreateRun(t.Context(), stint.RunSpec{Name: "fails"},
				[]stint.RunJob{job("build", "ok"), job("test", "bad", "build"), job("deploy", "ok", "test")})
			if err != nil {
				t.Fatal(err)
			}
			got = waitRun(t, client, failing.Run.ID)
			if got.Run.State != lifecycle.RunFailed {
				t.Fatalf("failing run is %s, want failed", got.Run.State)
			}
			deploy, err := producer.JobGet(t.Context(), got.Jobs[2].JobID)
			if err != nil || deploy.State != lifecycle.Cancelled || deploy.ReasonCode != lifecycle.ReasonUpstreamFailed {
				t.Fatalf("deploy is %s [%s], %v; want cancelled upstream_failed", deploy.State, deploy.ReasonCode, err)
			}

			// Rerun of the failed jobs only: build succeeded and is left out.
			rerun, err := client.RerunRun(t.Context(), failing.Run.ID, true)
			if err != nil {
				t.Fatal(err)
			}
			if rerun.Run.RerunOf != failing.Run.ID || len(rerun.Jobs) != 2 || rerun.Jobs[0].Name != "test" {
				t.Fatalf("rerun %+v", rerun)
			}
			if got := waitRun(t, client, rerun.Run.ID); got.Run.State != lifecycle.RunFailed {
				t.Fatalf("rerun is %s, want failed (test still fails)", got.Run.State)
			}

			// Cancel: a run on a queue nobody works ends cancelled at once.
			idle, err := client.CreateRun(t.Context(), stint.RunSpec{Name: "idle"},
				[]stint.RunJob{{Name: "wait", Spec: lifecycle.Spec{Kind: "ok", Queue: "idle"}}})
			if err != nil {
				t.Fatal(err)
			}
			v, err := client.CancelRun(t.Context(), idle.Run.ID, "not needed")
			if err != nil || v.Run.State != lifecycle.RunCancelled || v.Jobs[0].State != lifecycle.Cancelled {
				t.Fatalf("cancel: %+v, %v", v, err)
			}

			// Two-phase: a running job is asked to stop, its handler's
			// context ends, and the run is cancelled once it acknowledged.
			busy, err := client.CreateRun(t.Context(), stint.RunSpec{Name: "busy"},
				[]stint.RunJob{job("long", "block"), job("after", "ok", "long")})
			if err != nil {
				t.Fatal(err)
			}
			<-started
			v, err = client.CancelRun(t.Context(), busy.Run.ID, "enough")
			if err != nil || (v.Run.State != lifecycle.RunCancelRequested && v.Run.State != lifecycle.RunCancelled) {
				t.Fatalf("cancel of a running run: %+v, %v", v.Run, err)
			}
			if got := waitRun(t, client, busy.Run.ID); got.Run.State != lifecycle.RunCancelled || got.Jobs[0].State != lifecycle.Cancelled {
				t.Fatalf("busy run is %s with %+v, want cancelled", got.Run.State, got.Jobs)
			}

			// Lists see the tenant's runs; a bad plan writes nothing.
			runs, err := client.ListRuns(t.Context(), store.RunListParams{})
			if err != nil || len(runs) != 5 {
				t.Fatalf("ListRuns: %d runs, %v; want 5", len(runs), err)
			}
			_, err = client.CreateRun(t.Context(), stint.RunSpec{}, []stint.RunJob{job("a", "ok", "b"), job("b", "ok", "a")})
			if !errors.Is(err, store.ErrValidation) {
				t.Fatalf("a cycle: %v, want a validation error", err)
			}
			if runs, _ := client.ListRuns(t.Context(), store.RunListParams{}); len(runs) != 5 {
				t.Fatalf("%d runs after a refused plan, want 5", len(runs))
			}
		})
	}
}

// waitRun polls until run id has ended.
func waitRun(t *testing.T, c *stint.Client, id string) stint.RunView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := c.GetRun(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if v.Run.State.Terminal() {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s after 60s: %+v", id, v.Run.State, v.Jobs)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
