package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

func (a *app) jobsShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one job",
		Args:  oneJobID,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withJobSteps(cmd, args[0], func(j lifecycle.Job, steps []store.StepRecord) error {
				now := a.env.Clock.Now()
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), shownJob{jobWithSteps: jobWithSteps{Job: j, Steps: steps},
						LeaseState: lifecycle.LeaseStateOf(j, now), FailureStage: lifecycle.FailureStageOf(j)})
				}
				if err := writeJobDetail(cmd.OutOrStdout(), j, now); err != nil {
					return err
				}
				return writeSteps(cmd.OutOrStdout(), steps)
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the job as JSON")
	return cmd
}

// shownJob is the JSON of `stint jobs show --json`: the job, its steps, and
// what is derived from its fields (never stored): its lease's state at the
// time shown, and the stage it died in.
type shownJob struct {
	jobWithSteps
	LeaseState   lifecycle.LeaseState `json:"lease_state,omitempty"`
	FailureStage lifecycle.Stage      `json:"failure_stage,omitempty"`
}

// writeJobDetail writes one job as aligned "key: value" lines, named as in
// the JSON form; fields with no value are left out. The lease state is
// judged at now.
func writeJobDetail(w io.Writer, j lifecycle.Job, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	line := func(key, value string) {
		if value != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", key, value)
		}
	}
	line("id", j.ID)
	line("kind", j.Kind)
	line("queue", j.Queue)
	line("tenant", j.Tenant)
	line("topic", j.Topic)
	line("state", string(j.State))
	line("priority", strconv.Itoa(j.Priority))
	// attempt counts claims; failures the attempts that count against
	// max_attempts (a release on a graceful stop does not).
	line("attempt", strconv.Itoa(j.Attempt))
	line("failures", strconv.Itoa(j.Failures))
	line("max_attempts", strconv.Itoa(j.MaxAttempts))
	line("on_exhausted", string(j.OnExhausted))
	line("rev", strconv.FormatInt(j.Rev, 10))
	line("run_at", fmtTime(j.RunAt))
	line("created_at", fmtTime(j.CreatedAt))
	line("updated_at", fmtTime(j.UpdatedAt))
	line("started_at", fmtTimePtr(j.StartedAt))
	line("attempt_started_at", fmtTimePtr(j.AttemptStartedAt))
	line("finished_at", fmtTimePtr(j.FinishedAt))
	if j.ExecutionMS != 0 {
		line("execution_ms", strconv.FormatInt(j.ExecutionMS, 10))
	}
	line("dedupe_key", j.DedupeKey)
	if j.Timeout != 0 {
		line("timeout", j.Timeout.D().String())
	}
	line("timeout_at", fmtTimePtr(j.TimeoutAt))
	line("deadline", fmtTimePtr(j.Deadline))
	if j.CancelGrace != 0 {
		line("cancel_grace", j.CancelGrace.D().String())
	}
	line("budget", fmtBudget(j.Budget))
	line("usage", fmtUsage(j.Usage))
	line("owner", j.Owner)
	line("lease_id", j.LeaseID)
	line("lease_expires_at", fmtTimePtr(j.LeaseExpiresAt))
	line("cancel_deadline", fmtTimePtr(j.CancelDeadline))
	line("lease_ended_by", string(j.LeaseEndedBy))
	line("last_owner", j.LastOwner)
	line("last_lease_id", j.LastLeaseID)
	line("last_lease_expires_at", fmtTimePtr(j.LastLeaseExpiresAt))
	line("lease_state", string(lifecycle.LeaseStateOf(j, now)))
	line("phase", j.Phase)
	line("payload", compactJSON(j.Payload))
	line("context_ptr", j.ContextPtr)
	line("adapter_id", j.AdapterID)
	line("env", fmtEnv(j.Env))
	line("checkpoint", compactJSON(j.Checkpoint))
	line("progress", compactJSON(j.Progress))
	line("result", compactJSON(j.Result))
	line("result_ptr", j.ResultPtr)
	line("error", fmtJobError(j.Error))
	line("last_error", fmtJobError(j.LastError))
	line("reason_code", j.ReasonCode)
	line("reason", j.Reason)
	line("failure_stage", string(lifecycle.FailureStageOf(j)))
	line("run_id", j.RunID)
	if j.RunID != "" {
		line("step_index", strconv.Itoa(j.StepIndex))
	}
	line("depends_on", strings.Join(j.DependsOn, ","))
	line("parent_job_id", j.ParentJobID)
	line("replay_of", j.ReplayOf)
	line("correlation_id", j.CorrelationID)
	line("trace_id", j.TraceID)
	if p, ok := lifecycle.ProvenanceOf(j); ok {
		digest := p.ResultDigest
		if digest == "" {
			digest = "no result"
		}
		line("provenance", fmt.Sprintf("%s after %d attempts, %d events, %s", p.FinalState, p.Attempts, p.Events, digest))
	}
	return tw.Flush()
}

// compactJSON prints a JSON value on one line.
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func fmtJobError(e *lifecycle.JobError) string {
	if e == nil {
		return ""
	}
	s := e.Code + ": " + e.Message
	var notes []string
	if e.Class != "" {
		notes = append(notes, string(e.Class))
	}
	if e.Attempt > 0 {
		notes = append(notes, "attempt "+strconv.Itoa(e.Attempt))
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	return s
}

func fmtBudget(b *lifecycle.Budget) string {
	if b == nil {
		return ""
	}
	var parts []string
	if b.MaxRuntime > 0 {
		parts = append(parts, "runtime "+b.MaxRuntime.D().String())
	}
	if b.MaxSteps > 0 {
		parts = append(parts, "steps "+strconv.FormatInt(b.MaxSteps, 10))
	}
	if b.MaxCost > 0 {
		parts = append(parts, "cost "+strconv.FormatInt(b.MaxCost, 10))
	}
	return strings.Join(parts, ", ")
}

func fmtUsage(u lifecycle.Usage) string {
	var parts []string
	if u.RuntimeMS > 0 {
		parts = append(parts, fmt.Sprintf("runtime %dms", u.RuntimeMS))
	}
	if u.Steps > 0 {
		parts = append(parts, fmt.Sprintf("steps %d", u.Steps))
	}
	if u.Cost > 0 {
		parts = append(parts, fmt.Sprintf("cost %d", u.Cost))
	}
	return strings.Join(parts, ", ")
}

func fmtEnv(env map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		parts = append(parts, k+"="+env[k])
	}
	return strings.Join(parts, ",")
}
