package store_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

const planJSON = `{"id": "ci-1", "name": "ci", "tenant": "acme", "on_failure": "continue", "timeout": "30m", "jobs": [
  {"name": "build", "kind": "build", "queue": "ci", "priority": 5, "payload": {"commit": "abc123", "date": "2026-01-02", "flags": ["-race", "-v"], "n": 3, "ok": true},
   "env": {"GOFLAGS": "-mod=mod"}, "max_attempts": 2, "timeout": "10m", "planner": true},
  {"name": "test", "kind": "test", "depends_on": ["build"], "needs_success": true},
  {"name": "lint", "kind": "lint", "depends_on": ["build"], "allow_failure": true},
  {"name": "deploy", "kind": "deploy", "depends_on": ["test", "lint"], "payload": [1, 2.5, null, "x"]}]}`

const planYAML = `# the same plan as planJSON
id: ci-1
name: ci
tenant: acme
on_failure: continue
timeout: 30m
jobs:
  - name: build
    kind: build
    queue: ci
    priority: 5
    payload:
      commit: abc123
      flags: [-race, -v]
      n: 3
      ok: true
      date: 2026-01-02
    env: {GOFLAGS: -mod=mod}
    max_attempts: 2
    timeout: 10m
    planner: true
  - name: test
    kind: test
    depends_on: [build]
    needs_success: true
  - {name: lint, kind: lint, depends_on: [build], allow_failure: true}
  - name: deploy
    kind: deploy
    depends_on: [test, lint]
    payload: [1, 2.5, null, x]
`

// compact gives every job's payload its compact JSON form, as a job stores it.
func compact(t *testing.T, p store.RunCreateParams) store.RunCreateParams {
	t.Helper()
	for i := range p.Jobs {
		if p.Jobs[i].Spec.Payload == nil {
			continue
		}
		var b bytes.Buffer
		if err := json.Compact(&b, p.Jobs[i].Spec.Payload); err != nil {
			t.Fatal(err)
		}
		p.Jobs[i].Spec.Payload = b.Bytes()
	}
	return p
}

// TestRunPlanYAMLEqualsJSON: a YAML plan gives the very params of its JSON
// twin, whichever way the format is chosen.
func TestRunPlanYAMLEqualsJSON(t *testing.T) {
	want, err := store.ParseRunPlan([]byte(planJSON))
	if err != nil {
		t.Fatal(err)
	}
	want = compact(t, want)
	for _, c := range []struct{ name, text string }{
		{"plan.yaml", planYAML}, {"plan.YML", planYAML}, {"-", planYAML}, {"-", planJSON}, {"plan.json", planJSON}, {"plan", planJSON},
	} {
		got, err := store.ParseRunPlanFile(c.name, []byte(c.text))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got = compact(t, got); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v\nwant %+v", c.name, got, want)
		}
	}
}

// TestRunPlanYAMLRefusals: what the JSON plan refuses the YAML plan refuses,
// as a validation error saying what is wrong; and YAML's own mistakes.
func TestRunPlanYAMLRefusals(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"unknown field", "name: ci\njobs:\n  - name: a\n    kind: k\n    dependson: [b]\n", "line 5: field dependson not found"},
		{"unknown top field", "nmae: ci\njobs: []\n", "field nmae not found"},
		{"bad duration", "timeout: soon\njobs: [{name: a, kind: k}]\n", `timeout "soon": give a duration`},
		{"bad job duration", "jobs: [{name: a, kind: k, timeout: 5 minutes}]\n", `job "a" timeout "5 minutes"`},
		{"wrong type", "jobs: [{name: a, kind: k, priority: high}]\n", "cannot unmarshal"},
		{"not a mapping", "- a\n- b\n", "cannot unmarshal"},
		{"syntax", "jobs: [{name: a, kind: k\n", "yaml:"},
		{"empty", "", "the plan is empty"},
		{"two documents", "jobs: []\n---\njobs: []\n", "more than one document"},
		{"payload with non-string keys", "jobs: [{name: a, kind: k, payload: {1: one}}]\n", `job "a" payload`},
	} {
		_, err := store.ParseRunPlanFile("plan.yaml", []byte(c.text))
		if !errors.Is(err, lifecycle.ErrValidation) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a validation error mentioning %q", c.name, err, c.want)
		}
	}
}
