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
	"runtime/pprof"
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

type benchOptions struct {
	cfg        bench.Config
	keep       bool
	cpuProfile string
	asJSON     bool
	noProgress bool
	viaAPI     bool // cli/server.go: the pool and producers work through an API server
}

func (a *app) benchCmd() *cobra.Command {
	o := benchOptions{cfg: bench.Config{Jobs: bench.DefaultJobs, Batch: bench.DefaultBatch,
		Producers: bench.DefaultProducers, LatencySamples: bench.DefaultLatencySamples,
		CancelSamples: bench.DefaultCancelSamples}}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure enqueue and work throughput, pickup latency and memory",
		Long: "bench enqueues --jobs no-op jobs in batches (EnqueueMany), then works them with a\n" +
			"worker pool in its DEFAULT configuration, and prints jobs/s for both phases. Then it\n" +
			"enqueues --latency-samples jobs one at a time into the idle pool and prints the\n" +
			"pickup latency (Enqueue returned → handler started, p50/p95/p99). Then it runs\n" +
			"--cancel-samples jobs one at a time, soft-cancels each while its handler runs, and\n" +
			"prints the cancel latency (Cancel returned → handler's context ended), and the peak\n" +
			"memory of the process. At the end it checks, from the jobs, their event logs and the\n" +
			"handler's own count, that every job succeeded exactly once; it exits 1 if not.\n\n" +
			"It runs on a fresh database: a temporary SQLite file (or --db naming a file that does\n" +
			"not exist yet), or with --database-url a fresh PostgreSQL schema stint_bench_<random>,\n" +
			"removed afterwards unless --keep.",
		Example: `  stint bench
  stint bench --jobs 20000 --json
  stint bench --database-url 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' --cpuprofile cpu.out`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.runBench(cmd, &o)
		}),
	}
	f := cmd.Flags()
	f.Var(intFlag{p: &o.cfg.Jobs, min: 1, max: 100_000_000}, "jobs", "no-op jobs to enqueue and work")
	f.Var(intFlag{p: &o.cfg.Batch, min: 1, max: store.MaxBatch}, "batch", "jobs per EnqueueMany call")
	f.Var(intFlag{p: &o.cfg.Producers, min: 1, max: 256}, "producers", "EnqueueMany calls at once")
	f.Var(intFlag{p: &o.cfg.LatencySamples, min: 0, max: 1_000_000}, "latency-samples", "jobs enqueued one at a time to measure pickup latency; 0 skips it")
	f.Var(intFlag{p: &o.cfg.CancelSamples, min: 0, max: 1_000_000}, "cancel-samples", "jobs cancelled one at a time while they run, to measure cancel latency; 0 skips it")
	f.BoolVar(&o.keep, "keep", false, "keep the database (the temporary SQLite file, or the PostgreSQL schema) and print where it is")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof reads it)")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&o.viaAPI, "via-api", false, "serve the fresh database on a loopback API server and run producers and pool through it, to measure the cost of the network")
	f.BoolVar(&o.noProgress, "no-progress", false, "no progress line on stderr (it shows only when stderr is a terminal)")
	cmd.AddCommand(a.benchSoakCmd())
	cmd.AddCommand(a.benchHistoryCmd())
	cmd.AddCommand(a.benchBusCmd())
	cmd.AddCommand(a.benchStepsCmd()) // cli/bench_steps.go
	cmd.AddCommand(a.benchRemoteCmd())
	return cmd
}

func (a *app) runBench(cmd *cobra.Command, o *benchOptions) (err error) {
	ctx := cmd.Context()
	if a.schema != "" {
		return usageErrorf("bench makes a fresh schema of its own: drop --schema (and %s)", EnvSchema)
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	st, where, schema, cleanup, err := a.openBenchStore(ctx, cmd.Flags().Changed("db"), o.keep)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := cleanup(); err == nil {
			err = cerr
		}
	}()
	profile, err := createProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer profile.Close()

	// 0 on the command line skips a phase; in bench.Config it means the default.
	if o.cfg.LatencySamples == 0 {
		o.cfg.LatencySamples = -1
	}
	if o.cfg.CancelSamples == 0 {
		o.cfg.CancelSamples = -1
	}
	o.cfg.Pool.Logger = slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var bar *progressLine
	if !o.noProgress && isTerminal(errOut) {
		bar = &progressLine{w: errOut}
		o.cfg.Progress = bar.show
	}
	if schema != "" {
		// The server's CPU per job, when it runs on this machine: the
		// backends of the store's connections (named after the schema by the
		// driver) and the whole cluster.
		probe, closeProbe, err := bench.PostgresCPU(ctx, a.databaseURL, postgres.ApplicationName(schema))
		if err != nil {
			return err
		}
		defer closeProbe()
		o.cfg.ServerCPU = probe
	}
	if o.viaAPI {
		var stop func()
		if st, where, stop, err = a.benchViaAPI(ctx, st, where); err != nil {
			return err
		}
		defer stop()
	}
	if !o.asJSON {
		fmt.Fprintf(out, "stint bench: %s no-op jobs on %s, worker pool in its default configuration\n", groupDigits(o.cfg.Jobs), where)
	}
	var rep bench.Report
	err = profiling(profile, func() (err error) {
		rep, err = bench.Run(ctx, st, o.cfg)
		return err
	})
	bar.clear()
	if err != nil {
		return err
	}
	res := benchResult{Backend: a.benchBackend(), Database: where, Report: rep}
	if o.asJSON {
		err = writeJSON(out, res)
	} else {
		err = writeBenchReport(out, res, o.cpuProfile)
	}
	if err != nil {
		return err
	}
	if !rep.Check.OK {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("bench: the check failed: %v", rep.Check.Problems)}
	}
	return nil
}

// benchResult is what stint bench prints with --json.
type benchResult struct {
	Backend  string `json:"backend"`
	Database string `json:"database"`
	bench.Report
}

func (a *app) benchBackend() string {
	if a.databaseURL != "" {
		return "postgres"
	}
	return "sqlite"
}

// openBenchStore opens a fresh database for the benchmark and returns a
// description of it, its PostgreSQL schema ("" on SQLite), and the function
// that closes (and, unless keep, removes) it.
func (a *app) openBenchStore(ctx context.Context, dbGiven, keep bool) (store.Store, string, string, func() error, error) {
	if a.databaseURL != "" {
		if _, err := pgx.ParseConfig(a.databaseURL); err != nil {
			return nil, "", "", nil, usageErrorf("bad --database-url: %v; expected a URL such as postgres://user@host:5432/db", err)
		}
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "stint_bench_" + hex.EncodeToString(b[:])
		log := slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		st, err := postgres.OpenStore(ctx, a.databaseURL, postgres.Options{Schema: schema, Logger: log})
		if err != nil {
			return nil, "", "", nil, err
		}
		cleanup := func() error {
			cerr := st.Close()
			if keep {
				fmt.Fprintf(a.env.Stderr, "stint: kept schema %s (use --schema %s)\n", schema, schema)
				return cerr
			}
			return errors.Join(cerr, dropSchema(a.databaseURL, schema))
		}
		return st, "PostgreSQL (schema " + schema + ")", schema, cleanup, nil
	}

	path, dir := a.db, ""
	if dbGiven {
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			return nil, "", "", nil, usageErrorf("bench needs a fresh database, and %s exists: name a new file with --db, or leave --db out for a temporary one", path)
		}
	} else {
		var err error
		if dir, err = os.MkdirTemp(a.tempDir(), "stint-bench-"); err != nil {
			return nil, "", "", nil, err
		}
		path = filepath.Join(dir, "stint.db")
	}
	st, err := sqlite.OpenStore(ctx, path, sqlite.Options{Clock: a.env.Clock})
	if err != nil {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		return nil, "", "", nil, err
	}
	cleanup := func() error {
		cerr := st.Close()
		switch {
		case keep && dir != "":
			fmt.Fprintf(a.env.Stderr, "stint: kept %s (use --db %s)\n", path, path)
		case dir != "":
			return errors.Join(cerr, os.RemoveAll(dir))
		}
		return cerr
	}
	return st, "SQLite (" + path + ")", "", cleanup, nil
}

// tempDir is where temporary files go: $TMPDIR, read through the Env.
func (a *app) tempDir() string {
	if d := a.env.Getenv("TMPDIR"); d != "" {
		return d
	}
	return os.TempDir()
}

// dropSchema removes the benchmark's schema with everything in it.
func dropSchema(url, schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}

// writeBenchReport prints the report for people.
func writeBenchReport(w io.Writer, r benchResult, profile string) error {
	rep := r.Report
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	q := rep.Pool.Queues
	t.row("pool", fmt.Sprintf("queues %v, fetch limit %d, completions batched up to %d, lease %s, poll %s",
		q, rep.Pool.FetchLimit, rep.Pool.CompleteBatch, rep.Pool.LeaseTTL, rep.Pool.PollInterval))
	t.row("enqueue", fmt.Sprintf("%s jobs/s  (%s jobs in %.2fs; batches of %d, %d at once)",
		groupDigits(int(rep.Enqueue.PerSecond)), groupDigits(rep.Enqueue.Jobs), rep.Enqueue.Seconds, rep.Enqueue.Batch, rep.Enqueue.Producers))
	t.row("work", fmt.Sprintf("%s jobs/s  (%s jobs in %.2fs)", groupDigits(int(rep.Work.PerSecond)), groupDigits(rep.Work.Jobs), rep.Work.Seconds))
	if g := rep.Work.Segments; g != nil {
		t.row("burn-down", fmt.Sprintf("first %s jobs %s jobs/s, last %s jobs/s (%.2f of the first)",
			groupDigits(g.Jobs), groupDigits(int(g.First)), groupDigits(int(g.Last)), g.LastOverFirst))
	}
	if e, w := rep.Enqueue.CPU, rep.Work.CPU; e != nil && w != nil {
		t.row("cpu", "enqueue: "+cpuLine(*e)+";  work: "+cpuLine(*w))
	}
	if p := rep.Pickup; p.Samples > 0 {
		t.row("pickup", fmt.Sprintf("p50 %.2fms  p95 %.2fms  p99 %.2fms  max %.2fms  (%d jobs enqueued one at a time into the idle pool)%s",
			p.P50MS, p.P95MS, p.P99MS, p.MaxMS, p.Samples, cpuNote(p.CPU, "sample")))
	}
	if c := rep.Cancel; c.Samples > 0 {
		t.row("cancel", fmt.Sprintf("p50 %.2fms  p95 %.2fms  p99 %.2fms  max %.2fms  (Cancel returned → handler's context ended; %d running jobs cancelled one at a time)%s",
			c.P50MS, c.P95MS, c.P99MS, c.MaxMS, c.Samples, cpuNote(c.CPU, "sample")))
	}
	m := rep.Memory
	t.row("memory", fmt.Sprintf("peak heap %s, peak Go runtime %s, peak RSS %s", mib(m.PeakHeapBytes), mib(m.PeakGoBytes), mib(m.MaxRSSBytes)))
	c := rep.Check
	if c.OK {
		t.row("check", fmt.Sprintf("ok: %s jobs succeeded exactly once (handler ran %s times; %s events, each job: %v; verify: %s)%s",
			groupDigits(c.Succeeded), groupDigits(c.HandlerRuns), groupDigits(c.Events), c.EventsPerJob, plural(len(c.Findings), "finding"), cpuNote(c.CPU, "job")))
	} else {
		t.row("check", fmt.Sprintf("FAILED: %v", c.Problems))
	}
	if profile != "" {
		t.row("profile", "CPU profile in "+profile+" (go tool pprof -top "+profile+")")
	}
	return t.flush()
}

// cpuLine prints a phase's CPU per job.
func cpuLine(c bench.CPU) string {
	s := fmt.Sprintf("client %.0f µs/job", c.ClientUSPerJob)
	if c.BackendsUSPerJob > 0 || c.ClusterUSPerJob > 0 {
		s += fmt.Sprintf(", PostgreSQL backends %.0f, cluster %.0f", c.BackendsUSPerJob, c.ClusterUSPerJob)
	}
	return s
}

// cpuNote is a probe's or the check's CPU per sample (or job), for the
// end of its line; "" when not measured.
func cpuNote(c *bench.CPU, per string) string {
	if c == nil {
		return ""
	}
	return ";  cpu per " + per + ": " + strings.ReplaceAll(cpuLine(*c), "µs/job", "µs")
}

func mib(b uint64) string {
	if b == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

// groupDigits writes n with thousands separators: 100,000.
func groupDigits(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + groupDigits(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// createProfile creates the --cpuprofile file, before any work so that a
// bad path is a usage error; nil without one. Closing a nil *os.File is a
// harmless error.
func createProfile(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, usageErrorf("--cpuprofile: %v", err)
	}
	return f, nil
}

// profiling runs fn under a CPU profile written to f, or plainly when f
// is nil: the measured part of a bench, not its setup.
func profiling(f *os.File, fn func() error) error {
	if f == nil {
		return fn()
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("start the CPU profile: %w", err)
	}
	defer pprof.StopCPUProfile()
	return fn()
}
