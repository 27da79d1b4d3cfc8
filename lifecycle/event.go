package lifecycle

import (
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
}

// Provenance is the record every terminal job gets (LI-4).
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
