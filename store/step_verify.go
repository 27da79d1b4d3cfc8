package store

import (
	"context"
	"fmt"

	"github.com/stint-dev/stint/lifecycle"
)

// stepsOf reads the step records of jobs for Verify, by job; nothing when
// the driver keeps no steps.
func stepsOf(ctx context.Context, tx Tx, ids []string) (map[string][]StepRecord, error) {
	st, ok := tx.(StepTx)
	if !ok {
		return nil, nil
	}
	recs, err := st.StepList(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := map[string][]StepRecord{}
	for _, r := range recs {
		out[r.JobID] = append(out[r.JobID], r)
	}
	return out, nil
}

// verifySteps checks a job's step records against its events: one record
// per step_recorded event and the other way round, numbered 1..n with no
// gap, each written by the lease that held the attempt it names (never a
// superseded one) and before any terminal event (the replay's table allows
// a step only from running). It returns the first problem, or "".
func verifySteps(events []Event, recs []StepRecord) string {
	leases := map[int]string{} // attempt → the lease its claim granted
	var stepEvents []lifecycle.StepDetails
	var eventOf []Event
	for _, ev := range events {
		if ev.Type == lifecycle.EventClaimed {
			leases[ev.Attempt] = ev.LeaseID
		}
		if d, ok := lifecycle.StepOf(ev); ok {
			stepEvents = append(stepEvents, d)
			eventOf = append(eventOf, ev)
		} else if ev.Type == lifecycle.EventStepRecorded {
			return fmt.Sprintf("steps: event rev %d records a step without its seq and name", ev.Rev)
		}
	}
	for i, r := range recs {
		if r.Seq != i+1 {
			return fmt.Sprintf("steps: record %d has seq %d: the order has a gap", i+1, r.Seq)
		}
		if i >= len(stepEvents) {
			return fmt.Sprintf("steps: step %d %q has a record but no step_recorded event", r.Seq, r.Name)
		}
		d, ev := stepEvents[i], eventOf[i]
		switch {
		case d.Seq != r.Seq || d.Name != r.Name:
			return fmt.Sprintf("steps: step %d is %q in its record but event rev %d records step %d %q", r.Seq, r.Name, ev.Rev, d.Seq, d.Name)
		case ev.Attempt != r.Attempt || ev.LeaseID != r.LeaseID:
			return fmt.Sprintf("steps: step %d was recorded by attempt %d lease %s, but its event says attempt %d lease %s", r.Seq, r.Attempt, r.LeaseID, ev.Attempt, ev.LeaseID)
		case leases[r.Attempt] != r.LeaseID:
			return fmt.Sprintf("steps: step %d was written by lease %s, which is not the lease attempt %d was granted (%s)", r.Seq, r.LeaseID, r.Attempt, leases[r.Attempt])
		}
	}
	if len(stepEvents) > len(recs) {
		d := stepEvents[len(recs)]
		return fmt.Sprintf("steps: event rev %d records step %d %q, which has no record", eventOf[len(recs)].Rev, d.Seq, d.Name)
	}
	return ""
}
