package cli

import (
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// listJobs is the run of the commands that list jobs (`jobs ls`, `dlq ls`):
// the jobs p selects, as a JSON array with --json, otherwise as writeTable
// writes them.
func (a *app) listJobs(p *store.JobListParams, asJSON *bool, writeTable func(io.Writer, []lifecycle.Job) error) func(*cobra.Command, []string) error {
	return run(func(cmd *cobra.Command, _ []string) error {
		return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
			jobs, err := st.JobList(cmd.Context(), p)
			if err != nil {
				return err
			}
			return writeList(cmd.OutOrStdout(), jobs, *asJSON, writeTable)
		})
	})
}

// jobListFlags adds the filter and page flags the job listings share, and
// --json, to f.
func jobListFlags(f *pflag.FlagSet, p *store.JobListParams, asJSON *bool) {
	f.StringVar(&p.Queue, "queue", "", "only jobs of this queue")
	f.StringVar(&p.Kind, "kind", "", "only jobs of this kind")
	f.StringVar(&p.AfterID, "after", "", "only jobs whose id sorts after this one (the next page)")
	f.Var(intFlag{p: &p.Limit, min: 1, max: store.MaxBatch}, "limit", "at most this many jobs")
	f.BoolVar(asJSON, "json", false, "print the jobs as a JSON array")
}
