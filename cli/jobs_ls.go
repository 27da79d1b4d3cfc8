package cli

import (
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

func (a *app) jobsLsCmd() *cobra.Command {
	o := listOptions{p: store.JobListParams{Limit: 100}}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List jobs, oldest first (--newest for newest first), a page at a time",
		Example: `  stint jobs ls --state queued,running --queue default
  stint jobs ls --after 0190f3a2-... --limit 50
  stint jobs ls --newest --limit 10
  stint jobs ls --all --json`,
		Args: cobra.NoArgs,
		RunE: a.listJobs(&o, writeJobTable),
	}
	f := cmd.Flags()
	f.Var(statesFlag{&o.p.States}, "state", "only jobs in these states (comma-separated or repeated): "+stateNames())
	jobListFlags(f, &o)
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
