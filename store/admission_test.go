package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

func TestAdmission(t *testing.T) {
	t.Parallel()
	two, four := 2, 4
	policy := &store.Admission{
		Rules: []store.AdmissionRule{
			{Tenant: "acme", Kinds: []string{"send", "bill"}},
			{Tenant: "acme", MaxLiveJobs: 2},
			{Queue: "small", MaxPayloadBytes: 10},
			{Tenant: "free", MaxPriority: &two},
			{Tenant: "default", MaxPriority: &four}, // the API's name of the "" tenant
		},
		Hook: func(_ context.Context, s lifecycle.Spec) (string, error) {
			switch s.Kind {
			case "forbidden":
				return "the hook says no", nil
			case "broken":
				return "", errors.New("policy service unreachable")
			}
			return "", nil
		},
	}
	cases := []struct {
		name   string
		before []lifecycle.Spec // enqueued first, admitted
		spec   lifecycle.Spec
		reason string // "" when admitted
	}{
		{name: "admitted", spec: lifecycle.Spec{Kind: "send", Tenant: "acme"}},
		{name: "kind not allowed", spec: lifecycle.Spec{Kind: "mine", Tenant: "acme"}, reason: `kind "mine" is not allowed`},
		{name: "payload too big", spec: lifecycle.Spec{Kind: "x", Queue: "small", Payload: json.RawMessage(`"0123456789"`)}, reason: "payload is 12 bytes, the limit is 10"},
		{name: "priority too high", spec: lifecycle.Spec{Kind: "x", Tenant: "free", Priority: 3}, reason: "priority 3 is above"},
		{name: "live jobs", before: []lifecycle.Spec{{Kind: "send", Tenant: "acme"}, {Kind: "bill", Tenant: "acme"}},
			spec: lifecycle.Spec{Kind: "send", Tenant: "acme"}, reason: `tenant "acme" has 2 live jobs, the limit is 2`},
		{name: "hook", spec: lifecycle.Spec{Kind: "forbidden"}, reason: "the hook says no"},
		{name: "default tenant by name", spec: lifecycle.Spec{Kind: "x", Priority: 5}, reason: "priority 5 is above"},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					s := b.open(t, store.Options{Admission: policy})
					ctx := t.Context()
					if len(c.before) > 0 {
						if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: c.before}); err != nil {
							t.Fatal(err)
						}
					}
					res, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: []lifecycle.Spec{c.spec}})
					if err != nil {
						t.Fatal(err)
					}
					j := res[0].Job
					if c.reason == "" {
						if j.State != lifecycle.Queued {
							t.Fatalf("state %s (%s), want queued", j.State, j.Reason)
						}
						return
					}
					if j.State != lifecycle.Denied || !strings.Contains(j.Reason, c.reason) {
						t.Fatalf("got %s %q, want denied with %q", j.State, j.Reason, c.reason)
					}
					// The denied job is stored with its one denied event, and it is never claimable.
					evs, err := s.JobEvents(ctx, j.ID)
					if err != nil {
						t.Fatal(err)
					}
					if len(evs) != 1 || evs[0].Type != lifecycle.EventDenied || evs[0].Reason != j.Reason {
						t.Fatalf("events %+v, want one denied event", evs)
					}
					all, err := s.JobList(ctx, &store.JobListParams{})
					if err != nil {
						t.Fatal(err)
					}
					if len(all) != len(c.before)+1 {
						t.Fatalf("%d jobs stored, want %d", len(all), len(c.before)+1)
					}
					claimed, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{"default", "small"}, Limit: 10, LeaseTTL: 60e9})
					if err != nil {
						t.Fatal(err)
					}
					for _, cj := range claimed {
						if cj.ID == j.ID {
							t.Fatal("a denied job was claimed")
						}
					}
					verifyClean(t, s)
				})
			}
			t.Run("batch counts towards the limit", func(t *testing.T) {
				t.Parallel()
				s := b.open(t, store.Options{Admission: policy})
				specs := []lifecycle.Spec{{Kind: "send", Tenant: "acme"}, {Kind: "send", Tenant: "acme"}, {Kind: "send", Tenant: "acme"}}
				res, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs})
				if err != nil {
					t.Fatal(err)
				}
				if res[0].Job.State != lifecycle.Queued || res[1].Job.State != lifecycle.Queued || res[2].Job.State != lifecycle.Denied {
					t.Fatalf("states %s %s %s, want queued queued denied", res[0].Job.State, res[1].Job.State, res[2].Job.State)
				}
				verifyClean(t, s)
			})
			t.Run("hook error writes nothing", func(t *testing.T) {
				t.Parallel()
				s := b.open(t, store.Options{Admission: policy})
				_, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "ok"}, {Kind: "broken"}}})
				if err == nil || !strings.Contains(err.Error(), "policy service unreachable") {
					t.Fatalf("err %v, want the hook's error", err)
				}
				all, err := s.JobList(t.Context(), &store.JobListParams{})
				if err != nil || len(all) != 0 {
					t.Fatalf("%d jobs stored (%v), want none", len(all), err)
				}
			})
		})
	}
}

func verifyClean(t *testing.T, s store.Store) {
	t.Helper()
	rep, err := s.Verify(t.Context(), &store.VerifyParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) > 0 {
		t.Fatalf("verify: %+v", rep.Findings)
	}
}
