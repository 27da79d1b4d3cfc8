package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

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
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				j, err := st.JobGet(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), j)
				}
				return writeJobDetail(cmd.OutOrStdout(), j)
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the job as JSON")
	return cmd
}

// writeJobDetail writes one job as aligned "key: value" lines, named as in
// the JSON form; fields with no value are left out.
func writeJobDetail(w io.Writer, j lifecycle.Job) error {
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
	line("attempt", fmt.Sprintf("%d of %d", j.Attempt, j.MaxAttempts))
	line("rev", strconv.FormatInt(j.Rev, 10))
	line("run_at", fmtTime(j.RunAt))
	line("created_at", fmtTime(j.CreatedAt))
	line("updated_at", fmtTime(j.UpdatedAt))
	line("started_at", fmtTimePtr(j.StartedAt))
	line("finished_at", fmtTimePtr(j.FinishedAt))
	line("dedupe_key", j.DedupeKey)
	if j.Timeout != 0 {
		line("timeout", j.Timeout.D().String())
	}
	line("deadline", fmtTimePtr(j.Deadline))
	line("owner", j.Owner)
	line("lease_id", j.LeaseID)
	line("lease_expires_at", fmtTimePtr(j.LeaseExpiresAt))
	line("cancel_deadline", fmtTimePtr(j.CancelDeadline))
	line("last_owner", j.LastOwner)
	line("phase", j.Phase)
	line("payload", compactJSON(j.Payload))
	line("progress", compactJSON(j.Progress))
	line("result", compactJSON(j.Result))
	line("result_ptr", j.ResultPtr)
	line("error", fmtJobError(j.Error))
	line("last_error", fmtJobError(j.LastError))
	line("reason_code", j.ReasonCode)
	line("reason", j.Reason)
	line("run_id", j.RunID)
	line("parent_job_id", j.ParentJobID)
	line("correlation_id", j.CorrelationID)
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
	if e.Class != "" {
		s += " (" + string(e.Class) + ")"
	}
	return s
}
