package store_test

import (
	"testing"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// TestAdmissionFromJSON: rules read by ParseAdmission (the --admission
// file of `stint dev` and `stint server`) deny on both backends.
func TestAdmissionFromJSON(t *testing.T) {
	t.Parallel()
	policy, err := store.ParseAdmission([]byte(`{"rules": [{"tenant": "free", "max_live_jobs": 1, "max_priority": 0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, store.Options{Admission: policy})
			res, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{
				{Kind: "k", Tenant: "free"}, {Kind: "k", Tenant: "free"}, {Kind: "k", Tenant: "paid", Priority: 5}}})
			if err != nil {
				t.Fatal(err)
			}
			if got := []lifecycle.State{res[0].Job.State, res[1].Job.State, res[2].Job.State}; got[0] != lifecycle.Queued || got[1] != lifecycle.Denied || got[2] != lifecycle.Queued {
				t.Fatalf("states %v, want queued, denied (over max_live_jobs), queued (another tenant)", got)
			}
			verifyClean(t, s)
		})
	}
}
