package lifecycle_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

func printEvent(e *lifecycle.Event) {
	fmt.Printf("rev %d  %-9s %s -> %s  by %s  attempt %d\n", e.Rev, e.Type, e.FromState, e.ToState, e.Actor, e.Attempt)
}

// A job's life in four steps: enqueue, claim, start and complete. Time is a
// value the caller passes in; each step returns the next job and its event.
func ExampleApply() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	step, err := lifecycle.New("job-42", lifecycle.Spec{Kind: "email.send"}, "producer", "", now)
	if err != nil {
		panic(err)
	}
	printEvent(step.Event)

	for _, cmd := range []lifecycle.Command{
		{Op: lifecycle.OpClaim, Actor: lifecycle.ActorOwner, ActorID: "worker-1", LeaseID: "lease-a", LeaseTTL: time.Minute},
		{Op: lifecycle.OpStart, Actor: lifecycle.ActorOwner, LeaseID: "lease-a"},
		{Op: lifecycle.OpComplete, Actor: lifecycle.ActorOwner, LeaseID: "lease-a", Result: json.RawMessage(`{"sent":true}`)},
	} {
		now = now.Add(time.Second)
		step, err = lifecycle.Apply(step.Job, cmd, now)
		if err != nil {
			panic(err)
		}
		printEvent(step.Event)
	}
	fmt.Println("result:", string(step.Job.Result))
	// Output:
	// rev 1  enqueued  ∅ -> queued  by client  attempt 0
	// rev 2  claimed   queued -> claimed  by owner  attempt 1
	// rev 3  started   claimed -> running  by owner  attempt 1
	// rev 4  succeeded running -> succeeded  by owner  attempt 1
	// result: {"sent":true}
}

// An owner whose lease was superseded is told so, and nothing changes.
func ExampleApply_staleLease() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	step, _ := lifecycle.New("job-42", lifecycle.Spec{Kind: "email.send"}, "producer", "", now)
	step, _ = lifecycle.Apply(step.Job, lifecycle.Command{
		Op: lifecycle.OpClaim, Actor: lifecycle.ActorOwner, ActorID: "worker-1", LeaseID: "lease-a", LeaseTTL: time.Minute,
	}, now)
	_, err := lifecycle.Apply(step.Job, lifecycle.Command{
		Op: lifecycle.OpStart, Actor: lifecycle.ActorOwner, LeaseID: "lease-old",
	}, now.Add(time.Second))
	fmt.Println(errors.Is(err, lifecycle.ErrStaleLease))
	fmt.Println(err)
	// Output:
	// true
	// stale lease: start job job-42 (state claimed): lease lease-old is not the job's current lease (it was superseded, revoked or released); stop working on this job
}

// Replay re-derives a job's state, attempt and revision from its events.
func ExampleReplay() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	step, _ := lifecycle.New("job-42", lifecycle.Spec{Kind: "email.send"}, "producer", "", now)
	events := []lifecycle.Event{*step.Event}
	step, _ = lifecycle.Apply(step.Job, lifecycle.Command{Op: lifecycle.OpCancel, Actor: lifecycle.ActorClient}, now)
	events = append(events, *step.Event)

	r, err := lifecycle.Replay(events)
	fmt.Println(r.State, r.Attempt, r.Rev, err)
	fmt.Println(lifecycle.Verify(step.Job, events))
	// Output:
	// cancelled 0 2 <nil>
	// <nil>
}
