package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/demo"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/store"
)

// devActor names stint dev in the events of the demo jobs it enqueues.
const devActor = "stint-dev"

// devStopPatience bounds how long stint dev waits, after the grace period,
// for handlers that ignore cancellation before it releases their jobs.
const devStopPatience = 30 * time.Second

// devGrace is stint dev's default --shutdown-grace: shorter than a
// production pool's, since someone is waiting at the terminal.
const devGrace = 5 * time.Second

type devOptions struct {
	queues      string
	admission   string // --admission: a JSON file of rules
	concurrency int
	enqueueDemo bool
	grace       time.Duration
	api         string // where the API is served (cli/server.go)
	webhook     string // --webhook: a URL subscribed before the demo run starts
	secret      string // --webhook-secret
	bus         busOptions
}

func (a *app) devCmd() *cobra.Command {
	o := devOptions{queues: lifecycle.DefaultQueue, concurrency: stint.DefaultMaxWorkers, grace: devGrace, api: "127.0.0.1:7777"}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run stint in one process with demo workers (start here)",
		Long: "dev runs everything in one process on the embedded database (--db, default\n" +
			"./stint.db, created if missing; or PostgreSQL with --database-url): the maintenance\n" +
			"services (scheduler, reaper, timeouts, cancel finalizer, retention) and a worker\n" +
			"pool running the demo kinds (" + strings.Join(demo.Kinds, ", ") + ").\n" +
			"It prints each attempt it runs, and how to enqueue from a second terminal.\n\n" +
			"On a database with no jobs yet it enqueues a few demo jobs so that something\n" +
			"happens (--enqueue-demo=false to skip them; --enqueue-demo to add them anyway).\n\n" +
			"Ctrl-C stops it cleanly: no new claims, running jobs get --shutdown-grace to\n" +
			"finish, then are cancelled and released so the next run picks them up at once.\n" +
			"A second Ctrl-C quits at once; what was running then returns after its lease expires.",
		Example: `  stint dev
  stint dev --db /tmp/demo.db --queues default,batch=4
  stint dev --database-url postgres://postgres@127.0.0.1:5432/stint
  stint dev --webhook http://127.0.0.1:8080/hook   # with stint webhooks listen in another terminal`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			queues, order, err := parseQueues(o.queues, o.concurrency)
			if err != nil {
				return err
			}
			if o.secret != "" && o.webhook == "" {
				return usageErrorf("--webhook-secret goes with --webhook URL")
			}
			if err := checkWebhookURL(o.webhook); err != nil {
				return err
			}
			auto := !cmd.Flags().Changed("enqueue-demo")
			return a.runDev(cmd.Context(), cmd.OutOrStdout(), o, queues, order, auto)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.queues, "queues", o.queues, "queues to work, comma-separated, each NAME or NAME=WORKERS")
	f.Var(intFlag{p: &o.concurrency, min: 1, max: store.MaxBatch}, "concurrency", "workers per queue when --queues gives no number")
	f.BoolVar(&o.enqueueDemo, "enqueue-demo", false, "enqueue the demo jobs at start (default: only when the database has no jobs)")
	f.StringVar(&o.admission, "admission", "", "JSON file of admission rules applied at every enqueue (see docs/flow.md)")
	f.StringVar(&o.webhook, "webhook", "", "subscribe this URL to every event before the demo run starts (see `stint webhooks listen`)")
	f.StringVar(&o.secret, "webhook-secret", "", "the --webhook's signing secret; default: a new one, printed")
	f.StringVar(&o.api, "api", o.api, "loopback address to serve the API on (see `stint server`)")
	o.bus.register(f)
	f.Var(durationFlag{&o.grace}, "shutdown-grace", "how long running jobs may finish after Ctrl-C before they are cancelled and released; 0 cancels at once")
	return cmd
}

// parseQueues reads "a,b=4" into {a: def, b: 4}, and the queues in the
// order given.
func parseQueues(s string, def int) (map[string]int, []string, error) {
	queues := map[string]int{}
	var order []string
	for item := range strings.SplitSeq(s, ",") {
		name, n, hasN := strings.Cut(strings.TrimSpace(item), "=")
		name = strings.TrimSpace(name)
		workers := def
		if hasN {
			var err error
			if workers, err = strconv.Atoi(strings.TrimSpace(n)); err != nil || workers < 1 || workers > store.MaxBatch {
				return nil, nil, usageErrorf("--queues %q: the workers of queue %q are %q: expected an integer from 1 to %d", s, name, n, store.MaxBatch)
			}
		}
		if name == "" {
			return nil, nil, usageErrorf("--queues %q has an empty queue name: expected NAME or NAME=WORKERS, comma-separated, such as default,batch=4", s)
		}
		if err := lifecycle.CheckName("queue", name); err != nil {
			return nil, nil, usageErrorf("--queues: %v", err)
		}
		if _, dup := queues[name]; dup {
			return nil, nil, usageErrorf("--queues %q names queue %q twice", s, name)
		}
		queues[name] = workers
		order = append(order, name)
	}
	return queues, order, nil
}

// runDev runs the pool and the maintenance services until ctx ends, then
// stops them in order: the pool first (its releases need no maintenance),
// then the services.
func (a *app) runDev(ctx context.Context, out io.Writer, o devOptions, queues map[string]int, order []string, auto bool) (err error) {
	if err := a.loadAdmission(o.admission); err != nil {
		return err
	}
	st, err := a.openStore(ctx, mayCreate)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	out = &lockedWriter{w: out}
	// The services say what they changed (Info); the pool's and the
	// election's Info lines would repeat narrate's and the banner's.
	logger, quiet := devLogger(out, slog.LevelInfo), devLogger(out, slog.LevelWarn)
	mopts, err := a.metricsOptions()
	if err != nil {
		return err
	}
	if st, err = observe(ctx, st, a.env.Clock, quiet, time.Second, mopts...); err != nil { // metrics, /stats and the dashboard (obs)
		return err
	}

	mux := stint.NewMux()
	demo.Register(mux, a.env.Clock)
	mux.Use(narrate(out, a.env.Clock))
	traceDev(st, mux)

	// The pool and the services run until stopped here, not when ctx ends,
	// so that they stop in order.
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	m, err := maintenance.New(st, &maintenance.Config{Logger: logger, Clock: a.env.Clock,
		Election: maintenance.ElectorConfig{Logger: quiet, OnChange: func(c maintenance.LeaderChange) {
			if c.Leader {
				fmt.Fprintf(out, "%s maintenance: this process leads (term %d): scheduler, reaper, timeouts, cancel finalizer, retention\n", stamp(a.env.Clock), c.Term)
			} else {
				fmt.Fprintf(out, "%s maintenance: no longer leading (%s)\n", stamp(a.env.Clock), c.Reason)
			}
		}}})
	if err != nil {
		return err
	}
	grace := o.grace
	if grace == 0 {
		grace = -1 // the pool's "no grace"
	}
	// The pool leaves the services to m, which narrates its elections.
	pool, err := stint.NewPool(st, mux, stint.Config{Queues: queues, ShutdownGrace: grace, Clock: a.env.Clock, Logger: quiet,
		NoMaintenance: true, OnOutcome: narrateOutcome(out, a.env.Clock)})
	if err != nil {
		return err
	}

	if err := observeDevPool(st, pool, queues); err != nil {
		return err
	}
	a.devBanner(out, queues, order)
	if err := m.Start(runCtx); err != nil {
		return err
	}
	defer m.Stop()
	if err := pool.Start(runCtx); err != nil {
		return err
	}
	// The demo run goes with the demo jobs; webhooks (stint webhooks add)
	// receive the outbox (runs_dev.go).
	wantRun, err := a.wantDemo(ctx, st, o.enqueueDemo, auto)
	if err != nil {
		_ = pool.Stop(context.Background())
		return err
	}
	if err := a.enqueueDemo(ctx, st, out, o.enqueueDemo, auto, order[0]); err != nil {
		_ = pool.Stop(context.Background())
		return err
	}
	stopBus, err := a.startBus(runCtx, out, st, &o.bus, logger)
	if err != nil {
		_ = pool.Stop(context.Background())
		return err
	}
	defer stopBus()
	stopOutbox, err := a.devOutbox(ctx, runCtx, st, out, logger, wantRun, order[0], o)
	if err != nil {
		_ = pool.Stop(context.Background())
		return err
	}
	defer stopOutbox()
	stopAPI, err := a.startDevAPI(context.WithoutCancel(ctx), out, st, o.api)
	if err != nil {
		_ = pool.Stop(context.Background())
		return err
	}
	defer stopAPI()

	<-ctx.Done()
	fmt.Fprintf(out, "\n%s stopping: no new claims; running jobs get %s to finish, then are released (Ctrl-C again quits at once)\n",
		stamp(a.env.Clock), max(o.grace, 0))
	stopCtx, cancel := context.WithTimeout(context.Background(), max(o.grace, 0)+devStopPatience)
	defer cancel()
	stopErr := pool.Stop(stopCtx)
	m.Stop()
	s := pool.Stats()
	fmt.Fprintf(out, "%s stopped after %s: %d succeeded, %d failed, %d ended otherwise (released to their queue, cancelled, halted)\n",
		stamp(a.env.Clock), plural(int(s.Claimed), "attempt"), s.Succeeded, s.Failed, max(s.Claimed-s.Succeeded-s.Failed, 0))
	return stopErr
}

// devBanner says what runs and how to use it from a second terminal.
func (a *app) devBanner(out io.Writer, queues map[string]int, order []string) {
	where := "SQLite " + a.db
	if a.databaseURL != "" {
		where = "PostgreSQL (schema " + a.pgSchema() + ")"
	}
	qs := make([]string, len(order))
	for i, q := range order {
		qs[i] = fmt.Sprintf("%s (%d workers)", q, queues[q])
	}
	prog := progName()
	flags := ""
	if a.databaseURL == "" && a.db != DefaultDB {
		flags = " --db " + shellQuote(a.db)
	}
	fmt.Fprintf(out, "stint dev on %s\n", where)
	fmt.Fprintf(out, "  working queues %s with kinds %s\n", strings.Join(qs, ", "), strings.Join(demo.Kinds, ", "))
	fmt.Fprintf(out, "\nFrom a second terminal:\n")
	fmt.Fprintf(out, "  %s enqueue%s --kind demo.sleep --payload '{\"ms\":500}'\n", prog, flags)
	fmt.Fprintf(out, "  %s enqueue%s --kind demo.fail --max-attempts 2     # ends in the dead-letter queue\n", prog, flags)
	fmt.Fprintf(out, "  %s jobs ls%s\n", prog, flags)
	fmt.Fprintf(out, "  %s jobs events%s ID\n", prog, flags)
	fmt.Fprintf(out, "  %s dlq ls%s\n", prog, flags)
	fmt.Fprintf(out, "  %s dlq replay%s ID\n", prog, flags)
	if a.databaseURL != "" {
		fmt.Fprintf(out, "  (give each the same --database-url and --schema, or set %s and %s there too)\n", EnvDatabaseURL, EnvSchema)
	}
	fmt.Fprintf(out, "Ctrl-C stops; nothing is lost.\n\n")
}

// enqueueDemo enqueues the demo jobs when asked, or, when not told either
// way (auto), when the database has no jobs at all.
func (a *app) enqueueDemo(ctx context.Context, st store.Store, out io.Writer, want, auto bool, queue string) error {
	if auto {
		jobs, err := st.JobList(ctx, &store.JobListParams{Limit: 1})
		if err != nil {
			return err
		}
		want = len(jobs) == 0
	}
	if !want {
		return nil
	}
	specs := demo.Specs(queue)
	if _, err := st.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs, ActorID: devActor}); err != nil {
		return err
	}
	kinds := make([]string, len(specs))
	for i, s := range specs {
		kinds[i] = s.Kind
	}
	fmt.Fprintf(out, "%s enqueued %s: %s\n", stamp(a.env.Clock), plural(len(specs), "demo job"), strings.Join(kinds, ", "))
	return nil
}

// narrate is middleware that prints one line when an attempt starts.
// How it ended is printed by narrateOutcome, once the store has answered.
func narrate(out io.Writer, clk interface{ Now() time.Time }) stint.Middleware {
	return func(next stint.Handler) stint.Handler {
		return stint.HandlerFunc(func(ctx context.Context, j *stint.Job) error {
			fmt.Fprintf(out, "%s %-9s %s %-13s attempt %d/%d\n", stamp(clk), "started", j.ID(), j.Kind(), j.Attempt(), j.MaxAttempts())
			return next.Work(ctx, j)
		})
	}
}

// narrateOutcome prints one line for each attempt that ended, saying what
// the store recorded: a handler that returned nil for a job cancelled
// meanwhile is "lost", never "succeeded".
func narrateOutcome(out io.Writer, clk interface{ Now() time.Time }) func(stint.Outcome) {
	return func(o stint.Outcome) {
		j := o.Job
		line := func(what, detail string) {
			fmt.Fprintf(out, "%s %-9s %s %-13s attempt %d/%d in %s%s\n", stamp(clk), what, j.ID, j.Kind, j.Attempt, j.MaxAttempts,
				o.Took.Round(time.Millisecond), detail)
		}
		herr := ""
		if o.HandlerErr != nil {
			herr = ": " + firstLineOf(o.HandlerErr.Error())
		}
		switch {
		case errors.Is(o.Err, stint.ErrLeaseLost) || errors.Is(o.Err, stint.ErrStaleLease):
			line("lost", ": the job is no longer this worker's ("+firstLineOf(o.Err.Error())+"); what the handler returned does not count")
		case errors.Is(o.Err, stint.ErrBudgetExceeded):
			line("halted", ": "+firstLineOf(o.Err.Error()))
		case o.Err != nil:
			line("unsaved", ": the outcome could not be written ("+firstLineOf(o.Err.Error())+"); the job runs again when its lease expires")
		case j.State == lifecycle.Succeeded:
			line("succeeded", "")
		case j.State == lifecycle.Retrying:
			line("failed", herr+" (retry at "+j.RunAt.Format("15:04:05.000")+")")
		case j.State == lifecycle.DeadLettered && o.Op == "fail":
			line("failed", herr+" (its last attempt: see `dlq ls`)")
		case j.State == lifecycle.Queued || j.State == lifecycle.Stalled:
			line("stopped", herr+" (released to its queue: the worker is stopping)")
		case j.State == lifecycle.Halted:
			line("halted", ": "+j.Reason)
		case j.State == lifecycle.TimedOut:
			line("timed out", herr)
		default:
			line(string(j.State), herr)
		}
	}
}

func stamp(clk interface{ Now() time.Time }) string { return clk.Now().Format("15:04:05.000") }

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// progName is how the user ran stint: "go run ./cmd/stint" from a go run
// build, else the binary's name.
func progName() string {
	exe := os.Args[0]
	if strings.Contains(exe, "go-build") {
		return "go run ./cmd/stint"
	}
	if base := filepath.Base(exe); base == "stint" {
		return base
	}
	return "stint"
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lockedWriter serializes writes from the handlers' goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
