package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/store"
)

func (a *app) dlqReplayCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "replay ID",
		Short: "Run a dead-lettered job again, as a new job",
		Long: "replay enqueues a new job that repeats the dead-lettered job ID (same kind, queue,\n" +
			"payload, attempts, timeout, budget) with fresh attempts, linked to it by replay_of\n" +
			"and parent_job_id, and prints the new job's id. The dead-lettered job stays as it\n" +
			"is. While the new job is live, replaying again returns it instead of another.",
		Example: `  stint dlq replay 0190f3a2-...
  stint jobs show $(stint dlq replay 0190f3a2-...)`,
		Args: oneJobID,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				c, err := stint.NewClient(st, stint.ClientConfig{ActorID: cliActor, Clock: a.env.Clock})
				if err != nil {
					return err
				}
				j, err := c.Replay(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), j)
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), j.ID)
				return err
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the new job as JSON")
	return cmd
}
