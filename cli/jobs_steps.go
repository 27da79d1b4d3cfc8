package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/step"
	"github.com/stint-dev/stint/store"
)

// jobSteps returns a job's recorded steps, or none when the store keeps no
// steps.
func jobSteps(cmd *cobra.Command, st store.Store, id string) ([]store.StepRecord, error) {
	ss, err := store.Steps(st)
	if errors.Is(err, store.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ss.JobSteps(cmd.Context(), id)
}

// withJobSteps reads the job id and its steps and hands them to fn.
func (a *app) withJobSteps(cmd *cobra.Command, id string, fn func(lifecycle.Job, []store.StepRecord) error) error {
	return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
		j, err := st.JobGet(cmd.Context(), id)
		if err != nil {
			return err
		}
		steps, err := jobSteps(cmd, st, j.ID)
		if err != nil {
			return err
		}
		return fn(j, steps)
	})
}

// jobWithSteps is the JSON of `stint jobs show --json`: the job's fields
// and its recorded steps.
type jobWithSteps struct {
	lifecycle.Job
	Steps []store.StepRecord `json:"steps,omitempty"`
}

// writeSteps writes a job's steps as a table under its detail.
func writeSteps(w io.Writer, steps []store.StepRecord) error {
	if len(steps) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nsteps:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SEQ\tNAME\tKIND\tATTEMPT\tSTATUS\tDURATION\tSIZE\tRECORDED")
	for _, s := range steps {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%s\t%dms\t%d\t%s\n", s.Seq, s.Name, s.Kind, s.Attempt, s.Status, s.DurationMS, s.Size(), fmtTime(s.RecordedAt))
	}
	return tw.Flush()
}

func (a *app) jobsExportStepsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "export-steps ID",
		Short: "Print a job's recorded steps as a golden file for stinttest.ReplayGolden",
		Args:  oneJobID,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withJobSteps(cmd, args[0], func(j lifecycle.Job, steps []store.StepRecord) error {
				return writeJSON(cmd.OutOrStdout(), step.GoldenOf(j, steps))
			})
		}),
	}
}

func (a *app) jobsSignalCmd() *cobra.Command {
	var payload string
	cmd := &cobra.Command{
		Use:   "signal ID NAME",
		Short: "Send a named signal to a job (the first of a name wins; a job waiting for it wakes)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 || args[0] == "" || args[1] == "" {
				return usageErrorf("%s takes a job id and a signal name: expected `%s ID NAME [--payload JSON]`", cmd.CommandPath(), cmd.CommandPath())
			}
			return nil
		},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			var raw json.RawMessage
			if payload != "" {
				if !json.Valid([]byte(payload)) {
					return usageErrorf("--payload is not valid JSON: give a JSON value such as '{\"ok\":true}'")
				}
				raw = json.RawMessage(payload)
			}
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				ss, err := store.Steps(st)
				if err != nil {
					return err
				}
				sig, err := ss.JobSignal(cmd.Context(), &store.JobSignalParams{JobID: args[0], Name: args[1], Payload: raw, ActorID: "cli"})
				if err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), sig)
			})
		}),
	}
	cmd.Flags().StringVar(&payload, "payload", "", "the signal's payload, a JSON value")
	return cmd
}
