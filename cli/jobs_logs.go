package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/store"
)

// logsPoll is how often `jobs logs -f` reads a running job.
const logsPoll = 500 * time.Millisecond

func (a *app) jobsLogsCmd() *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs ID",
		Short: "Print the output a job's command wrote (stint worker --exec); -f follows a running job",
		Long: "logs prints the tail of the output that `stint worker --exec` kept for the job (stdout\n" +
			"and stderr as they interleaved, the last --max-output bytes of the worker). With -f it\n" +
			"keeps printing new output until the job ends.",
		Args: oneJobID,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				return a.printLogs(cmd.Context(), cmd.OutOrStdout(), st, args[0], follow)
			})
		}),
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the job ends")
	return cmd
}

// printLogs prints the job's log, and with follow the new output of each
// later read until the job is terminal.
func (a *app) printLogs(ctx context.Context, out io.Writer, st store.Store, id string, follow bool) error {
	printed := ""
	for {
		j, err := st.JobGet(ctx, id)
		if err != nil {
			return err
		}
		var l jobLog
		if len(j.Progress) > 0 {
			_ = json.Unmarshal(j.Progress, &l) // a progress of another shape holds no log
		}
		switch {
		case strings.HasPrefix(l.Log, printed):
			fmt.Fprint(out, l.Log[len(printed):])
		default: // the kept tail moved past what was printed
			fmt.Fprint(out, "\n[... output cut ...]\n"+l.Log)
		}
		printed = l.Log
		if !follow || j.State.Terminal() {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.env.Clock.After(logsPoll):
		}
	}
}
