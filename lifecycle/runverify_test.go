package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// TestVerifyRunColumns: every run column an event sets, and timeout_at, is
// checked; a row changed in any one of them gives a finding naming it.
func TestVerifyRunColumns(t *testing.T) {
	t.Parallel()
	r, ev, err := lifecycle.NewRun(lifecycle.RunSpec{ID: "r2", RerunOf: "r1", Timeout: time.Hour}, runT0)
	if err != nil {
		t.Fatal(err)
	}
	events := []lifecycle.RunEvent{ev}
	for i, cmd := range []lifecycle.RunCommand{
		{Op: lifecycle.RunOpStart, Actor: lifecycle.ActorSystem},
		{Op: lifecycle.RunOpFail, Actor: lifecycle.ActorSystem, ReasonCode: "job_failed", Reason: `required job "a" ended failed`},
		{Op: lifecycle.RunOpReport, Actor: lifecycle.ActorSystem, Reason: "final status delivered"},
	} {
		s, err := lifecycle.ApplyRun(r, cmd, runT0.Add(time.Duration(i+1)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		r, events = s.Run, append(events, *s.Event)
	}
	if r.ReasonCode != "job_failed" || r.RerunOf != "r1" {
		t.Fatalf("run %+v", r)
	}
	if err := lifecycle.VerifyRun(r, events); err != nil {
		t.Fatalf("verify of a clean run: %v", err)
	}
	hour := func(p **time.Time) {
		t := (**p).Add(time.Hour)
		*p = &t
	}
	for column, change := range map[string]func(*lifecycle.Run){
		"state":       func(r *lifecycle.Run) { r.State = lifecycle.RunCancelled },
		"rev":         func(r *lifecycle.Run) { r.Rev++ },
		"reason_code": func(r *lifecycle.Run) { r.ReasonCode = "plan_failed" },
		"reason":      func(r *lifecycle.Run) { r.Reason += "!" },
		"rerun_of":    func(r *lifecycle.Run) { r.RerunOf = "r0" },
		"created_at":  func(r *lifecycle.Run) { r.CreatedAt = r.CreatedAt.Add(-time.Hour) },
		"started_at":  func(r *lifecycle.Run) { hour(&r.StartedAt) },
		"finished_at": func(r *lifecycle.Run) { r.FinishedAt = r.StartedAt },
		"reported_at": func(r *lifecycle.Run) { hour(&r.ReportedAt) },
		"updated_at":  func(r *lifecycle.Run) { r.UpdatedAt = r.UpdatedAt.Add(time.Minute) },
		"timeout_at":  func(r *lifecycle.Run) { hour(&r.TimeoutAt) },
	} {
		bad := r
		change(&bad)
		err := lifecycle.VerifyRun(bad, events)
		if err == nil || !strings.Contains(err.Error(), column+":") {
			t.Errorf("%s changed: %v; want a finding naming it", column, err)
		}
	}
}
