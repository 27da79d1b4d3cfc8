package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// listOptions are the page flags the job listings share.
type listOptions struct {
	p      store.JobListParams
	all    bool // every matching job, no limit
	newest bool // newest first
	asJSON bool
}

// listJobs is the run of the commands that list jobs (`jobs ls`, `dlq ls`):
// one page of the jobs o selects (or all of them with --all), as a JSON
// array with --json, otherwise as writeTable writes them. When more jobs
// follow the page it says how to get them: after the table, or on stderr
// with --json.
func (a *app) listJobs(o *listOptions, writeTable func(io.Writer, []lifecycle.Job) error) func(*cobra.Command, []string) error {
	return run(func(cmd *cobra.Command, _ []string) error {
		return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
			ctx := cmd.Context()
			if o.p.AfterID != "" {
				if _, err := st.JobGet(ctx, o.p.AfterID); errors.Is(err, store.ErrNotFound) {
					return usageErrorf("--after %q names no job: give the id of the last job of the previous page", o.p.AfterID)
				} else if err != nil {
					return err
				}
			}
			jobs, more, err := page(ctx, st, o)
			if err != nil {
				return err
			}
			if err := writeList(cmd.OutOrStdout(), jobs, o.asJSON, writeTable); err != nil {
				return err
			}
			if more {
				hint := fmt.Sprintf("more jobs follow: add --after %s for the next page, or --all for every one", jobs[len(jobs)-1].ID)
				if o.asJSON {
					fmt.Fprintf(cmd.ErrOrStderr(), "stint: %s\n", hint)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "(%s)\n", hint)
				}
			}
			return nil
		})
	})
}

// page reads the jobs o asks for and whether more follow them. Oldest first
// pages straight through the store's id order. Newest first reads the
// matching jobs older than --after in id order and keeps the newest of them
// (the store lists in id order only).
func page(ctx context.Context, st store.Store, o *listOptions) ([]lifecycle.Job, bool, error) {
	limit := o.p.Limit
	if !o.newest {
		if o.all {
			var all []lifecycle.Job
			err := scan(ctx, st, o.p, "", func(batch []lifecycle.Job) { all = append(all, batch...) })
			return all, false, err
		}
		jobs, err := st.JobList(ctx, &o.p)
		if err != nil || len(jobs) < limit {
			return jobs, false, err
		}
		next := o.p
		next.AfterID, next.Limit = jobs[len(jobs)-1].ID, 1
		rest, err := st.JobList(ctx, &next)
		return jobs, len(rest) > 0, err
	}
	before := o.p.AfterID
	var kept []lifecycle.Job
	p := o.p
	p.AfterID = ""
	err := scan(ctx, st, p, before, func(batch []lifecycle.Job) {
		kept = append(kept, batch...)
		if !o.all && len(kept) > 2*store.MaxBatch {
			// Only the newest limit+1 can be shown (or tell that more follow).
			kept = slices.Clone(kept[len(kept)-limit-1:])
		}
	})
	if err != nil {
		return nil, false, err
	}
	slices.Reverse(kept)
	if o.all || len(kept) <= limit {
		return kept, false, nil
	}
	return kept[:limit], true, nil
}

// scan reads every job p matches in id order, a store page at a time, up
// to (not including) the id stop when it is set, handing each page to keep.
func scan(ctx context.Context, st store.Store, p store.JobListParams, stop string, keep func([]lifecycle.Job)) error {
	p.Limit = store.MaxBatch
	for {
		jobs, err := st.JobList(ctx, &p)
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(jobs, func(j lifecycle.Job) bool { return stop != "" && j.ID >= stop }); i >= 0 {
			keep(jobs[:i])
			return nil
		}
		keep(jobs)
		if len(jobs) < p.Limit {
			return nil
		}
		p.AfterID = jobs[len(jobs)-1].ID
	}
}

// jobListFlags adds the filter and page flags the job listings share, and
// --json, to f.
func jobListFlags(f *pflag.FlagSet, o *listOptions) {
	f.StringVar(&o.p.Queue, "queue", "", "only jobs of this queue")
	f.StringVar(&o.p.Kind, "kind", "", "only jobs of this kind")
	f.StringVar(&o.p.AfterID, "after", "", "the next page: jobs that follow this one (the last of the previous page)")
	f.Var(intFlag{p: &o.p.Limit, min: 1, max: store.MaxBatch}, "limit", "at most this many jobs (a page)")
	f.BoolVar(&o.all, "all", false, "every matching job, in as many store reads as it takes")
	f.BoolVar(&o.newest, "newest", false, "newest first (default oldest first)")
	f.BoolVar(&o.asJSON, "json", false, "print the jobs as a JSON array")
}
