package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// tb is what the checks need of a test: a *testing.T or a *rapid.T.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// snapshot is everything the store says about one job.
type snapshot struct {
	Job    store.Job
	Events []store.Event
	// Prov is the provenance record, nil while the job is not terminal.
	Prov *store.Provenance
}

// snap reads a job, its events and its provenance record.
func (h *harness) snap(id string) snapshot {
	h.t.Helper()
	s := snapshot{Job: h.get(id)}
	evs, err := h.s.JobEvents(h.ctx, id)
	if err != nil {
		h.t.Fatalf("events of %s: %v", id, err)
	}
	s.Events = evs
	p, err := h.s.JobProvenance(h.ctx, id)
	switch {
	case err == nil:
		s.Prov = &p
	case !errors.Is(err, store.ErrNotFound):
		h.t.Fatalf("provenance of %s: %v", id, err)
	}
	return s
}

// unchanged fails the test unless the job's row, event log and provenance
// are exactly as in before.
func (h *harness) unchanged(before snapshot) {
	h.t.Helper()
	after := h.snap(before.Job.ID)
	if !reflect.DeepEqual(before.Job, after.Job) {
		h.t.Errorf("the job row changed:\nbefore %s\nafter  %s", asJSON(before.Job), asJSON(after.Job))
	}
	if !reflect.DeepEqual(before.Events, after.Events) {
		h.t.Errorf("the event log changed: %d events before, %d after\nbefore %s\nafter  %s",
			len(before.Events), len(after.Events), asJSON(before.Events), asJSON(after.Events))
	}
	if !reflect.DeepEqual(before.Prov, after.Prov) {
		h.t.Errorf("the provenance record changed:\nbefore %s\nafter  %s", asJSON(before.Prov), asJSON(after.Prov))
	}
}

// census counts the jobs and events in the whole store (through Verify, the
// one read that sees everything) and fails on any Verify finding.
type census struct{ Jobs, Events int }

func (h *harness) census() census {
	h.t.Helper()
	rep, err := h.s.Verify(h.ctx, &store.VerifyParams{})
	if err != nil {
		h.t.Fatalf("verify: %v", err)
	}
	for _, f := range rep.Findings {
		h.t.Errorf("verify finding: job %s: %s", f.JobID, f.Problem)
	}
	return census{Jobs: rep.Jobs, Events: rep.Events}
}

// rejected fails the test unless err is the typed rejection want: a
// *lifecycle.Error whose condition is the store sentinel want.
func rejected(t tb, err, want error) {
	t.Helper()
	if p := rejectionProblem(err, want); p != "" {
		t.Fatalf("%s", p)
	}
}

// rejectionProblem says how err falls short of the typed rejection want, or
// returns "".
func rejectionProblem(err, want error) string {
	var le *lifecycle.Error
	switch {
	case err == nil:
		return fmt.Sprintf("accepted; want a %q rejection", want)
	case !errors.Is(err, want):
		return fmt.Sprintf("error %q is not %q", err, want)
	case !errors.As(err, &le):
		return fmt.Sprintf("error %q is not a typed *lifecycle.Error", err)
	}
	return ""
}

// sentinels are the store's error conditions, in the order kindOf tries them.
var sentinels = []error{
	store.ErrValidation, store.ErrNotFound, store.ErrInvalidTransition,
	store.ErrStaleLease, store.ErrRevisionConflict, store.ErrRequestConflict,
}

// kindOf returns the sentinel err wraps, or nil.
func kindOf(err error) error {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}

// checkJob checks what must hold for every job the store returns: the
// lifecycle's per-state invariants (owner and lease, result and error,
// timestamps in order: LI-3), an event log that replays to the row, and for
// a terminal job a provenance record that matches it (LI-4).
func checkJob(t tb, s snapshot) {
	t.Helper()
	if err := lifecycle.Verify(s.Job, s.Events); err != nil {
		t.Errorf("job %s: %v", s.Job.ID, err)
	}
	if int64(len(s.Events)) != s.Job.Rev {
		t.Errorf("job %s: %d events, rev %d: every accepted mutation appends exactly one event", s.Job.ID, len(s.Events), s.Job.Rev)
	}
	checkTimes(t, s.Job)
	checkProvenance(t, s)
}

// checkTimes checks LI-3: created_at <= started_at <= finished_at.
func checkTimes(t tb, j store.Job) {
	t.Helper()
	if j.StartedAt != nil && j.StartedAt.Before(j.CreatedAt) {
		t.Errorf("job %s: started_at %s before created_at %s (LI-3)", j.ID, j.StartedAt, j.CreatedAt)
	}
	if j.FinishedAt != nil && j.FinishedAt.Before(j.CreatedAt) {
		t.Errorf("job %s: finished_at %s before created_at %s (LI-3)", j.ID, j.FinishedAt, j.CreatedAt)
	}
	if j.FinishedAt != nil && j.StartedAt != nil && j.FinishedAt.Before(*j.StartedAt) {
		t.Errorf("job %s: finished_at %s before started_at %s (LI-3)", j.ID, j.FinishedAt, j.StartedAt)
	}
}

// checkProvenance checks LI-4: a terminal job has a provenance record that
// matches it, and a live job has none.
func checkProvenance(t tb, s snapshot) {
	t.Helper()
	j, p := s.Job, s.Prov
	if !j.State.Terminal() {
		if p != nil {
			t.Errorf("job %s is %s but has a provenance record", j.ID, j.State)
		}
		return
	}
	if p == nil {
		t.Errorf("terminal job %s (%s) has no provenance record (LI-4)", j.ID, j.State)
		return
	}
	switch {
	case p.JobID != j.ID, p.FinalState != j.State, p.Attempts != j.Attempt, p.LastOwner != j.LastOwner:
		t.Errorf("provenance %s does not match job %s", asJSON(p), asJSON(j))
	case !p.CreatedAt.Equal(j.CreatedAt), j.FinishedAt == nil || !p.FinishedAt.Equal(*j.FinishedAt), !sameTime(p.StartedAt, j.StartedAt):
		t.Errorf("provenance timings %s do not match job %s", asJSON(p), asJSON(j))
	case p.Events != int64(len(s.Events)):
		t.Errorf("provenance of %s counts %d events; the log has %d", j.ID, p.Events, len(s.Events))
	case (p.ResultDigest != "") != (j.State == lifecycle.Succeeded):
		t.Errorf("provenance of %s (%s): result digest %q should be present exactly for a succeeded job", j.ID, j.State, p.ResultDigest)
	}
}

// digestOf is the digest a reader recomputes from a stored result.
func digestOf(j store.Job) string {
	sum := sha256.Sum256(append(append([]byte(nil), j.Result...), j.ResultPtr...))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// sameJob reports whether two jobs say the same thing. It compares their
// JSON, which ignores what a round trip through a database may change but
// does not matter (a time's location, the spacing of a JSON payload).
func sameJob(a, b store.Job) bool { return asJSON(a) == asJSON(b) }

func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}
