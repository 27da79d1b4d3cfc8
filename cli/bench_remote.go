package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/bench"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

type remoteBenchOptions struct {
	cfg      bench.RemoteConfig
	asJSON   bool
	embedded bool
}

func (a *app) benchRemoteCmd() *cobra.Command {
	o := remoteBenchOptions{cfg: bench.RemoteConfig{Pools: 20, Slots: 2, Jobs: 10_000, Batch: 100, Rate: 1000, Idle: 10 * time.Second}}
	cmd := &cobra.Command{
		Use:   "remote",
		Short: "Measure remote workers: jobs/s, end-to-end latency and the server's CPU per job and idle",
		Long: "remote starts `stint server` on a fresh PostgreSQL schema (--database-url; removed\n" +
			"afterwards) or uses the server at --url. With a server of its own it first works the\n" +
			"jobs with one embedded pool of --pools × --slots handlers straight on the database\n" +
			"(--embedded, on by default), enqueued the same way, to compare in the same run. It\n" +
			"starts --pools stock worker pools over\n" +
			"server/remote in this process (--slots handlers each, no-op handler), and measures the\n" +
			"server's CPU for --idle while they wait with no job. Then it enqueues --jobs jobs\n" +
			"through the API in batches of --batch at an offered --rate a second, and reports the\n" +
			"enqueue rate reached, the jobs worked a second, end-to-end latency (batch sent →\n" +
			"handler ran, p50/p99), the server's CPU per job and, when the database is local, the\n" +
			"CPU of the server's PostgreSQL backends per job (from /proc). It checks that every job\n" +
			"ran exactly once and, with a server of its own, that `stint verify` finds nothing;\n" +
			"it exits 1 if not.",
		Example: `  stint bench remote --database-url 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
  stint bench remote --database-url "$URL" --pools 500 --rate 1000 --jobs 10000
  stint bench remote --url http://10.0.0.5:7777 --token "$STINT_TOKEN" --idle 0`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.runRemoteBench(cmd, &o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.cfg.URL, "url", "", "use the server at this URL instead of starting one (its CPU is then not measured)")
	f.StringVar(&o.cfg.Token, "token", "", "token for --url: a worker-and-client (admin) token of the tenant to use")
	f.Var(intFlag{p: &o.cfg.Pools, min: 1, max: 10_000}, "pools", "remote worker pools")
	f.Var(intFlag{p: &o.cfg.Slots, min: 1, max: 1000}, "slots", "handlers each pool runs at once")
	f.Var(intFlag{p: &o.cfg.Jobs, min: 1, max: 100_000_000}, "jobs", "no-op jobs to enqueue and work")
	f.Var(intFlag{p: &o.cfg.Batch, min: 1, max: 1000}, "batch", "jobs per enqueue call")
	f.Float64Var(&o.cfg.Rate, "rate", o.cfg.Rate, "jobs a second offered")
	f.Var(durationFlag{d: &o.cfg.Idle}, "idle", "how long to read the server's CPU while the pools wait with no job; 0 skips it")
	f.BoolVar(&o.embedded, "embedded", true, "first work the same jobs with one embedded pool of pools × slots handlers on the same database, to compare (with a server of its own only)")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	return cmd
}

func (a *app) runRemoteBench(cmd *cobra.Command, o *remoteBenchOptions) (err error) {
	ctx := cmd.Context()
	if o.cfg.Rate <= 0 {
		return usageErrorf("--rate %v: offer a positive number of jobs a second", o.cfg.Rate)
	}
	if o.cfg.Idle == 0 {
		o.cfg.Idle = -1 // 0 on the command line skips it; in bench.RemoteConfig it means the default
	}
	where := o.cfg.URL
	if o.cfg.URL == "" {
		if a.databaseURL == "" {
			return usageErrorf("bench remote starts a server on PostgreSQL: give --database-url, or --url of a running server")
		}
		stop, err := a.benchServer(ctx, &o.cfg, o.embedded)
		if err != nil {
			return err
		}
		defer func() {
			if serr := stop(); err == nil {
				err = serr
			}
		}()
		where = "a `stint server` of its own on PostgreSQL"
	}
	out := cmd.OutOrStdout()
	if !o.asJSON {
		fmt.Fprintf(out, "stint bench remote: %d pools × %d slots on %s; %s jobs offered at %g/s in batches of %d\n",
			o.cfg.Pools, o.cfg.Slots, where, groupDigits(o.cfg.Jobs), o.cfg.Rate, o.cfg.Batch)
	}
	rep, err := bench.RunRemote(ctx, o.cfg)
	if err != nil {
		return err
	}
	if o.asJSON {
		err = writeJSON(out, rep)
	} else {
		err = writeRemoteReport(out, rep)
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("bench remote: the check failed: %v", rep.Problems)}
	}
	return nil
}

// benchServer starts `stint server` (this binary) on a fresh schema, and
// sets cfg's URL and the readers of its CPU, its backends' CPU and the
// database's check. The server's connections carry an application name of
// their own so that its backends can be told from others'.
func (a *app) benchServer(ctx context.Context, cfg *bench.RemoteConfig, embedded bool) (func() error, error) {
	if _, err := pgx.ParseConfig(a.databaseURL); err != nil {
		return nil, usageErrorf("bad --database-url: %v; expected a URL such as postgres://user@host:5432/db", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema, appName := "stint_bench_"+hex.EncodeToString(b[:]), "stint-bench-"+hex.EncodeToString(b[:])
	log := slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := postgres.OpenStore(ctx, a.databaseURL, postgres.Options{Schema: schema, Logger: log}) // makes the schema
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		st.Close()
		return nil, err
	}
	srv := exec.Command(exe, "server", "--listen", "127.0.0.1:0", "--no-auth", "--database-url", a.databaseURL, "--schema", schema)
	srv.Env = append(os.Environ(), "PGAPPNAME="+appName)
	srv.Stderr = a.env.Stderr
	url, err := startChild(srv)
	cleanup := func() error {
		if srv.Process != nil {
			_ = srv.Process.Signal(os.Interrupt)
			_ = srv.Wait()
		}
		return errors.Join(st.Close(), dropSchema(a.databaseURL, schema))
	}
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	conn, err := pgx.Connect(ctx, a.databaseURL)
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	cfg.URL = url
	cfg.ServerCPU = func() (time.Duration, error) { return bench.ProcCPU(srv.Process.Pid) }
	cfg.DatabaseCPU = func() (time.Duration, error) { return backendsCPU(ctx, conn, appName) }
	cfg.Verify = func(ctx context.Context) (store.VerifyReport, error) { return st.Verify(ctx, &store.VerifyParams{}) }
	if embedded {
		embeddedApp := appName + "-embedded"
		cfg.Embedded = func(ctx context.Context) (store.Store, error) {
			u, err := withAppName(a.databaseURL, embeddedApp)
			if err != nil {
				return nil, err
			}
			return postgres.OpenStore(ctx, u, postgres.Options{Schema: schema, Logger: log})
		}
		cfg.EmbeddedDatabaseCPU = func() (time.Duration, error) { return backendsCPU(ctx, conn, embeddedApp) }
	}
	return func() error { return errors.Join(conn.Close(context.Background()), cleanup()) }, nil
}

// withAppName returns the database URL u with application_name set, so
// that the backends of a store opened with it can be told from others'.
func withAppName(u, name string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme == "" {
		return "", usageErrorf("bench remote measures the embedded pool's PostgreSQL backends by application name, which needs a URL form of --database-url (postgres://...), not %q", u)
	}
	q := parsed.Query()
	q.Set("application_name", name)
	parsed.RawQuery = q.Encode()
	return parsed.String(), nil
}

// startChild starts a `stint server` and returns the URL it listens on.
func startChild(cmd *exec.Cmd) (string, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "stint server listening on "); ok {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return url, nil
		}
	}
	return "", fmt.Errorf("bench remote: the server exited before listening (%v); its errors are above", sc.Err())
}

// backendsCPU sums the CPU of the PostgreSQL backends serving appName, read
// from /proc: only when the database runs on this machine. Backends that
// ended took their CPU time with them.
func backendsCPU(ctx context.Context, conn *pgx.Conn, appName string) (time.Duration, error) {
	rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", appName)
	if err != nil {
		return 0, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, pid := range pids {
		d, err := bench.ProcCPU(int(pid))
		if err != nil {
			return 0, fmt.Errorf("%w (is PostgreSQL on another machine? then run without its CPU)", err)
		}
		total += d
	}
	return total, nil
}

// writeRemoteReport prints the report for people.
func writeRemoteReport(w io.Writer, r bench.RemoteReport) error {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if e := r.Embedded; e != nil {
		t.row("embedded pool", fmt.Sprintf("%d handlers in one pool on the database: %s jobs/s worked, p50 %.1fms p99 %.1fms, enqueue %s/s",
			e.Handlers, groupDigits(int(e.WorkedRate)), e.P50MS, e.P99MS, groupDigits(int(e.EnqueueRate))))
		t.row("", fmt.Sprintf("CPU/job: pool process %.0f µs, its PostgreSQL backends %.0f µs; enqueue through the server %.0f µs + its backends %.0f µs",
			e.ClientCPUPerJobUS, e.DatabaseCPUPerJobUS, e.ServerCPUPerJobUS, e.ServerDatabaseCPUPerJobUS))
	}
	if r.IdleSeconds > 0 {
		t.row("idle", fmt.Sprintf("server %.4f cores, PostgreSQL backends %.4f cores  (%d pools waiting, %.1fs)", r.ServerIdleCores, r.DatabaseIdleCores, r.Pools, r.IdleSeconds))
	}
	t.row("enqueue", fmt.Sprintf("%s jobs/s reached of %g offered", groupDigits(int(r.EnqueueRate)), r.OfferedRate))
	t.row("work", fmt.Sprintf("%s jobs/s  (%s jobs done %.2fs after the first was sent)", groupDigits(int(r.WorkedRate)), groupDigits(r.Jobs), r.Seconds))
	if e := r.Embedded; e != nil && e.RemoteShare > 0 {
		t.row("remote/embedded", fmt.Sprintf("%.0f%% of the embedded pool's jobs/s", 100*e.RemoteShare))
	}
	t.row("end to end", fmt.Sprintf("p50 %.1fms  p99 %.1fms  (batch sent → handler ran)", r.P50MS, r.P99MS))
	t.row("requests", fmt.Sprintf("%.2f a job from the pools to the server (claims, completions, heartbeats)", r.RequestsPerJob))
	if r.ServerCPUPerJobUS > 0 {
		t.row("server CPU", fmt.Sprintf("%.0f µs/job", r.ServerCPUPerJobUS))
	}
	if r.DatabaseCPUPerJobUS > 0 {
		t.row("PostgreSQL CPU", fmt.Sprintf("%.0f µs/job  (the server's backends)", r.DatabaseCPUPerJobUS))
	}
	t.row("workers' CPU", fmt.Sprintf("%.0f µs/job  (this process: the remote pools and the producer)", r.ClientCPUPerJobUS))
	check := "every job ran exactly once"
	if r.Verified {
		check += "; verify clean"
	}
	if !r.OK() {
		problems := r.Problems
		if r.Embedded != nil {
			problems = append(problems, r.Embedded.Problems...)
		}
		check = fmt.Sprintf("FAILED: %v", problems)
	}
	t.row("check", check)
	return t.flush()
}
