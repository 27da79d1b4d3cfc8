package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// cliActor names the command line in the events it causes.
const cliActor = "cli"

func (a *app) enqueueCmd() *cobra.Command {
	var spec lifecycle.Spec
	var budget struct {
		runtime     time.Duration
		steps, cost int64
	}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "enqueue --kind KIND [flags]",
		Short: "Create a job",
		Long: "enqueue creates one job and prints its id (with --json, the whole job).\n" +
			"When --dedupe-key matches a live job of the same tenant, no job is created:\n" +
			"stint says so on stderr and prints the existing job's id.",
		Example: `  stint enqueue --kind email.send --payload '{"to": "ada@example.com"}'
  stint enqueue --kind report --queue batch --priority batch --run-at 2030-01-02T03:00:00Z
  stint enqueue --kind import --payload @big.json --env locale=de --budget-runtime 10m
  generate-input | stint enqueue --kind import --payload -`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			if budget.runtime > 0 || budget.steps > 0 || budget.cost > 0 {
				spec.Budget = &lifecycle.Budget{MaxRuntime: lifecycle.Duration(budget.runtime), MaxSteps: budget.steps, MaxCost: budget.cost}
			}
			// Check the spec before opening anything: bad input creates no file.
			if err := spec.Validate(a.env.Clock.Now()); err != nil {
				return err
			}
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
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
	f.StringVar(&spec.Topic, "topic", "", "dotted subject such as job.chat.simple")
	f.Var(payloadFlag{raw: &spec.Payload, stdin: a.env.Stdin}, "payload", "job input: a JSON document, @FILE to read it from a file, or - to read it from stdin")
	f.StringVar(&spec.ContextPtr, "context-ptr", "", "opaque URI of a large input stored elsewhere")
	f.StringVar(&spec.AdapterID, "adapter-id", "", "adapter the job is for")
	f.Var(envFlag{&spec.Env}, "env", "KEY=VALUE for the job's env; repeat for more")
	f.Var(priorityFlag{&spec.Priority}, "priority", "integer, higher runs first, or critical, interactive, default, batch")
	f.Var(timeFlag{&spec.RunAt}, "run-at", "first attempt not before this RFC 3339 time (default now)")
	f.StringVar(&spec.DedupeKey, "dedupe-key", "", "at most one live job per tenant has this key")
	f.Var(intFlag{p: &spec.MaxAttempts, min: 1, max: lifecycle.MaxMaxAttempts}, "max-attempts",
		fmt.Sprintf("attempts before the job is dead-lettered (default %d)", lifecycle.DefaultMaxAttempts))
	f.Var(onExhaustedFlag{&spec.OnExhausted}, "on-exhausted", "where a job whose attempts ran out goes: dead_lettered (default) or failed")
	f.Var(durationFlag{&spec.Timeout}, "timeout", "limit on one attempt, start to finish, e.g. 30s (default none)")
	f.Var(timeFlag{&spec.Deadline}, "deadline", "RFC 3339 time by which the job must be finished (default none)")
	f.Var(durationFlag{&spec.CancelGrace}, "cancel-grace", fmt.Sprintf("how long a soft cancel waits for the worker to acknowledge (default %s)", lifecycle.DefaultCancelGrace))
	f.Var(durationFlag{&budget.runtime}, "budget-runtime", "halt the job once its attempts have run this long in all, e.g. 10m")
	f.Var(int64Flag{&budget.steps}, "budget-steps", "halt the job once it reports this many steps")
	f.Var(int64Flag{&budget.cost}, "budget-cost", "halt the job once it reports this much cost")
	f.StringVar(&spec.Tenant, "tenant", "", "tenant the job belongs to")
	f.StringVar(&spec.CorrelationID, "correlation-id", "", "id tying the job to the request that caused it")
	f.StringVar(&spec.TraceID, "trace-id", "", "trace the job belongs to")
	f.StringVar(&spec.ParentJobID, "parent", "", "id of the job that created this one")
	f.BoolVar(&asJSON, "json", false, "print the whole job as JSON")
	return cmd
}
