package lifecycle

import "encoding/json"

// PhaseDetails are the details of a heartbeat or checkpointed event by
// which the owner entered a new phase of its attempt (seed-ci's STARTING,
// RUNNING, UPLOADING, ...): the event log keeps every phase an attempt went
// through, while the job keeps only the last.
type PhaseDetails struct {
	Phase string `json:"phase"`
}

func phaseDetails(phase string) json.RawMessage {
	b, _ := json.Marshal(PhaseDetails{Phase: phase})
	return b
}

// PhaseOf returns the phase e entered, if it is a heartbeat or checkpointed
// event that entered one.
func PhaseOf(e Event) (string, bool) {
	if (e.Type != EventHeartbeat && e.Type != EventCheckpointed) || len(e.Details) == 0 {
		return "", false
	}
	var d PhaseDetails
	if json.Unmarshal(e.Details, &d) != nil || d.Phase == "" {
		return "", false
	}
	return d.Phase, true
}
