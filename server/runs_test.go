package server_test

import (
	"errors"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

func (e *env) runs(secret string) stintv1connect.RunServiceClient {
	return stintv1connect.NewRunServiceClient(http.DefaultClient, e.url, bearer(secret))
}

func rj(name, kind string, deps ...string) *stintv1.RunJobSpec {
	return &stintv1.RunJobSpec{Name: name, DependsOn: deps, Job: &stintv1.Spec{Kind: kind, Queue: "ci"}}
}

// createRun creates a run of build -> test with the client token.
func (e *env) createRun(client string) *stintv1.RunView {
	e.t.Helper()
	res, err := e.runs(client).CreateRun(e.t.Context(), connect.NewRequest(&stintv1.CreateRunRequest{
		Name: "ci", Jobs: []*stintv1.RunJobSpec{rj("build", "k"), rj("test", "k", "build")}}))
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Msg.Run
}

// TestRunsTenantSweep: every run RPC called by tenant b with tenant a's run
// id (or a's running job of a run) answers NotFound and changes nothing;
// b's run list never shows a's runs.
func TestRunsTenantSweep(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		ctx := t.Context()
		aClient, aWorker, bAdmin := e.token("a", store.RoleClient), e.token("a", store.RoleWorker), e.token("b", store.RoleAdmin)
		run := e.createRun(aClient)
		if run.Run.Tenant != "a" || run.Run.State != stintv1.RunState_RUN_STATE_QUEUED {
			t.Fatalf("created %+v", run.Run)
		}
		claim, err := e.worker(aWorker).Claim(ctx, connect.NewRequest(&stintv1.ClaimRequest{Queues: []string{"ci"}, Start: true}))
		if err != nil || len(claim.Msg.Jobs) != 1 {
			t.Fatalf("claim: %v %v", claim, err)
		}
		running := claim.Msg.Jobs[0]
		before, err := s.RunGet(ctx, run.Run.Id)
		if err != nil {
			t.Fatal(err)
		}
		r, w := e.runs(bAdmin), e.worker(bAdmin)
		id := run.Run.Id
		calls := map[string]func() error{
			"GetRun": func() error {
				_, err := r.GetRun(ctx, connect.NewRequest(&stintv1.GetRunRequest{Id: id}))
				return err
			},
			"ListRunEvents": func() error {
				_, err := r.ListRunEvents(ctx, connect.NewRequest(&stintv1.ListRunEventsRequest{RunId: id}))
				return err
			},
			"CancelRun": func() error {
				_, err := r.CancelRun(ctx, connect.NewRequest(&stintv1.CancelRunRequest{Id: id}))
				return err
			},
			"RerunRun": func() error {
				_, err := r.RerunRun(ctx, connect.NewRequest(&stintv1.RerunRunRequest{Id: id}))
				return err
			},
			"AddRunJobs": func() error {
				_, err := w.AddRunJobs(ctx, connect.NewRequest(&stintv1.AddRunJobsRequest{Owner: owner(running, "b-1"),
					Jobs: []*stintv1.RunJobSpec{rj("extra", "k")}}))
				return err
			},
		}
		for name, call := range calls {
			if err := call(); connect.CodeOf(err) != connect.CodeNotFound {
				t.Errorf("%s with another tenant's run: %v, want not_found", name, err)
			}
		}
		list, err := r.ListRuns(ctx, connect.NewRequest(&stintv1.ListRunsRequest{}))
		if err != nil || len(list.Msg.Runs) != 0 {
			t.Fatalf("tenant b lists %d runs (%v), want 0", len(list.Msg.GetRuns()), err)
		}
		after, err := s.RunGet(ctx, id)
		if err != nil || after.Run.Rev != before.Run.Rev || len(after.Jobs) != len(before.Jobs) {
			t.Fatalf("the run changed: rev %d -> %d, %d -> %d jobs (%v)", before.Run.Rev, after.Run.Rev, len(before.Jobs), len(after.Jobs), err)
		}
		// Tenant a sees its own.
		list, err = e.runs(aClient).ListRuns(ctx, connect.NewRequest(&stintv1.ListRunsRequest{}))
		if err != nil || len(list.Msg.Runs) != 1 {
			t.Fatalf("tenant a lists %d runs (%v), want 1", len(list.Msg.GetRuns()), err)
		}
		// A worker token may not create runs; a client may not add to one.
		if _, err := e.runs(aWorker).GetRun(ctx, connect.NewRequest(&stintv1.GetRunRequest{Id: id})); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Fatalf("a worker reading a run: %v, want permission_denied", err)
		}
		if _, err := e.worker(aClient).AddRunJobs(ctx, connect.NewRequest(&stintv1.AddRunJobsRequest{})); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Fatalf("a client adding jobs: %v, want permission_denied", err)
		}
	})
}

// TestRunBadPlans: a plan the store or the server refuses answers
// invalid_argument and writes nothing.
func TestRunBadPlans(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		client := e.token("acme", store.RoleClient)
		dedupe := rj("a", "k")
		dedupe.Job.DedupeKey = "x"
		slash := rj("a", "k")
		slash.Job.Queue = "other/q"
		bad := map[string]*stintv1.CreateRunRequest{
			"cycle":              {Jobs: []*stintv1.RunJobSpec{rj("a", "k", "b"), rj("b", "k", "a")}},
			"unknown depends_on": {Jobs: []*stintv1.RunJobSpec{rj("a", "k"), rj("b", "k", "nope")}},
			"duplicate name":     {Jobs: []*stintv1.RunJobSpec{rj("a", "k"), rj("a", "k")}},
			"no jobs":            {Name: "empty"},
			"no spec":            {Jobs: []*stintv1.RunJobSpec{{Name: "a"}}},
			"no name":            {Jobs: []*stintv1.RunJobSpec{rj("", "k")}},
			"no kind":            {Jobs: []*stintv1.RunJobSpec{rj("a", "")}},
			"dedupe key":         {Jobs: []*stintv1.RunJobSpec{dedupe}},
			"queue with slash":   {Jobs: []*stintv1.RunJobSpec{slash}},
			"on_failure 9":       {OnFailure: 9, Jobs: []*stintv1.RunJobSpec{rj("a", "k")}},
			"NUL in name":        {Name: "a\x00b", Jobs: []*stintv1.RunJobSpec{rj("a", "k")}},
		}
		for name, req := range bad {
			_, err := e.runs(client).CreateRun(t.Context(), connect.NewRequest(req))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !errors.Is(kindOf(err), store.ErrValidation) {
				t.Errorf("%s: %v, want invalid_argument", name, err)
			}
		}
		runs, err := s.RunList(t.Context(), &store.RunListParams{})
		if err != nil || len(runs) != 0 || e.count() != 0 {
			t.Fatalf("after refused plans: %d runs, %d jobs (%v); want none", len(runs), e.count(), err)
		}
		// An unknown run state in a list is refused too.
		if _, err := e.runs(client).ListRuns(t.Context(), connect.NewRequest(&stintv1.ListRunsRequest{States: []stintv1.RunState{42}})); connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("ListRuns with state 42: %v", err)
		}
	})
}

// TestAddRunJobsOverAPI: the running owner adds jobs to its own run; a
// retry with the same request id answers the run again and adds nothing; a
// stale lease is refused.
func TestAddRunJobsOverAPI(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		ctx := t.Context()
		client, worker := e.token("acme", store.RoleClient), e.token("acme", store.RoleWorker)
		run := e.createRun(client)
		claim, err := e.worker(worker).Claim(ctx, connect.NewRequest(&stintv1.ClaimRequest{Queues: []string{"ci"}, Start: true}))
		if err != nil || len(claim.Msg.Jobs) != 1 {
			t.Fatalf("claim: %v", err)
		}
		j := claim.Msg.Jobs[0]
		req := &stintv1.AddRunJobsRequest{Owner: owner(j, "add-1"), Jobs: []*stintv1.RunJobSpec{rj("extra", "k", "build")}}
		first, err := e.worker(worker).AddRunJobs(ctx, connect.NewRequest(req))
		if err != nil || len(first.Msg.Run.Jobs) != 3 {
			t.Fatalf("AddRunJobs: %v %v", first, err)
		}
		again, err := e.worker(worker).AddRunJobs(ctx, connect.NewRequest(req))
		if err != nil || len(again.Msg.Run.Jobs) != 3 {
			t.Fatalf("AddRunJobs retried: %v %v", again, err)
		}
		evs, err := s.RunEvents(ctx, run.Run.Id)
		if err != nil {
			t.Fatal(err)
		}
		added := 0
		for _, ev := range evs {
			if ev.Type == lifecycle.RunEventJobsAdded {
				added++
			}
		}
		if added != 1 {
			t.Fatalf("%d jobs_added events after a retry, want 1", added)
		}
		stale := owner(j, "add-2")
		stale.LeaseId = "not-the-lease"
		_, err = e.worker(worker).AddRunJobs(ctx, connect.NewRequest(&stintv1.AddRunJobsRequest{Owner: stale, Jobs: []*stintv1.RunJobSpec{rj("more", "k")}}))
		if !errors.Is(kindOf(err), store.ErrStaleLease) {
			t.Fatalf("a stale lease: %v, want stale_lease", err)
		}
		if v, _ := s.RunGet(ctx, run.Run.Id); len(v.Jobs) != 3 {
			t.Fatalf("%d jobs after a stale add, want 3", len(v.Jobs))
		}
	})
}

// TestCreateRunJSON: the README's curl body creates a run over plain JSON;
// a cycle in the same form is a 400 and writes nothing.
func TestCreateRunJSON(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		client := e.token(server.DefaultTenant, store.RoleClient)
		code, out := e.post(client, "/stint.v1.RunService/CreateRun", []byte(`{"name":"ci","jobs":[{"name":"build","job":{"kind":"build"}},{"name":"test","job":{"kind":"test"},"depends_on":["build"]}]}`))
		if code != 200 {
			t.Fatalf("CreateRun over JSON: %d %v", code, out)
		}
		code, out = e.post(client, "/stint.v1.RunService/CreateRun", []byte(`{"jobs":[{"name":"a","job":{"kind":"k"},"depends_on":["a"]}]}`))
		if code != 400 || out["code"] != "invalid_argument" {
			t.Fatalf("a cycle over JSON: %d %v", code, out)
		}
		if n := e.count(); n != 2 {
			t.Fatalf("%d jobs, want the first run's 2", n)
		}
	})
}
