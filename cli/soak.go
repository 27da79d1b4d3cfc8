package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/bench"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/sqlite"
)

type soakOptions struct {
	cfg    bench.SoakConfig
	chart  string
	title  string
	keep   bool
	asJSON bool
}

func (a *app) benchSoakCmd() *cobra.Command {
	o := soakOptions{cfg: bench.SoakConfig{Rate: bench.DefaultSoakRate, Duration: bench.DefaultSoakDuration, Interval: bench.DefaultSoakInterval}}
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Offer a fixed load for a while, hold the database's horizon in the middle, and chart what happens",
		Long: "soak enqueues --rate no-op jobs a second for --duration while a worker pool in its\n" +
			"DEFAULT configuration works them. Through the middle third of the run another\n" +
			"connection holds the horizon: a REPEATABLE READ transaction on PostgreSQL (vacuum\n" +
			"cannot remove what it might see), a read transaction on SQLite (checkpoints cannot\n" +
			"pass it, so the WAL grows). Every --interval it prints throughput, pickup latency\n" +
			"(p50/p99), and the storage: dead tuples and size of every stint table and index on\n" +
			"PostgreSQL, the WAL and database files' sizes on SQLite. --chart draws them (PNG or\n" +
			"SVG, by the file's extension). The summary compares the held and the released\n" +
			"thirds with the first: the targets are >= 80% throughput and p99 < 50 ms while held,\n" +
			">= 95% within 60 s of the release.\n\n" +
			"It runs on a fresh database, as stint bench does; PostgreSQL's own settings\n" +
			"(autovacuum above all) decide what the soak shows.",
		Example: `  stint bench soak --duration 30s --chart soak.svg
  stint bench soak --database-url 'postgres://postgres@127.0.0.1:5499/postgres?sslmode=disable' --rate 2000 --duration 6m --chart soak.png --json`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.runSoak(cmd, &o)
		}),
	}
	f := cmd.Flags()
	f.Var(intFlag{p: &o.cfg.Rate, min: 1, max: 1_000_000}, "rate", "jobs offered per second")
	f.Var(durationFlag{d: &o.cfg.Duration}, "duration", "how long the load is offered (at least three intervals)")
	f.Var(durationFlag{d: &o.cfg.Interval}, "interval", "length of one sample")
	f.StringVar(&o.chart, "chart", "", "draw the run to this file: .png or .svg")
	f.StringVar(&o.title, "title", "", "the chart's title (defaults to the backend, rate and duration)")
	f.BoolVar(&o.keep, "keep", false, "keep the database (the temporary SQLite file, or the PostgreSQL schema) and print where it is")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON (and nothing while it runs)")
	return cmd
}

func (a *app) runSoak(cmd *cobra.Command, o *soakOptions) (err error) {
	ctx := cmd.Context()
	if a.schema != "" {
		return usageErrorf("bench soak makes a fresh schema of its own: drop --schema (and %s)", EnvSchema)
	}
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(o.chart)), ".")
	if o.chart != "" && format != "png" && format != "svg" {
		return usageErrorf("--chart %s: name a .png or .svg file", o.chart)
	}
	if o.cfg.Interval < 10*time.Millisecond || o.cfg.Duration < 3*o.cfg.Interval {
		return usageErrorf("--duration %s and --interval %s: use an interval of at least 10ms and a duration of at least three intervals", o.cfg.Duration, o.cfg.Interval)
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	st, obs, where, cleanup, err := a.openSoakStore(ctx, cmd.Flags().Changed("db"), o.keep)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := cleanup(); err == nil {
			err = cerr
		}
	}()
	o.cfg.Observer = obs
	o.cfg.Pool.Logger = slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if !o.asJSON {
		fmt.Fprintf(out, "stint bench soak: %s jobs/s for %s on %s, worker pool in its default configuration; horizon held %s to %s\n",
			groupDigits(o.cfg.Rate), o.cfg.Duration, where, o.cfg.Duration/3, 2*(o.cfg.Duration/3))
		// Fixed widths: each row is printed as its interval closes.
		const row = "%7s  %4s  %8s  %7s  %7s  %7s  %11s  %8s  %7s\n"
		fmt.Fprintf(out, row, "t (s)", "held", "enqueued", "done/s", "p50 ms", "p99 ms", "dead tuples", "size MiB", "WAL MiB")
		o.cfg.Progress = func(iv bench.SoakInterval) {
			held := ""
			if iv.Held {
				held = "held"
			}
			fmt.Fprintf(out, row, fmt.Sprintf("%.1f", iv.End), held, groupDigits(iv.Enqueued), fmt.Sprintf("%.0f", iv.PerSec),
				fmt.Sprintf("%.2f", iv.PickupP50MS), fmt.Sprintf("%.2f", iv.PickupP99MS), groupDigits(int(iv.Storage.DeadTuples())),
				fmt.Sprintf("%.1f", float64(iv.Storage.Bytes())/(1<<20)), fmt.Sprintf("%.1f", float64(iv.Storage.WALBytes)/(1<<20)))
		}
	}
	rep, err := bench.Soak(ctx, st, o.cfg)
	if err != nil {
		return err
	}
	if o.chart != "" {
		title := o.title
		if title == "" {
			title = fmt.Sprintf("stint soak: %s, %d jobs/s offered for %s", a.benchBackend(), o.cfg.Rate, o.cfg.Duration)
		}
		if err := writeChart(o.chart, rep, format, title); err != nil {
			return err
		}
	}
	res := soakResult{Backend: a.benchBackend(), Database: where, Chart: o.chart, SoakReport: rep}
	if o.asJSON {
		return writeJSON(out, res)
	}
	return writeSoakSummary(out, res)
}

// soakResult is what stint bench soak prints with --json.
type soakResult struct {
	Backend  string `json:"backend"`
	Database string `json:"database"`
	Chart    string `json:"chart,omitempty"`
	bench.SoakReport
}

func writeChart(path string, rep bench.SoakReport, format, title string) error {
	f, err := os.Create(path)
	if err != nil {
		return usageErrorf("--chart: %v", err)
	}
	if err := bench.WriteSoakChart(f, rep, format, title); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeSoakSummary prints the comparison with the targets for people.
func writeSoakSummary(w io.Writer, r soakResult) error {
	s := r.Summary
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row("first third", fmt.Sprintf("%.0f jobs/s", s.FirstPerSec))
	t.row("horizon held", fmt.Sprintf("%.0f jobs/s (%.0f%%), worst pickup p99 %.2f ms: target >= 80%% and < 50 ms %s",
		s.HeldPerSec, 100*s.HeldRatio, s.HeldP99MS, verdict(s.HeldMet)))
	t.row("after release", fmt.Sprintf("%.0f jobs/s (%.0f%%) within 60 s: target >= 95%% %s", s.AfterPerSec, 100*s.AfterRatio, verdict(s.AfterMet)))
	t.row("dead tuples", fmt.Sprintf("%s first, %s at most", groupDigits(int(s.DeadTuplesFirst)), groupDigits(int(s.DeadTuplesMax))))
	t.row("size", fmt.Sprintf("%.1f MiB first, %.1f MiB at most", float64(s.BytesFirst)/(1<<20), float64(s.BytesMax)/(1<<20)))
	t.row("backlog", fmt.Sprintf("%s jobs not done when the load stopped", groupDigits(s.Backlog)))
	if r.Chart != "" {
		t.row("chart", r.Chart)
	}
	return t.flush()
}

// openSoakStore opens a fresh database as stint bench does, with the
// observer that watches it from connections of its own.
func (a *app) openSoakStore(ctx context.Context, dbGiven, keep bool) (store.Store, bench.Observer, string, func() error, error) {
	log := slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if a.databaseURL != "" {
		if _, err := pgx.ParseConfig(a.databaseURL); err != nil {
			return nil, nil, "", nil, usageErrorf("bad --database-url: %v; expected a URL such as postgres://user@host:5432/db", err)
		}
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "stint_soak_" + hex.EncodeToString(b[:])
		st, err := postgres.OpenStore(ctx, a.databaseURL, postgres.Options{Schema: schema, Logger: log})
		if err != nil {
			return nil, nil, "", nil, err
		}
		obs, err := bench.PostgresObserver(ctx, a.databaseURL, schema)
		if err != nil {
			return nil, nil, "", nil, errors.Join(err, st.Close(), dropSchema(a.databaseURL, schema))
		}
		cleanup := func() error {
			cerr := errors.Join(obs.Close(), st.Close())
			if keep {
				fmt.Fprintf(a.env.Stderr, "stint: kept schema %s (use --schema %s)\n", schema, schema)
				return cerr
			}
			return errors.Join(cerr, dropSchema(a.databaseURL, schema))
		}
		return st, obs, "PostgreSQL (schema " + schema + ")", cleanup, nil
	}

	path, dir := a.db, ""
	if dbGiven {
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, "", nil, usageErrorf("bench soak needs a fresh database, and %s exists: name a new file with --db, or leave --db out for a temporary one", path)
		}
	} else {
		var err error
		if dir, err = os.MkdirTemp(a.tempDir(), "stint-soak-"); err != nil {
			return nil, nil, "", nil, err
		}
		path = filepath.Join(dir, "stint.db")
	}
	st, err := sqlite.OpenStore(ctx, path, sqlite.Options{Clock: a.env.Clock})
	if err != nil {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		return nil, nil, "", nil, err
	}
	cleanup := func() error {
		cerr := st.Close()
		switch {
		case keep:
			fmt.Fprintf(a.env.Stderr, "stint: kept %s (use --db %s)\n", path, path)
		case dir != "":
			return errors.Join(cerr, os.RemoveAll(dir))
		}
		return cerr
	}
	return st, bench.SQLiteObserver(path), "SQLite (" + path + ")", cleanup, nil
}
