package step

import (
	"encoding/json"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Golden is a finished job's recorded steps as a file (`stint jobs
// export-steps ID`): what a replay of new handler code must reproduce.
type Golden struct {
	JobID   string             `json:"job_id"`
	Kind    string             `json:"kind"`
	Seed    int64              `json:"seed"`
	Payload json.RawMessage    `json:"payload,omitempty"`
	State   lifecycle.State    `json:"state"`
	Result  json.RawMessage    `json:"result,omitempty"`
	Steps   []store.StepRecord `json:"steps"`
}

// GoldenOf makes the golden file of job j with its steps.
func GoldenOf(j lifecycle.Job, steps []store.StepRecord) Golden {
	if steps == nil {
		steps = []store.StepRecord{}
	}
	return Golden{JobID: j.ID, Kind: j.Kind, Seed: Seed(j), Payload: j.Payload, State: j.State, Result: j.Result, Steps: steps}
}
