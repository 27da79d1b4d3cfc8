package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

func (a *app) jobsCancelCmd() *cobra.Command {
	p := store.JobCancelParams{ActorID: cliActor}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a job",
		Long: "cancel stops a job. A job nobody holds is cancelled at once. A claimed or running\n" +
			"job is asked to stop (cancel_requested): its owner learns at its next heartbeat, and\n" +
			"the cancel is forced at the cancel deadline. --hard cancels any live job at once and\n" +
			"revokes its lease.",
		Args: oneJobID,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				p.JobID = args[0]
				j, err := st.JobCancel(cmd.Context(), &p)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), j)
				}
				out := cmd.OutOrStdout()
				if j.State == lifecycle.CancelRequested {
					_, err = fmt.Fprintf(out, "job %s: cancel_requested; its owner is told at its next heartbeat, and the cancel is forced at %s\n",
						j.ID, fmtTimePtr(j.CancelDeadline))
					return err
				}
				_, err = fmt.Fprintf(out, "job %s: %s\n", j.ID, j.State)
				return err
			})
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&p.Hard, "hard", false, "cancel at once, even while a worker holds the job")
	f.StringVar(&p.Reason, "reason", "", "why, recorded on the job and its event")
	f.BoolVar(&asJSON, "json", false, "print the job after the cancel as JSON")
	return cmd
}
