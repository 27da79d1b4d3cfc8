package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// RunPlan is the JSON form of a run (stint runs create --file plan.json).
type RunPlan struct {
	ID        string       `json:"id,omitempty"`
	Name      string       `json:"name,omitempty"`
	Tenant    string       `json:"tenant,omitempty"`
	OnFailure string       `json:"on_failure,omitempty"` // cancel (default) or continue
	Timeout   string       `json:"timeout,omitempty"`    // a Go duration: "30m"
	Jobs      []RunPlanJob `json:"jobs"`
}

// RunPlanJob is one job of a RunPlan.
type RunPlanJob struct {
	Name         string            `json:"name"`
	Kind         string            `json:"kind"`
	Queue        string            `json:"queue,omitempty"`
	Priority     int               `json:"priority,omitempty"`
	Payload      json.RawMessage   `json:"payload,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	MaxAttempts  int               `json:"max_attempts,omitempty"`
	Timeout      string            `json:"timeout,omitempty"`
	DependsOn    []string          `json:"depends_on,omitempty"`
	AllowFailure bool              `json:"allow_failure,omitempty"`
	NeedsSuccess bool              `json:"needs_success,omitempty"`
	Planner      bool              `json:"planner,omitempty"`
}

// ParseRunPlan reads a plan, refusing unknown fields, and returns the
// params to create it. The graph and the jobs are checked by RunCreate.
func ParseRunPlan(b []byte) (RunCreateParams, error) {
	var p RunPlan
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return RunCreateParams{}, lifecycle.Validationf("run plan: %v; expected {\"name\": ..., \"jobs\": [{\"name\": ..., \"kind\": ..., \"depends_on\": [...]}]}", err)
	}
	dur := func(what, s string) (time.Duration, error) {
		if s == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, lifecycle.Validationf("run plan: %s %q: give a duration such as 30s or 10m", what, s)
		}
		return d, nil
	}
	timeout, err := dur("timeout", p.Timeout)
	if err != nil {
		return RunCreateParams{}, err
	}
	out := RunCreateParams{Run: lifecycle.RunSpec{ID: p.ID, Name: p.Name, Tenant: p.Tenant,
		OnFailure: lifecycle.FailurePolicy(p.OnFailure), Timeout: timeout}}
	for _, j := range p.Jobs {
		jt, err := dur(fmt.Sprintf("job %q timeout", j.Name), j.Timeout)
		if err != nil {
			return RunCreateParams{}, err
		}
		out.Jobs = append(out.Jobs, RunJobSpec{Name: j.Name, DependsOn: j.DependsOn, AllowFailure: j.AllowFailure,
			NeedsSuccess: j.NeedsSuccess, Planner: j.Planner, Spec: lifecycle.Spec{Kind: j.Kind, Queue: j.Queue,
				Priority: j.Priority, Payload: j.Payload, Env: j.Env, Tenant: p.Tenant, MaxAttempts: j.MaxAttempts, Timeout: jt}})
	}
	return out, nil
}
