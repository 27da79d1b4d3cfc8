package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/store"
)

// Environment a command run by `stint worker --exec` gets (cli/worker.go).
const (
	envJobID = "STINT_JOB_ID"
	envLease = "STINT_FENCING_TOKEN"
)

// stepStdout is the record of a step run by `stint jobs step`: what the
// command printed, replayed byte for byte.
type stepStdout struct {
	Stdout *string `json:"stdout"`
}

// jobsStepCmd is a durable step for shell commands run by `stint worker
// --exec`: a script's CMD runs once per job across attempts.
func (a *app) jobsStepCmd() *cobra.Command {
	var jobID, lease string
	cmd := &cobra.Command{
		Use:   "step NAME -- CMD [ARGS...]",
		Short: "Run CMD once per job as a durable step (for commands run by stint worker --exec)",
		Long: "step runs CMD as the step NAME of the job a `stint worker --exec` command runs for\n" +
			"(" + envJobID + " and " + envLease + " from its environment, or --job and --lease), and\n" +
			"records what CMD printed, fenced by the lease, once it exits 0. On a later attempt a step\n" +
			"already recorded under NAME prints its recorded output without running CMD again: a script\n" +
			"that crashed in its third step resumes there. CMD's exit status N, other than 0, is step's,\n" +
			"and nothing is recorded. Steps are looked up by name (a script's names must be unique) and\n" +
			"recorded in order. It works on the worker's database or, with --server and --token, through\n" +
			"the server (pass them to the command: --pass-env STINT_SERVER --pass-env STINT_TOKEN).",
		Example: `  stint jobs step fetch -- curl -fsS https://example.com/data.json
  stint jobs step build -- make -j4`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 || len(args) < 2 || args[0] == "" {
				return usageErrorf("%s takes a step name and a command after --: expected `%s NAME -- CMD [ARGS...]`", cmd.CommandPath(), cmd.CommandPath())
			}
			return nil
		},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			o := store.OwnerParams{JobID: jobID, LeaseID: lease}
			if o.JobID == "" {
				o.JobID = a.env.Getenv(envJobID)
			}
			if o.LeaseID == "" {
				o.LeaseID = a.env.Getenv(envLease)
			}
			if o.JobID == "" || o.LeaseID == "" {
				return usageErrorf("no job to record a step of: run it from a command of `stint worker --exec` (which sets %s and %s), or give --job and --lease", envJobID, envLease)
			}
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				return a.runShellStep(cmd, st, o, args[0], args[1:])
			})
		}),
	}
	cmd.Flags().StringVar(&jobID, "job", "", "the job's id (default: env "+envJobID+")")
	cmd.Flags().StringVar(&lease, "lease", "", "the attempt's fencing token (default: env "+envLease+")")
	return cmd
}

// runShellStep replays the step name of the job o holds, or runs argv and
// records its output as the next step.
func (a *app) runShellStep(cmd *cobra.Command, st store.Store, o store.OwnerParams, name string, argv []string) error {
	ss, err := store.Steps(st)
	if err != nil {
		return err
	}
	var recs []store.StepRecord
	if lr, ok := ss.(store.LeasedStepReader); ok {
		recs, err = lr.JobStepsLeased(cmd.Context(), &o)
	} else {
		recs, err = ss.JobSteps(cmd.Context(), o.JobID)
	}
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Name == name && r.Kind == store.StepRun {
			var out stepStdout
			d := json.NewDecoder(bytes.NewReader(r.Output))
			d.DisallowUnknownFields()
			if err := d.Decode(&out); err != nil || out.Stdout == nil {
				return fmt.Errorf("step %d %q was not recorded by `stint jobs step` (its output is %.100s): give this step another name", r.Seq, name, r.Output)
			}
			_, err := io.WriteString(cmd.OutOrStdout(), *out.Stdout)
			return err
		}
	}
	var stdout bytes.Buffer
	c := exec.CommandContext(cmd.Context(), argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), io.MultiWriter(cmd.OutOrStdout(), &stdout), cmd.ErrOrStderr()
	began := a.env.Clock.Now()
	if err := c.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() > 0 {
			return &ExitError{Code: ee.ExitCode()}
		}
		return fmt.Errorf("run %s: %w", argv[0], err)
	}
	text := stdout.String()
	output, err := json.Marshal(stepStdout{Stdout: &text})
	if err != nil {
		return err
	}
	_, _, err = ss.JobStepRecord(cmd.Context(), &store.JobStepParams{OwnerParams: o, Seq: len(recs) + 1, Name: name,
		Kind: store.StepRun, Status: store.StepOK, Output: output, DurationMS: a.env.Clock.Now().Sub(began).Milliseconds()})
	return err
}
