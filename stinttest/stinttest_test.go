package stinttest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/stinttest"
	"github.com/stint-dev/stint/store"
)

func TestWorkOne(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler stint.HandlerFunc
		want    stint.State
	}{
		{"success", func(ctx context.Context, j *stint.Job) error { return j.SetResult(j.Attempt()) }, stint.Succeeded},
		{"transient error", func(ctx context.Context, j *stint.Job) error { return errors.New("try later") }, stint.Retrying},
		{"permanent error", func(ctx context.Context, j *stint.Job) error { return stint.Permanent(errors.New("no")) }, stint.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := stinttest.NewStore(t)
			mux := stint.NewMux()
			mux.Handle("k", tc.handler)
			j := stinttest.WorkOne(t, s, mux, stint.Spec{Kind: "k"})
			if j.State != tc.want || j.Attempt != 1 {
				t.Errorf("state %s after %d attempts, want %s after 1", j.State, j.Attempt, tc.want)
			}
		})
	}
}

func TestDrainWorksJobsAndTheJobsTheyEnqueue(t *testing.T) {
	t.Parallel()
	s := stinttest.NewStore(t)
	c, _ := stint.NewClient(s, stint.ClientConfig{})
	mux := stint.NewMux()
	mux.HandleFunc("parent", func(ctx context.Context, j *stint.Job) error {
		_, err := c.Enqueue(ctx, stint.Spec{Kind: "child", ParentJobID: j.ID()})
		return err
	})
	mux.HandleFunc("child", func(ctx context.Context, j *stint.Job) error { return nil })
	for range 5 {
		if _, err := c.Enqueue(context.Background(), stint.Spec{Kind: "parent"}); err != nil {
			t.Fatal(err)
		}
	}
	stats := stinttest.Drain(t, s, mux)
	jobs, _ := s.JobList(context.Background(), &store.JobListParams{States: []stint.State{stint.Succeeded}})
	if stats.Succeeded != 10 || len(jobs) != 10 {
		t.Errorf("stats %+v, %d succeeded jobs; want 10", stats, len(jobs))
	}
}
