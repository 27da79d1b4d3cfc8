package storetest

import (
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// RandomMutable returns a job whose mutable fields (store.MutableColumns)
// take one of a few values each, so that two of them often agree: drivers
// test store.ChangedColumns against the values they write with pairs of them.
func RandomMutable(rnd *rand.Rand) lifecycle.Job {
	pick := func(vs ...string) string { return vs[rnd.IntN(len(vs))] }
	t0 := time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC)
	at := func() time.Time { return t0.Add(time.Duration(rnd.IntN(2)) * time.Microsecond) }
	atp := func() *time.Time {
		if rnd.IntN(3) == 0 {
			return nil
		}
		x := at()
		return &x
	}
	raw := func() json.RawMessage {
		switch rnd.IntN(3) {
		case 0:
			return nil
		case 1:
			return json.RawMessage(`1`)
		}
		return json.RawMessage(`2`)
	}
	jerr := func() *lifecycle.JobError {
		if rnd.IntN(3) == 0 {
			return nil
		}
		return &lifecycle.JobError{Code: pick("", "a"), Message: pick("", "m"), Class: lifecycle.ErrorClass(pick("", "transient")), Attempt: rnd.IntN(2)}
	}
	return lifecycle.Job{
		ID: "j", State: lifecycle.State(pick("running", "succeeded")), Attempt: rnd.IntN(2), Failures: rnd.IntN(2),
		Rev: int64(rnd.IntN(2)), RunAt: at(), Owner: pick("", "w"), LeaseID: pick("", "l"), LeaseExpiresAt: atp(),
		TimeoutAt: atp(), CancelDeadline: atp(), LeaseEndedBy: lifecycle.Actor(pick("", "owner")), LastOwner: pick("", "w"),
		LastLeaseID: pick("", "l"), LastLeaseExpiresAt: atp(), Checkpoint: raw(), Progress: raw(), Phase: pick("", "p"),
		Usage:  lifecycle.Usage{Steps: int64(rnd.IntN(2)), Cost: int64(rnd.IntN(2)), RuntimeMS: int64(rnd.IntN(2))},
		Result: raw(), ResultPtr: pick("", "r"), ResultDigest: pick("", "d"), Error: jerr(), LastError: jerr(),
		ReasonCode: pick("", "c"), Reason: pick("", "r"), ExecutionMS: int64(rnd.IntN(2)), UpdatedAt: at(),
		StartedAt: atp(), AttemptStartedAt: atp(), FinishedAt: atp(),
	}
}
