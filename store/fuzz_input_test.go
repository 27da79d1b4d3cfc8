package store_test

import (
	"errors"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// FuzzParseAdmission feeds arbitrary admission files (`--admission FILE`):
// never a panic, and a refusal is a validation error.
func FuzzParseAdmission(f *testing.F) {
	f.Add([]byte(`{"rules":[{"name":"cap","tenant":"acme","queue":"q","kind":"k","max_queued":10}]}`))
	f.Add([]byte(`[{"name":"x","max_running":1}]`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := store.ParseAdmission(data); err != nil && !errors.Is(err, lifecycle.ErrValidation) {
			t.Fatalf("ParseAdmission: %v is not a validation error", err)
		}
	})
}

// FuzzParseRunPlanYAML feeds arbitrary YAML run plans (`stint runs create
// plan.yaml`): never a panic (YAML anchors, aliases, deep nesting and
// odd scalars included), a refusal is a validation error, and a plan it
// takes has a valid payload on every job.
func FuzzParseRunPlanYAML(f *testing.F) {
	f.Add([]byte("name: build\njobs:\n  - name: a\n    kind: k\n    payload: {x: [1, 2, {y: z}]}\n  - name: b\n    kind: k\n    depends_on: [a]\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("name: n\njobs: [{name: a, kind: k, payload: !!binary aGVsbG8=}]\n"))
	f.Add([]byte("name: n\njobs: [{name: a, kind: k, payload: {1: 2}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := store.ParseRunPlanYAML(data)
		if err != nil {
			if !errors.Is(err, lifecycle.ErrValidation) {
				t.Fatalf("ParseRunPlanYAML: %v is not a validation error", err)
			}
			return
		}
		for _, j := range p.Jobs {
			if err := lifecycle.CheckJSON("payload", j.Spec.Payload); len(j.Spec.Payload) > 0 && err != nil {
				t.Fatalf("accepted job %q with a payload the store refuses: %v", j.Name, err)
			}
		}
	})
}
