package server

import (
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/store"
)

// stepToProto converts a step record; its output stays JSON text, byte for
// byte as recorded.
func stepToProto(r store.StepRecord) *stintv1.Step {
	return &stintv1.Step{
		JobId: r.JobID, Seq: int32(r.Seq), Name: r.Name, Kind: r.Kind, Attempt: int32(r.Attempt), LeaseId: r.LeaseID,
		Status: r.Status, Output: string(r.Output), Error: jobErrorToProto(r.Error), DurationMs: r.DurationMS,
		RecordedAt: ts(r.RecordedAt),
	}
}

func stepsToProto(rs []store.StepRecord) []*stintv1.Step {
	out := make([]*stintv1.Step, len(rs))
	for i, r := range rs {
		out[i] = stepToProto(r)
	}
	return out
}

func signalToProto(s store.Signal) *stintv1.Signal {
	return &stintv1.Signal{JobId: s.JobID, Name: s.Name, Payload: string(s.Payload), ActorId: s.ActorID, SentAt: ts(s.SentAt)}
}
