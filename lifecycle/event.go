package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// EventVersion is the schema version written into every event.
const EventVersion = 1

// Event is one entry of the append-only audit log: exactly one per accepted
// transition, written in the same transaction as the state change.
type Event struct {
	ID            int64           `json:"id"`
	JobID         string          `json:"job_id"`
	RunID         string          `json:"run_id,omitempty"`
	Type          EventType       `json:"type"`
	Op            Op              `json:"op"`
	FromState     State           `json:"from_state"`
	ToState       State           `json:"to_state"`
	At            time.Time       `json:"at"`
	Actor         Actor           `json:"actor"`
	ActorID       string          `json:"actor_id,omitempty"`
	RequestID     string          `json:"request_id,omitempty"`
	CorrelationID string          `json:"correlation_id,omitempty"`
	TraceID       string          `json:"trace_id,omitempty"`
	Attempt       int             `json:"attempt"`
	Rev           int64           `json:"rev"`
	LeaseID       string          `json:"lease_id,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	Details       json.RawMessage `json:"details,omitempty"`
	Version       int             `json:"version"`

	// RunAt is the due time the transition set (enqueue, retry_scheduled);
	// nil when it left run_at alone. Verify checks the row's run_at with it.
	RunAt *time.Time `json:"run_at,omitempty"`
	// LeaseExpiresAt is the lease expiry the transition set (claim, start,
	// heartbeat, checkpoint); nil when it set none. Verify checks the row's
	// lease_expires_at with it.
	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
	// SpecDigest, on enqueued and denied events, is the digest of the job's
	// immutable spec (kind, queue, tenant, priority, dedupe key, ...), so
	// Verify finds a spec column changed after the fact.
	SpecDigest string `json:"spec_digest,omitempty"`
}

// Provenance is the record every terminal job gets (LI-4). It is kept in the
// terminal job's own row (the fields below are the row's, and ResultDigest is
// written once by the terminal transition); [ProvenanceOf] reads it out.
type Provenance struct {
	JobID        string     `json:"job_id"`
	FinalState   State      `json:"final_state"`
	Attempts     int        `json:"attempts"`
	LastOwner    string     `json:"last_owner,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	StartedAt    *time.Time `json:"started_at,omitempty"`
	FinishedAt   time.Time  `json:"finished_at"`
	ResultDigest string     `json:"result_digest,omitempty"`
	Events       int64      `json:"events"`
}

// ProvenanceOf returns the provenance record of a terminal job, and false for
// a job that is not terminal.
func ProvenanceOf(j Job) (Provenance, bool) {
	if !j.State.Terminal() {
		return Provenance{}, false
	}
	p := Provenance{
		JobID: j.ID, FinalState: j.State, Attempts: j.Attempt, LastOwner: j.LastOwner,
		CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, ResultDigest: j.ResultDigest, Events: j.Rev,
	}
	if j.FinishedAt != nil {
		p.FinishedAt = *j.FinishedAt
	}
	return p, true
}

// ResultDigest is the provenance digest of a result: "sha256:<hex>" over the
// result's bytes followed by the result pointer, or "" when there is neither.
func ResultDigest(result json.RawMessage, ptr string) string {
	if result == nil && ptr == "" {
		return ""
	}
	h := sha256.New()
	h.Write(result)
	h.Write([]byte(ptr))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
