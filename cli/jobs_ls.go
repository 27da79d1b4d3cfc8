package cli

import (
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

func (a *app) jobsLsCmd() *cobra.Command {
	p := store.JobListParams{Limit: 100}
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List jobs, oldest first",
		Example: `  stint jobs ls --state queued,running --queue default
  stint jobs ls --after 0190f3a2-... --limit 50`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				jobs, err := st.JobList(cmd.Context(), &p)
				if err != nil {
					return err
				}
				if asJSON {
					if jobs == nil {
						jobs = []lifecycle.Job{}
					}
					return writeJSON(cmd.OutOrStdout(), jobs)
				}
				return writeJobTable(cmd.OutOrStdout(), jobs)
			})
		}),
	}
	f := cmd.Flags()
	f.Var(statesFlag{&p.States}, "state", "only jobs in these states (comma-separated or repeated): "+stateNames())
	f.StringVar(&p.Queue, "queue", "", "only jobs of this queue")
	f.StringVar(&p.Kind, "kind", "", "only jobs of this kind")
	f.StringVar(&p.AfterID, "after", "", "only jobs whose id sorts after this one (the next page)")
	f.Var(intFlag{p: &p.Limit, min: 1, max: store.MaxBatch}, "limit", "at most this many jobs")
	f.BoolVar(&asJSON, "json", false, "print the jobs as a JSON array")
	return cmd
}

// writeJobTable writes jobs as an aligned table, one job per line.
func writeJobTable(w io.Writer, jobs []lifecycle.Job) error {
	t := newTable(w, "ID", "KIND", "QUEUE", "STATE", "ATTEMPT", "REV", "RUN_AT", "CREATED")
	for _, j := range jobs {
		t.row(j.ID, j.Kind, j.Queue, string(j.State), strconv.Itoa(j.Attempt), strconv.FormatInt(j.Rev, 10),
			fmtTime(j.RunAt), fmtTime(j.CreatedAt))
	}
	return t.flush()
}
