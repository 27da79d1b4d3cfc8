package bus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// Error codes of refused requests, in the error result's error_code.
const (
	CodeMalformed   = "malformed_request"
	CodeMissingID   = "missing_job_id"
	CodePriority    = "unknown_priority"
	CodeTooLarge    = "payload_too_large"
	CodeInvalid     = "invalid_request"
	CodeConflict    = "conflicting_duplicate"
	CodeDenied      = "denied"
	CodeBadResult   = "invalid_result"
	CodeUnknownJob  = "unknown_job"
	CodeStaleResult = "stale_result"
)

// Env keys the bridge keeps workflow_id and step_index under (stint's own
// run_id and step_index belong to stint runs). Requests may not use the
// prefix themselves.
const (
	envPrefix   = "stint."
	envWorkflow = envPrefix + "workflow_id"
	envStep     = envPrefix + "step_index"
)

// Rejection is why a request was refused: a code for programs and a message
// for people. Nothing was written.
type Rejection struct {
	Code    string
	Message string
}

func (r *Rejection) Error() string { return r.Code + ": " + r.Message }

func reject(code, format string, args ...any) *Rejection {
	return &Rejection{Code: code, Message: fmt.Sprintf(format, args...)}
}

// priorities are seed-bus's names; the numbers are stint's (lifecycle.ParsePriority).
var priorities = []string{"interactive", "batch", "critical"}

// decodeRequest reads a request published on subject into the spec of its
// job, or says why it is refused. The job's kind is its topic, its
// correlation id its job_id.
func (c Config) decodeRequest(subject string, data []byte) (JobRequest, lifecycle.Spec, *Rejection) {
	var r JobRequest
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&r); err != nil {
		return r, lifecycle.Spec{}, reject(CodeMalformed, "the request is not a JSON JobRequest object: %v", err)
	}
	if d.More() {
		return r, lifecycle.Spec{}, reject(CodeMalformed, "the request has data after its JSON object: publish one JobRequest per message")
	}
	topic := c.topicOf(subject)
	switch {
	case strings.TrimSpace(r.JobID) == "":
		return r, lifecycle.Spec{}, reject(CodeMissingID, "job_id is required: it names the job and makes a repeated request harmless")
	case r.Topic != "" && r.Topic != topic:
		return r, lifecycle.Spec{}, reject(CodeInvalid, "topic %q differs from the subject's topic %q: the subject is the topic; drop the field or publish on its subject", r.Topic, topic)
	case len(r.Payload) > c.MaxPayloadBytes:
		return r, lifecycle.Spec{}, reject(CodeTooLarge, "payload is %d bytes: the limit is %d; put large inputs elsewhere and pass context_ptr", len(r.Payload), c.MaxPayloadBytes)
	case r.TimeoutMS < 0:
		return r, lifecycle.Spec{}, reject(CodeInvalid, "timeout_ms %d is negative", r.TimeoutMS)
	}
	prio := 0
	if r.Priority != "" {
		if !containsFold(priorities, r.Priority) {
			return r, lifecycle.Spec{}, reject(CodePriority, "priority %q: expected interactive, batch or critical (or none)", r.Priority)
		}
		prio, _ = lifecycle.ParsePriority(strings.ToLower(r.Priority))
	}
	env, rej := requestEnv(r)
	if rej != nil {
		return r, lifecycle.Spec{}, rej
	}
	spec := lifecycle.Spec{Kind: topic, Queue: c.Queue, Topic: topic, Priority: prio, ContextPtr: r.ContextPtr,
		AdapterID: r.AdapterID, Env: env, Tenant: c.Tenant, CorrelationID: r.JobID, ParentJobID: r.ParentJobID,
		Timeout: time.Duration(r.TimeoutMS) * time.Millisecond, MaxAttempts: c.MaxAttempts}
	if r.MaxAttempts != 0 {
		spec.MaxAttempts = r.MaxAttempts
	}
	if len(r.Payload) > 0 && !bytes.Equal(bytes.TrimSpace(r.Payload), []byte("null")) {
		spec.Payload = r.Payload
	}
	if err := spec.Validate(c.Clock.Now()); err != nil {
		return r, lifecycle.Spec{}, reject(CodeInvalid, "%s", strings.TrimPrefix(err.Error(), lifecycle.ErrValidation.Error()+": "))
	}
	return r, spec, nil
}

// requestEnv is the request's env with workflow_id and step_index added
// under the bridge's keys.
func requestEnv(r JobRequest) (map[string]string, *Rejection) {
	for k := range r.Env {
		if strings.HasPrefix(k, envPrefix) {
			return nil, reject(CodeInvalid, "env key %q: keys starting %q are the bridge's own; rename it", k, envPrefix)
		}
	}
	if r.WorkflowID == "" && r.StepIndex == 0 {
		return r.Env, nil
	}
	if r.StepIndex < 0 {
		return nil, reject(CodeInvalid, "step_index %d is negative", r.StepIndex)
	}
	env := make(map[string]string, len(r.Env)+2)
	for k, v := range r.Env {
		env[k] = v
	}
	if r.WorkflowID != "" {
		env[envWorkflow] = r.WorkflowID
	}
	if r.StepIndex != 0 {
		env[envStep] = strconv.Itoa(r.StepIndex)
	}
	return env, nil
}

// requestOf rebuilds the seed-bus request of a bridged job (for dispatch).
func requestOf(j lifecycle.Job) JobRequest {
	r := JobRequest{JobID: j.CorrelationID, Topic: j.Topic, ContextPtr: j.ContextPtr, AdapterID: j.AdapterID,
		ParentJobID: j.ParentJobID, Payload: j.Payload, TimeoutMS: j.Timeout.D().Milliseconds(), MaxAttempts: j.MaxAttempts}
	switch {
	case j.Priority >= lifecycle.PriorityCritical:
		r.Priority = "critical"
	case j.Priority >= lifecycle.PriorityInteractive:
		r.Priority = "interactive"
	case j.Priority <= lifecycle.PriorityBatch:
		r.Priority = "batch"
	}
	for k, v := range j.Env {
		switch k {
		case envWorkflow:
			r.WorkflowID = v
		case envStep:
			r.StepIndex, _ = strconv.Atoi(v)
		default:
			if r.Env == nil {
				r.Env = map[string]string{}
			}
			r.Env[k] = v
		}
	}
	return r
}

func containsFold(list []string, v string) bool {
	for _, s := range list {
		if strings.EqualFold(s, v) {
			return true
		}
	}
	return false
}
