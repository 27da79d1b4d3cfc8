package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// cliActor names the command line in the events it causes.
const cliActor = "cli"

func (a *app) enqueueCmd() *cobra.Command {
	var spec lifecycle.Spec
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "enqueue --kind KIND [flags]",
		Short: "Create a job",
		Long: "enqueue creates one job and prints its id (with --json, the whole job).\n" +
			"When --dedupe-key matches a live job of the same tenant, no job is created:\n" +
			"stint says so on stderr and prints the existing job's id.",
		Example: `  stint enqueue --kind email.send --payload '{"to": "ada@example.com"}'
  stint enqueue --kind report --queue batch --priority batch --run-at 2030-01-02T03:00:00Z`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			// Check the spec before opening anything: bad input creates no file.
			if err := spec.Validate(a.env.Clock.Now()); err != nil {
				return err
			}
			return a.withStore(cmd.Context(), mayCreate, func(st store.Store) error {
				res, err := st.JobEnqueue(cmd.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{spec}, ActorID: cliActor})
				if err != nil {
					return err
				}
				r := res[0]
				if r.Existing {
					fmt.Fprintf(cmd.ErrOrStderr(), "stint: dedupe key %q matches live job %s (state %s): no new job was created\n",
						spec.DedupeKey, r.Job.ID, r.Job.State)
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), r.Job)
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), r.Job.ID)
				return err
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&spec.Kind, "kind", "", "handler name (required)")
	f.StringVar(&spec.Queue, "queue", "", "queue name (default \""+lifecycle.DefaultQueue+"\")")
	f.Var(jsonFlag{&spec.Payload}, "payload", "job input as a JSON document")
	f.Var(priorityFlag{&spec.Priority}, "priority", "integer, higher runs first, or critical, interactive, default, batch")
	f.Var(timeFlag{&spec.RunAt}, "run-at", "first attempt not before this RFC 3339 time (default now)")
	f.StringVar(&spec.DedupeKey, "dedupe-key", "", "at most one live job per tenant has this key")
	f.Var(intFlag{p: &spec.MaxAttempts, min: 1, max: lifecycle.MaxMaxAttempts}, "max-attempts",
		fmt.Sprintf("attempts before the job is dead-lettered (default %d)", lifecycle.DefaultMaxAttempts))
	f.Var(durationFlag{&spec.Timeout}, "timeout", "limit on one attempt, start to finish, e.g. 30s (default none)")
	f.Var(timeFlag{&spec.Deadline}, "deadline", "RFC 3339 time by which the job must be finished (default none)")
	f.StringVar(&spec.Tenant, "tenant", "", "tenant the job belongs to")
	f.BoolVar(&asJSON, "json", false, "print the whole job as JSON")
	return cmd
}
