package cli

import (
	"github.com/spf13/cobra"
)

// jobsCmd groups the commands that inspect and change existing jobs.
func (a *app) jobsCmd() *cobra.Command {
	return group(&cobra.Command{Use: "jobs", Short: "List, inspect and cancel jobs"},
		a.jobsLsCmd(),
		a.jobsShowCmd(),
		a.jobsEventsCmd(),
		a.jobsCancelCmd(),
		a.jobsLogsCmd(),        // cli/jobs_logs.go: the output stint worker --exec keeps
		a.jobsSignalCmd(),      // cli/jobs_steps.go
		a.jobsExportStepsCmd(), // cli/jobs_steps.go
		a.jobsStepCmd(),        // cli/jobs_step.go: a durable step for --exec commands
	)
}

// oneJobID is the Args check of the commands that take one job id.
func oneJobID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 || args[0] == "" {
		return usageErrorf("%s takes exactly one job id (got %d arguments): expected `%s ID`",
			cmd.CommandPath(), len(args), cmd.CommandPath())
	}
	return nil
}
