package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// TestStepsOverAPI: the step calls of WorkerService and JobService. Bad
// input is refused with a typed error and changes nothing; a step is
// fenced on the lease and on the tenant; a retried RecordStep returns the
// first record; signals are kept once; a suspend whose signal is there is
// refused with wait_over, and a signal wakes a job that waits for it.
func TestStepsOverAPI(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		client, worker := e.token("acme", store.RoleClient), e.token("acme", store.RoleWorker)
		otherClient, otherWorker := e.token("umbrella", store.RoleClient), e.token("umbrella", store.RoleWorker)
		ctx, w, jobs := t.Context(), e.worker(worker), e.jobs(client)
		j := e.claimed(client, worker)
		events := func() int {
			res, err := jobs.ListEvents(ctx, connect.NewRequest(&stintv1.ListEventsRequest{JobId: j.Id}))
			if err != nil {
				t.Fatal(err)
			}
			return len(res.Msg.Events)
		}
		steps := func() []*stintv1.Step {
			res, err := w.GetSteps(ctx, connect.NewRequest(&stintv1.GetStepsRequest{Owner: owner(j, "get")}))
			if err != nil {
				t.Fatal(err)
			}
			return res.Msg.Steps
		}
		before := events()

		record := func(m *stintv1.RecordStepRequest) error {
			_, err := w.RecordStep(ctx, connect.NewRequest(m))
			return err
		}
		ok := func() *stintv1.RecordStepRequest {
			return &stintv1.RecordStepRequest{Owner: owner(j, "r1"), Seq: 1, Name: "charge", Output: `{"id":12345678901234567}`, DurationMs: 3}
		}
		bad := []struct {
			name string
			edit func(m *stintv1.RecordStepRequest)
			kind error
			msg  string
		}{
			{"no owner", func(m *stintv1.RecordStepRequest) { m.Owner = nil }, store.ErrValidation, "owner is required"},
			{"seq 0", func(m *stintv1.RecordStepRequest) { m.Seq = 0 }, store.ErrValidation, "numbered from 1"},
			{"seq not next", func(m *stintv1.RecordStepRequest) { m.Seq = 2 }, store.ErrValidation, "next step is 1"},
			{"no name", func(m *stintv1.RecordStepRequest) { m.Name = " " }, store.ErrValidation, "name is required"},
			{"unknown kind", func(m *stintv1.RecordStepRequest) { m.Kind = "bogus" }, store.ErrValidation, "kind"},
			{"output not JSON", func(m *stintv1.RecordStepRequest) { m.Output = "{" }, store.ErrValidation, "not JSON text"},
			{"unknown status", func(m *stintv1.RecordStepRequest) { m.Status = "maybe" }, store.ErrValidation, "status"},
			{"error without code", func(m *stintv1.RecordStepRequest) { m.Status, m.Output = "error", "" }, store.ErrValidation, "error_code is required"},
			{"ok with error code", func(m *stintv1.RecordStepRequest) { m.ErrorCode = "x" }, store.ErrValidation, "go with status error"},
			{"negative duration", func(m *stintv1.RecordStepRequest) { m.DurationMs = -1 }, store.ErrValidation, "negative"},
			{"too large", func(m *stintv1.RecordStepRequest) { m.Output = `"` + strings.Repeat("x", store.MaxStepBytes) + `"` }, store.ErrStepTooLarge, "limit"},
			{"stale lease", func(m *stintv1.RecordStepRequest) { m.Owner.LeaseId = "not-the-lease" }, store.ErrStaleLease, ""},
		}
		for _, c := range bad {
			t.Run(c.name, func(t *testing.T) {
				m := ok()
				c.edit(m)
				err := record(m)
				if !errors.Is(kindOf(err), c.kind) || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("error %v (kind %v), want %v mentioning %q", err, kindOf(err), c.kind, c.msg)
				}
			})
		}
		suspends := []struct {
			name string
			m    *stintv1.SuspendRequest
			msg  string
		}{
			{"no wake time", &stintv1.SuspendRequest{Owner: owner(j, "s")}, "until or after is required"},
			{"both times", &stintv1.SuspendRequest{Owner: owner(j, "s"), Until: timestamppb.Now(), After: durationpb.New(time.Second)}, "not both"},
			{"negative delay", &stintv1.SuspendRequest{Owner: owner(j, "s"), After: durationpb.New(-time.Second)}, "negative"},
			{"signal and child", &stintv1.SuspendRequest{Owner: owner(j, "s"), After: durationpb.New(time.Second), Signal: "a", Child: "b"}, "not both"},
		}
		for _, c := range suspends {
			t.Run("suspend "+c.name, func(t *testing.T) {
				_, err := w.Suspend(ctx, connect.NewRequest(c.m))
				if !errors.Is(kindOf(err), store.ErrValidation) || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("error %v, want a validation error mentioning %q", err, c.msg)
				}
			})
		}
		if n := events(); n != before || len(steps()) != 0 {
			t.Fatalf("bad input changed the job: %d events (was %d), %d steps", n, before, len(steps()))
		}

		// Another tenant sees no such job; a stale lease reads nothing.
		if _, err := e.worker(otherWorker).RecordStep(ctx, connect.NewRequest(ok())); !errors.Is(kindOf(err), store.ErrNotFound) {
			t.Fatalf("another tenant's worker: %v", err)
		}
		if _, err := e.worker(otherWorker).GetSteps(ctx, connect.NewRequest(&stintv1.GetStepsRequest{Owner: owner(j, "g")})); !errors.Is(kindOf(err), store.ErrNotFound) {
			t.Fatalf("another tenant's worker reads: %v", err)
		}
		if _, err := e.jobs(otherClient).ListSteps(ctx, connect.NewRequest(&stintv1.ListStepsRequest{Id: j.Id})); !errors.Is(kindOf(err), store.ErrNotFound) {
			t.Fatalf("another tenant's client reads: %v", err)
		}
		stale := owner(j, "g")
		stale.LeaseId = "not-the-lease"
		if _, err := w.GetSteps(ctx, connect.NewRequest(&stintv1.GetStepsRequest{Owner: stale})); !errors.Is(kindOf(err), store.ErrStaleLease) {
			t.Fatalf("a stale lease reads: %v", err)
		}
	})
}

// TestStepsOverAPIRecordAndSignal: a step recorded over the API, retried,
// read back byte for byte; signals kept once and waking a waiting job.
func TestStepsOverAPIRecordAndSignal(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		client, worker := e.token("acme", store.RoleClient), e.token("acme", store.RoleWorker)
		ctx, w, jobs := t.Context(), e.worker(worker), e.jobs(client)
		j := e.claimed(client, worker)
		m := &stintv1.RecordStepRequest{Owner: owner(j, "r1"), Seq: 1, Name: "charge", Output: `{"id":12345678901234567}`, DurationMs: 3}
		first, err := w.RecordStep(ctx, connect.NewRequest(m))
		if err != nil {
			t.Fatal(err)
		}
		again, err := w.RecordStep(ctx, connect.NewRequest(m))
		if err != nil {
			t.Fatalf("the same request again: %v", err)
		}
		if got := again.Msg.Step; got.Output != `{"id":12345678901234567}` || got.Seq != 1 || got.Kind != store.StepRun ||
			!got.RecordedAt.AsTime().Equal(first.Msg.Step.RecordedAt.AsTime()) {
			t.Fatalf("the retry's record %v, first %v", got, first.Msg.Step)
		}
		// The same request id for another step is another request.
		m2 := &stintv1.RecordStepRequest{Owner: owner(j, "r1"), Seq: 2, Name: "ship"}
		if _, err := w.RecordStep(ctx, connect.NewRequest(m2)); !errors.Is(kindOf(err), store.ErrRequestConflict) {
			t.Fatalf("a reused request id: %v", err)
		}
		// A step failed with on_error continue records its error.
		m2.Owner.RequestId, m2.Status, m2.ErrorCode, m2.ErrorMessage = "r2", store.StepError, "declined", "card declined"
		if res, err := w.RecordStep(ctx, connect.NewRequest(m2)); err != nil || res.Msg.Step.Error.GetCode() != "declined" {
			t.Fatalf("an error step: %v %v", res, err)
		}

		// Signals: the first of a name is kept; a suspend for it is over.
		if res, err := w.GetSignal(ctx, connect.NewRequest(&stintv1.GetSignalRequest{Owner: owner(j, "g"), Name: "go"})); err != nil || res.Msg.Found {
			t.Fatalf("no signal yet: %v %v", res, err)
		}
		for _, c := range []struct {
			m    *stintv1.SignalJobRequest
			kind error
		}{
			{&stintv1.SignalJobRequest{Id: j.Id, Name: ""}, store.ErrValidation},
			{&stintv1.SignalJobRequest{Id: j.Id, Name: "go", Payload: "{"}, store.ErrValidation},
			{&stintv1.SignalJobRequest{Id: "no-such-job", Name: "go"}, store.ErrNotFound},
		} {
			if _, err := jobs.SignalJob(ctx, connect.NewRequest(c.m)); !errors.Is(kindOf(err), c.kind) {
				t.Fatalf("signal %v: %v, want %v", c.m, err, c.kind)
			}
		}
		if _, err := jobs.SignalJob(ctx, connect.NewRequest(&stintv1.SignalJobRequest{Id: j.Id, Name: "go", Payload: `{"n":1}`})); err != nil {
			t.Fatal(err)
		}
		if _, err := jobs.SignalJob(ctx, connect.NewRequest(&stintv1.SignalJobRequest{Id: j.Id, Name: "go"})); !errors.Is(kindOf(err), store.ErrSignalTaken) {
			t.Fatalf("a second signal of the name: %v", err)
		}
		if res, err := w.GetSignal(ctx, connect.NewRequest(&stintv1.GetSignalRequest{Owner: owner(j, "g"), Name: "go"})); err != nil || !res.Msg.Found || res.Msg.Signal.Payload != `{"n":1}` {
			t.Fatalf("the signal: %v %v", res, err)
		}
		if _, err := w.Suspend(ctx, connect.NewRequest(&stintv1.SuspendRequest{Owner: owner(j, "s1"), After: durationpb.New(time.Hour), Signal: "go"})); !errors.Is(kindOf(err), store.ErrWaitOver) {
			t.Fatalf("a suspend for a signal already there: %v", err)
		}

		// Waiting for another signal: the lease goes back; the signal wakes it.
		res, err := w.Suspend(ctx, connect.NewRequest(&stintv1.SuspendRequest{Owner: owner(j, "s2"), After: durationpb.New(time.Hour), Signal: "approve"}))
		if err != nil || res.Msg.Job.State != stintv1.JobState_JOB_STATE_SCHEDULED {
			t.Fatalf("suspend: %v %v", res, err)
		}
		if _, err := w.GetSteps(ctx, connect.NewRequest(&stintv1.GetStepsRequest{Owner: owner(j, "g")})); !errors.Is(kindOf(err), store.ErrStaleLease) {
			t.Fatalf("the lease given back still reads: %v", err)
		}
		if _, err := jobs.SignalJob(ctx, connect.NewRequest(&stintv1.SignalJobRequest{Id: j.Id, Name: "approve", Payload: "true"})); err != nil {
			t.Fatal(err)
		}
		got, err := jobs.GetJob(ctx, connect.NewRequest(&stintv1.GetJobRequest{Id: j.Id}))
		if err != nil || got.Msg.Job.State != stintv1.JobState_JOB_STATE_QUEUED {
			t.Fatalf("after the signal: %v %v; want queued", got, err)
		}
		list, err := jobs.ListSteps(ctx, connect.NewRequest(&stintv1.ListStepsRequest{Id: j.Id}))
		if err != nil || len(list.Msg.Steps) != 2 || len(list.Msg.Signals) != 2 || list.Msg.Steps[0].Output != `{"id":12345678901234567}` {
			t.Fatalf("ListSteps: %v %v", list, err)
		}
	})
}
