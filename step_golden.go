package stint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/step"
	"github.com/stint-dev/stint/store"
)

// Golden is a finished job's recorded steps as a file (`stint jobs
// export-steps ID`).
type Golden = step.Golden

// Divergence is where a handler's replay of a golden file parted from it:
// the step (place and name) and what differs.
type Divergence struct {
	Seq     int
	Name    string
	Problem string
}

func (d *Divergence) Error() string {
	if d.Seq == 0 {
		return "replay diverged: " + d.Problem
	}
	return fmt.Sprintf("replay diverged at step %d %q: %s", d.Seq, d.Name, d.Problem)
}

// ReplayGolden runs h once against the golden file g, as the attempt after
// the last one would: every step gets its recorded result back, its
// function never runs, and the job's seed is the recorded one. It returns
// the first divergence (a step asked for under another name or kind at a
// place, a step the golden job never recorded, fewer steps than recorded,
// or a final result that differs), or nil when the handler replays g
// exactly. Nothing is written anywhere: the handler's Checkpoint, Progress
// and Phase calls fail.
func ReplayGolden(ctx context.Context, g Golden, h Handler) error {
	gs := &goldenStore{g: g}
	rec := lifecycle.Job{ID: g.JobID, Kind: g.Kind, Payload: g.Payload, State: lifecycle.Running, Attempt: 1,
		LeaseID: "golden-replay", Env: map[string]string{lifecycle.SeedEnv: fmt.Sprint(g.Seed)},
		// Every recorded sleep and wait is over by then.
		UpdatedAt: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := &Pool{store: gs, clock: clock.System{}}
	a := &attempt{p: p, ctx: ctx, claimed: time.Now()}
	a.job = &Job{rec: rec, a: a}
	err := callSafely(ctx, h, a.job)
	if gs.div != nil {
		return gs.div
	}
	if errors.Is(err, step.ErrNondeterministic) {
		return &Divergence{Problem: err.Error()}
	}
	if err != nil && g.State == lifecycle.Succeeded {
		return &Divergence{Problem: "the golden job succeeded, but the replay returned: " + err.Error()}
	}
	return gs.finish(a.job)
}

// finish compares the end of a replay with the golden job's.
func (gs *goldenStore) finish(j *Job) error {
	used := 0
	j.mu.Lock()
	if j.stepRun != nil {
		used = j.stepRun.Places()
	}
	j.mu.Unlock()
	if used < len(gs.g.Steps) && gs.g.State.Terminal() {
		s := gs.g.Steps[used]
		return &Divergence{Seq: s.Seq, Name: s.Name, Problem: fmt.Sprintf("the handler finished after %d steps; the golden job recorded %d", used, len(gs.g.Steps))}
	}
	j.mu.Lock()
	got := j.result
	j.mu.Unlock()
	if gs.g.State == lifecycle.Succeeded && !sameJSON(got, gs.g.Result) {
		return &Divergence{Problem: fmt.Sprintf("the result is %s; the golden job's was %s", orNull(got), orNull(gs.g.Result))}
	}
	return nil
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	_ = json.Compact(&x, orNull(a))
	_ = json.Compact(&y, orNull(b))
	return bytes.Equal(x.Bytes(), y.Bytes())
}

func orNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	return r
}

var _ store.StepStore = (*goldenStore)(nil)

// goldenStore serves a replay's steps from a golden file and records the
// first step the handler asks for beyond it.
type goldenStore struct {
	store.Store // nil: a replay writes nothing
	g           Golden
	div         *Divergence
}

func (gs *goldenStore) diverge(seq int, name, problem string) error {
	if gs.div == nil {
		gs.div = &Divergence{Seq: seq, Name: name, Problem: problem}
	}
	return gs.div
}

func (gs *goldenStore) JobSteps(context.Context, string) ([]store.StepRecord, error) {
	return gs.g.Steps, nil
}

func (gs *goldenStore) JobStepRecord(_ context.Context, p *store.JobStepParams) (JobRecord, store.StepRecord, error) {
	return JobRecord{}, store.StepRecord{}, gs.diverge(p.Seq, p.Name, fmt.Sprintf("the handler asks for a new %s step the golden job never recorded (it has %d)", p.Kind, len(gs.g.Steps)))
}

func (gs *goldenStore) JobStepChild(_ context.Context, p *store.JobStepChildParams) (store.ChildStep, error) {
	return store.ChildStep{}, gs.diverge(p.Seq, p.Name, fmt.Sprintf("the handler starts a child the golden job never started (it has %d steps)", len(gs.g.Steps)))
}

// JobGet is the read of an awaited child that the golden job did not
// await: a replay reads nothing.
func (gs *goldenStore) JobGet(_ context.Context, id string) (JobRecord, error) {
	return JobRecord{}, gs.diverge(0, "", "the handler awaits child "+id+", which the golden job did not")
}

func (gs *goldenStore) JobSuspend(_ context.Context, p *store.JobSuspendParams) (JobRecord, error) {
	return JobRecord{}, gs.diverge(0, "", "the handler waits for "+p.Wait+", which the golden job did not")
}

func (gs *goldenStore) JobSignal(context.Context, *store.JobSignalParams) (store.Signal, error) {
	return store.Signal{}, gs.diverge(0, "", "the handler sends a signal during a replay")
}

func (gs *goldenStore) JobSignalGet(context.Context, string, string) (store.Signal, bool, error) {
	return store.Signal{}, false, nil
}

func (gs *goldenStore) JobSignals(context.Context, string) ([]store.Signal, error) { return nil, nil }
