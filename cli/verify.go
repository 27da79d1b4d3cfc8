package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/store"
)

func (a *app) verifyCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check every job against its event log",
		Long: "verify replays every job's events through the lifecycle from nothing and reports each\n" +
			"job whose replay disagrees with its row (state, attempt, rev), breaks an invariant or\n" +
			"lacks its provenance record. It exits 1 when it finds any.",
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				out := cmd.OutOrStdout()
				var p store.VerifyParams
				if !asJSON {
					// Print findings as they are found: a large database takes a while.
					p.OnFinding = func(f store.Finding) {
						if f.RunID != "" { // a run's row disagrees with its run events
							fmt.Fprintf(out, "run %s: %s\n", f.RunID, f.Problem)
							return
						}
						fmt.Fprintf(out, "%s: %s\n", f.JobID, f.Problem)
					}
				}
				rep, err := st.Verify(cmd.Context(), &p)
				if err != nil {
					return err
				}
				if asJSON {
					err = writeJSON(out, rep)
				} else {
					runs := ""
					if rep.Runs > 0 {
						runs = ", " + plural(rep.Runs, "run")
					}
					_, err = fmt.Fprintf(out, "verified %s, %s%s: %s\n",
						plural(rep.Jobs, "job"), plural(rep.Events, "event"), runs, plural(len(rep.Findings), "finding"))
				}
				if err != nil {
					return err
				}
				if len(rep.Findings) > 0 {
					return &ExitError{Code: ExitFailure}
				}
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
