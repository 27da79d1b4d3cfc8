package lifecycle

// Stage is where in an attempt's life a job died, in seed-reliability's
// words: fetch, input, exec, output, commit. Nothing stores it:
// [FailureStageOf] derives it from the job's fields (its reason code, its
// last error, whether its last attempt started, the phase its owner last
// reported), so it is the same in every view of the job.
type Stage string

// The failure stages.
const (
	// StageFetch: no worker got the job going: never claimed, or its last
	// attempt was claimed but never started (the lease ran out first).
	StageFetch Stage = "fetch"
	// StageInput: the job's input was refused (reason or error code
	// parse_error or validation_failed, no handler for its kind), or the
	// owner died while preparing it (phase "starting" or "input").
	StageInput Stage = "input"
	// StageExec: the handler ran and failed, timed out or lost its lease.
	StageExec Stage = "exec"
	// StageOutput: the owner was writing the result (phase "uploading" or
	// "output").
	StageOutput Stage = "output"
	// StageCommit: the owner was recording the outcome (phase "committing"
	// or "commit").
	StageCommit Stage = "commit"
)

// phaseStages maps the phases workers report (stint worker: starting,
// running, uploading) to stages; any other phase is exec.
var phaseStages = map[string]Stage{
	"starting": StageInput, "input": StageInput,
	"uploading": StageOutput, "output": StageOutput,
	"committing": StageCommit, "commit": StageCommit,
}

// inputCodes are the reason and error codes that say the input was bad.
var inputCodes = map[string]bool{ReasonParseError: true, ReasonValidationFailed: true, "unknown_kind": true}

// FailureStageOf is the stage a dead-lettered, failed or timed-out job
// died in; "" for any other job.
func FailureStageOf(j Job) Stage {
	switch j.State {
	case DeadLettered, Failed, TimedOut:
	default:
		return ""
	}
	if e := firstError(j); inputCodes[j.ReasonCode] || e != nil && inputCodes[e.Code] {
		return StageInput
	}
	if j.Attempt == 0 || j.AttemptStartedAt == nil {
		return StageFetch
	}
	if s, ok := phaseStages[j.Phase]; ok {
		return s
	}
	return StageExec
}
