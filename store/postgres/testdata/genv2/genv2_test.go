// Package genv2 made testdata/v2.sql and testdata/v2_golden.json: a schema of
// the layout before migration 0003 (jobs and events as JSON documents, a
// provenance table) holding a job in every lifecycle state, and what the
// store of that release returned for each. It builds against that release
// only (commit b2a90b5), not this tree: it sits under testdata so the go
// tool leaves it alone. To make the files again:
//
//	git archive b2a90b5 | tar -x -C /tmp/v2src
//	cp genv2_test.go /tmp/v2src/store/postgres/
//	cd /tmp/v2src && GENV2_OUT=$PWD/out STINT_TEST_DATABASE_URL=... go test -run TestGenV2 ./store/postgres/
//
// (it replaces the schema's name in the dump with __SCHEMA__; drop the dump's \restrict lines
// and its schema_migrations rows, which the upgrade test's migrator writes).
package postgres_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

type golden struct {
	Name       string                `json:"name"`
	Job        store.Job             `json:"job"`
	Events     []store.Event         `json:"events"`
	Provenance *lifecycle.Provenance `json:"provenance"`
}

func TestGenV2(t *testing.T) {
	out := os.Getenv("GENV2_OUT")
	if out == "" {
		t.Skip("GENV2_OUT is not set")
	}
	ctx := context.Background()
	d := pgtest.NewDriver(t, postgres.Options{})
	s := store.New(d, store.Options{})
	now := time.Date(2026, time.March, 4, 5, 6, 7, 123456000, time.UTC)
	tick := func() *time.Time { now = now.Add(1500 * time.Millisecond); at := now; return &at }
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	seq := 0
	type fx struct{ id, queue, worker, lease string }
	enqueue := func(opt func(*lifecycle.Spec)) fx {
		seq++
		q := "q" + string(rune('a'+seq))
		deadline := now.Add(24 * time.Hour)
		sp := lifecycle.Spec{Kind: "email.send", Queue: q, Payload: json.RawMessage(`{"to": "a<b>&c", "n": [1, 2.50]}`),
			Tenant: "acme", Priority: seq % 3, Env: map[string]string{"REGION": "eu", "X": "y"},
			Timeout: 90 * time.Second, Deadline: &deadline, CorrelationID: "corr-1", TraceID: "trace-1",
			Budget: &lifecycle.Budget{MaxSteps: 100, MaxCost: 50, MaxRuntime: lifecycle.Duration(time.Hour)}}
		if seq%2 == 0 {
			sp.DedupeKey = "dk-" + q
			sp.Topic = "orders"
			sp.ContextPtr = "s3://bucket/ctx"
			sp.RunID, sp.StepIndex, sp.ParentJobID = "run-7", seq, "parent-1"
			sp.Timeout, sp.Deadline, sp.Budget = 0, nil, nil
			sp.MaxAttempts = 5
		}
		if opt != nil {
			opt(&sp)
		}
		res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{sp}, ActorID: "producer", RequestID: "req-" + q, Now: tick()})
		must("enqueue", err)
		return fx{id: res[0].Job.ID, queue: q}
	}
	claim := func(f *fx) {
		f.worker = "worker-" + f.queue
		jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: f.worker, Queues: []string{f.queue}, Limit: 1, LeaseTTL: time.Minute, Now: tick()})
		must("claim", err)
		f.lease = jobs[0].LeaseID
	}
	own := func(f fx) store.OwnerParams { return store.OwnerParams{JobID: f.id, LeaseID: f.lease, Now: tick()} }
	running := func(opt func(*lifecycle.Spec)) fx {
		f := enqueue(opt)
		claim(&f)
		p := own(f)
		_, err := s.JobStart(ctx, &p)
		must("start", err)
		return f
	}
	var jobs []struct{ name, id string }
	add := func(name string, f fx) { jobs = append(jobs, struct{ name, id string }{name, f.id}) }

	add("queued", enqueue(nil))
	add("scheduled", enqueue(func(s *lifecycle.Spec) { at := now.Add(time.Hour); s.RunAt = &at }))
	add("blocked", enqueue(func(s *lifecycle.Spec) { s.DependsOn = []string{"upstream-a", "upstream-b"} }))
	add("denied", enqueue(func(s *lifecycle.Spec) { s.DenyReason = "admission policy: tenant over quota" }))
	{
		f := enqueue(nil)
		claim(&f)
		add("claimed", f)
	}
	{
		f := running(nil)
		for i := 0; i < 3; i++ {
			_, err := s.JobHeartbeat(ctx, &store.JobHeartbeatParams{OwnerParams: own(f), LeaseTTL: time.Minute,
				Progress: json.RawMessage(`{"done": ` + string(rune('1'+i)) + `}`), Phase: "copying"})
			must("heartbeat", err)
		}
		_, err := s.JobCheckpoint(ctx, &store.JobCheckpointParams{OwnerParams: own(f), Checkpoint: json.RawMessage(`{"cursor":"abc"}`),
			Progress: json.RawMessage(`{"done":4}`), Phase: "writing", Steps: 3, Cost: 7})
		must("checkpoint", err)
		add("running_heartbeats", f)
	}
	{
		f := running(nil)
		_, err := s.JobCancel(ctx, &store.JobCancelParams{JobID: f.id, Reason: "operator asked", ActorID: "ops", RequestID: "cancel-1", Now: tick()})
		must("cancel", err)
		add("cancel_requested", f)
	}
	{
		f := running(nil)
		_, err := s.JobRelease(ctx, &store.JobReleaseParams{OwnerParams: own(f), Reason: "shutting down"})
		must("release", err)
		add("stalled", f)
	}
	{
		f := running(nil)
		_, err := s.JobFail(ctx, &store.JobFailParams{OwnerParams: own(f), Error: lifecycle.JobError{Code: "network", Message: "connection reset"}, ExecutionMS: 12})
		must("fail", err)
		add("retrying_last_error", f)
	}
	{
		f := running(nil)
		_, err := s.JobFail(ctx, &store.JobFailParams{OwnerParams: own(f), Error: lifecycle.JobError{Code: "network", Message: "connection reset"}})
		must("fail", err)
		_, err = s.JobApply(ctx, &store.JobApplyParams{JobID: f.id, Command: lifecycle.Command{Op: lifecycle.OpPromote, Actor: lifecycle.ActorSystem, ActorID: "promoter"}, Now: tick()})
		must("promote", err)
		claim(&f)
		p := own(f)
		_, err = s.JobStart(ctx, &p)
		must("start 2", err)
		res, err := s.JobComplete(ctx, []store.JobCompleteParams{{OwnerParams: own(f), Result: json.RawMessage(`{"ok": true, "html": "<b>&</b>"}`), ExecutionMS: 40}})
		must("complete", err)
		must("complete", res[0].Err)
		add("succeeded_after_retry", f)
	}
	{
		f := running(nil)
		res, err := s.JobComplete(ctx, []store.JobCompleteParams{{OwnerParams: own(f), ResultPtr: "s3://bucket/result", ExecutionMS: 5}})
		must("complete", err)
		must("complete", res[0].Err)
		add("succeeded_result_ptr", f)
	}
	{
		f := running(nil)
		res, err := s.JobComplete(ctx, []store.JobCompleteParams{{OwnerParams: own(f)}})
		must("complete", err)
		must("complete", res[0].Err)
		add("succeeded_no_result", f)
	}
	{
		f := running(func(s *lifecycle.Spec) { s.MaxAttempts = 1; s.OnExhausted = lifecycle.Failed })
		_, err := s.JobFail(ctx, &store.JobFailParams{OwnerParams: own(f), Error: lifecycle.JobError{Code: "compile_error", Message: "syntax", Class: lifecycle.ErrorClass("permanent")}})
		must("fail", err)
		add("failed", f)
	}
	{
		f := running(func(s *lifecycle.Spec) { s.MaxAttempts = 1 })
		_, err := s.JobFail(ctx, &store.JobFailParams{OwnerParams: own(f), Error: lifecycle.JobError{Code: "boom", Message: "exhausted"}})
		must("fail", err)
		add("dead_lettered_exhausted", f)
	}
	{
		f := enqueue(nil)
		_, err := s.JobDeadLetter(ctx, &store.JobDeadLetterParams{OwnerParams: store.OwnerParams{JobID: f.id, Now: tick()}, ReasonCode: lifecycle.ReasonParseError})
		must("dead_letter", err)
		add("dead_lettered_parse", f)
	}
	{
		f := enqueue(nil)
		_, err := s.JobCancel(ctx, &store.JobCancelParams{JobID: f.id, ActorID: "ops", Now: tick()})
		must("cancel", err)
		add("cancelled", f)
	}
	{
		f := running(nil)
		_, err := s.JobCancel(ctx, &store.JobCancelParams{JobID: f.id, Hard: true, ActorID: "ops", Reason: "now", Now: tick()})
		must("hard cancel", err)
		add("cancelled_hard", f)
	}
	{
		f := enqueue(func(s *lifecycle.Spec) { at := now.Add(time.Minute); s.Deadline = &at })
		now = now.Add(2 * time.Minute)
		_, err := s.JobApply(ctx, &store.JobApplyParams{JobID: f.id, Command: lifecycle.Command{Op: lifecycle.OpTimeOut, Deadline: true, Actor: lifecycle.ActorSystem, ActorID: "reaper"}, Now: tick()})
		must("time out", err)
		add("timed_out", f)
	}
	{
		f := running(nil)
		_, err := s.JobHalt(ctx, &store.JobHaltParams{OwnerParams: own(f), ReasonCode: "step_limit", Reason: "the handler reached its step limit"})
		must("halt", err)
		add("halted", f)
	}

	var gold []golden
	for _, j := range jobs {
		g := golden{Name: j.name}
		var err error
		g.Job, err = s.JobGet(ctx, j.id)
		must("get", err)
		g.Events, err = s.JobEvents(ctx, j.id)
		must("events", err)
		if p, err := s.JobProvenance(ctx, j.id); err == nil {
			g.Provenance = &p
		}
		if g.Job.State.Terminal() && g.Provenance == nil {
			t.Fatalf("%s: terminal without provenance", j.name)
		}
		gold = append(gold, g)
	}
	b, err := json.MarshalIndent(gold, "", "  ")
	must("marshal", err)
	must("mkdir", os.MkdirAll(out, 0o755))
	must("write golden", os.WriteFile(filepath.Join(out, "v2_golden.json"), append(b, '\n'), 0o644))

	dump, err := exec.Command("pg_dump", "--data-only", "--inserts", "--no-owner", "--no-privileges", "-n", d.Schema(), pgtest.URL(t)).Output()
	must("pg_dump", err)
	sql := strings.ReplaceAll(string(dump), d.Schema(), "__SCHEMA__")
	must("write dump", os.WriteFile(filepath.Join(out, "v2.sql"), []byte(sql), 0o644))
}
