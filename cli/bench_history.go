package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/bench"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

type historyOptions struct {
	cfg    bench.HistoryConfig
	keep   bool
	asJSON bool
}

func (a *app) benchHistoryCmd() *cobra.Command {
	o := historyOptions{cfg: bench.HistoryConfig{Jobs: bench.DefaultHistoryJobs, PerHour: bench.DefaultHistoryPerHour,
		Retention: bench.DefaultHistoryRetention, Partition: time.Hour, Batch: bench.DefaultHistoryBatch,
		Workers: bench.DefaultHistoryWorkers, Maintain: bench.DefaultHistoryMaintain}}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Run many jobs through simulated hours and show how large the history grows (PostgreSQL)",
		Long: "history drives the store directly with a simulated clock: --jobs jobs, --per-hour of\n" +
			"them a simulated hour, each enqueued (in batches, by COPY), claimed with start and\n" +
			"completed at once, with a maintenance pass every --maintain of simulated time as the\n" +
			"retention service makes one: the coming history partitions made, then retention of\n" +
			"--retention (finished jobs deleted, whole history partitions dropped). At every\n" +
			"simulated hour and at the end it prints the rows, bytes and partitions of job_events,\n" +
			"jobs, outbox and run_events, and at the end how many partitions' worth of jobs the\n" +
			"history holds: the target of issue 12 is about two. It needs PostgreSQL\n" +
			"(--database-url); it works in a fresh schema stint_history_<random>, removed\n" +
			"afterwards unless --keep.",
		Example: `  stint bench history --database-url 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' --jobs 200000 --per-hour 50000
  stint bench history --database-url "$URL" --jobs 10000000 --retention 1h --partition 1h --per-hour 2000000 --json`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.runHistory(cmd, &o)
		}),
	}
	f := cmd.Flags()
	f.Var(intFlag{p: &o.cfg.Jobs, min: 1, max: 1_000_000_000}, "jobs", "jobs to run through")
	f.Var(intFlag{p: &o.cfg.PerHour, min: 1, max: 1_000_000_000}, "per-hour", "jobs a simulated hour holds")
	f.Var(durationFlag{d: &o.cfg.Retention}, "retention", "how long a finished job is kept")
	f.Var(durationFlag{d: &o.cfg.Partition}, "partition", "width of a history partition (1h to 720h)")
	f.Var(durationFlag{d: &o.cfg.Maintain}, "maintain", "simulated time between maintenance passes")
	f.Var(intFlag{p: &o.cfg.Batch, min: 1, max: store.MaxBatch}, "batch", "jobs per enqueue, claim and completion call")
	f.Var(intFlag{p: &o.cfg.Workers, min: 1, max: 64}, "workers", "batches run at once, each in a queue of its own")
	f.BoolVar(&o.keep, "keep", false, "keep the PostgreSQL schema and print its name")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON (and nothing while it runs)")
	return cmd
}

func (a *app) runHistory(cmd *cobra.Command, o *historyOptions) (err error) {
	ctx := cmd.Context()
	if a.databaseURL == "" {
		return usageErrorf("bench history needs PostgreSQL: give --database-url (SQLite keeps no partitions)")
	}
	if a.schema != "" {
		return usageErrorf("bench history makes a fresh schema of its own: drop --schema (and %s)", EnvSchema)
	}
	if o.cfg.Partition < time.Hour || o.cfg.Partition > 720*time.Hour {
		return usageErrorf("--partition %s: use from 1h to 720h", o.cfg.Partition)
	}
	if o.cfg.Retention <= 0 || o.cfg.Maintain <= 0 {
		return usageErrorf("--retention %s and --maintain %s: use positive durations", o.cfg.Retention, o.cfg.Maintain)
	}
	if _, err := pgx.ParseConfig(a.databaseURL); err != nil {
		return usageErrorf("bad --database-url: %v; expected a URL such as postgres://user@host:5432/db", err)
	}
	out := cmd.OutOrStdout()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "stint_history_" + hex.EncodeToString(b[:])
	log := slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := postgres.OpenStore(ctx, a.databaseURL, postgres.Options{Schema: schema, Logger: log, EventPartition: o.cfg.Partition})
	if err != nil {
		return errors.Join(err, dropSchema(a.databaseURL, schema))
	}
	defer func() {
		cerr := st.Close()
		if o.keep {
			fmt.Fprintf(a.env.Stderr, "stint: kept schema %s (use --schema %s)\n", schema, schema)
		} else {
			cerr = errors.Join(cerr, dropSchema(a.databaseURL, schema))
		}
		if err == nil {
			err = cerr
		}
	}()
	const row = "%6s  %11s  %11s  %5s  %10s  %9s  %10s  %9s  %8s  %8s  %8s\n"
	if !o.asJSON {
		fmt.Fprintf(out, "stint bench history: %s jobs, %s a simulated hour, retention %s, partitions of %s, maintenance every %s (simulated), schema %s\n",
			groupDigits(o.cfg.Jobs), groupDigits(o.cfg.PerHour), o.cfg.Retention, o.cfg.Partition, o.cfg.Maintain, schema)
		fmt.Fprintf(out, row, "hour", "jobs done", "events", "parts", "events MiB", "jobs", "jobs MiB", "outbox", "run ev.", "parts x", "wall")
		worth := float64(o.cfg.PerHour) * o.cfg.Partition.Hours()
		o.cfg.Observe = func(p bench.HistoryPoint) {
			ev, jobs := p.Tables["job_events"], p.Tables["jobs"]
			fmt.Fprintf(out, row, fmt.Sprintf("%.2f", p.Hour), groupDigits(p.JobsDone), groupDigits(int(ev.Rows)), fmt.Sprint(ev.Partitions),
				fmt.Sprintf("%.1f", float64(ev.Bytes)/(1<<20)), groupDigits(int(jobs.Rows)), fmt.Sprintf("%.1f", float64(jobs.Bytes)/(1<<20)),
				groupDigits(int(p.Tables["outbox"].Rows)), groupDigits(int(p.Tables["run_events"].Rows)),
				fmt.Sprintf("%.2f", float64(ev.Rows)/4/worth), p.Elapsed.Round(time.Second).String())
		}
	}
	rep, err := bench.RunHistory(ctx, st, a.databaseURL, schema, o.cfg)
	if err != nil {
		return err
	}
	if o.asJSON {
		return writeJSON(out, rep)
	}
	fmt.Fprintf(out, "history at the end: %s jobs' events, %.2f partitions' worth (one is %s jobs; the target is about 2, the peak was %.2f); %s jobs in %s, %.0f jobs/s\n",
		groupDigits(int(rep.HistoryJobs)), rep.Ratio, groupDigits(int(rep.PartitionWorth)), rep.PeakRatio,
		groupDigits(rep.Jobs), rep.Wall.Round(time.Second), rep.JobsPerSecond)
	return nil
}
