package lifecycle

import (
	"encoding/json"
	"strconv"
	"time"
)

// Durable steps add three rows to the transition table:
//
//	step     owner          running   → running    step_recorded
//	suspend  owner          running   → scheduled  suspended
//	wake     client/system  scheduled → queued     woken
//
// A step record is a self-loop like a checkpoint: it proves, in the log,
// that the lease holder of the attempt recorded step seq. A suspend ends the
// attempt without failing it: the lease goes back, the job is due again at
// its wake time (the scheduler's promote takes it from there), and since
// only failed attempts count against max_attempts (Failures), the claim that
// wakes it adds one to attempt (LI-2) but spends nothing of the retry
// budget. A wake is the early way back: the signal a suspended job waits for
// arrived, or the child it awaits ended.

// SeedEnv is the env key that holds a job's seed when its producer chose
// one: a decimal int64. Without it the seed is derived from the job id.
const SeedEnv = "stint.seed"

// StepDetails is what a step_recorded event says about its step.
type StepDetails struct {
	Seq  int    `json:"seq"`
	Name string `json:"name"`
}

// StepOf reads the step a step_recorded event records.
func StepOf(e Event) (StepDetails, bool) {
	var d StepDetails
	if e.Type != EventStepRecorded || json.Unmarshal(e.Details, &d) != nil || d.Seq < 1 {
		return StepDetails{}, false
	}
	return d, true
}

func stepDetails(c Command) json.RawMessage {
	b, _ := json.Marshal(StepDetails{Seq: c.StepSeq, Name: c.StepName})
	return b
}

// MaxStepName bounds a step's name.
const MaxStepName = 200

func (c Command) validateStep(j *Job) error {
	switch c.Op {
	case OpStep:
		if c.StepSeq < 1 {
			return reject(ErrValidation, j, c.Op, "step seq %d: steps are numbered from 1", c.StepSeq)
		}
		if c.StepName == "" || len(c.StepName) > MaxStepName {
			return reject(ErrValidation, j, c.Op, "a step needs a name of 1 to %d bytes", MaxStepName)
		}
		if err := CheckText("step name", c.StepName); err != nil {
			return reject(ErrValidation, j, c.Op, "%s", inputProblem(err))
		}
	case OpSuspend:
		if c.WakeAt == nil {
			return reject(ErrValidation, j, c.Op, "a suspend needs a wake time")
		}
		if err := CheckTime("wake_at", *c.WakeAt); err != nil {
			return reject(ErrValidation, j, c.Op, "%s", inputProblem(err))
		}
	}
	return nil
}

// stepTransition performs step, suspend and wake on next.
func stepTransition(next *Job, c Command, now time.Time) (Op, Actor, EventType, error) {
	switch c.Op {
	case OpStep:
		next.Usage.Steps++ // a recorded step counts against a step budget
		return c.Op, c.Actor, EventStepRecorded, nil
	case OpSuspend:
		at := c.WakeAt.UTC().Truncate(time.Microsecond)
		if at.Before(now) {
			at = now
		}
		next.State, next.RunAt = Scheduled, at
		next.ReasonCode, next.Reason = ReasonSuspended, firstNonEmpty(c.Reason, "sleeping")
		next.ExecutionMS = c.ExecutionMS
		return c.Op, c.Actor, EventSuspended, nil
	default: // OpWake
		if next.ReasonCode != ReasonSuspended {
			return c.Op, c.Actor, "", reject(ErrInvalidTransition, next, c.Op, "only a job its handler suspended can be woken; this one is scheduled for its first attempt")
		}
		next.State, next.RunAt = Queued, now
		clearSuspended(next)
		return c.Op, c.Actor, EventWoken, nil
	}
}

// clearSuspended forgets why a job was suspended once it is due again.
func clearSuspended(j *Job) {
	if j.ReasonCode == ReasonSuspended {
		j.ReasonCode, j.Reason = "", ""
	}
}

// Suspended reports whether j is suspended by its handler, and what it
// waits for (the suspend's reason: "sleep", "signal:NAME", "child:ID").
func Suspended(j Job) (string, bool) {
	if j.State != Scheduled || j.ReasonCode != ReasonSuspended {
		return "", false
	}
	return j.Reason, true
}

// ParseSeed reads a seed written in SeedEnv.
func ParseSeed(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, Validationf("env %s = %q: a seed is a decimal 64-bit integer", SeedEnv, s)
	}
	return n, nil
}
