package cli

import (
	"github.com/spf13/cobra"
)

// dlqCmd groups the commands on the dead-letter queue: the jobs in state
// dead_lettered, waiting for someone to look at them.
func (a *app) dlqCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "dlq",
		Short: "List and replay dead-lettered jobs",
		Long: "A job is dead-lettered when its attempts run out, its lease is lost on its last\n" +
			"attempt, or its handler says so (a payload that does not parse, for example).\n" +
			"It stays there, untouched, until someone replays it as a new job.",
	},
		a.dlqLsCmd(),
		a.dlqReplayCmd(),
	)
}
