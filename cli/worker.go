package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
)

// Environment variables that set --server and --token, the global flags
// that send every command to a stint server.
const (
	EnvServer = "STINT_SERVER"
	EnvToken  = "STINT_TOKEN"
)

// openRemote returns a store over the server of --server, as the token of
// --token sees it.
func (a *app) openRemote() (store.Store, error) {
	if a.databaseURL != "" {
		return nil, usageErrorf("--server and --database-url both name where jobs are: give one")
	}
	st, err := remote.New(remote.Options{URL: a.server, Token: a.token})
	if err != nil {
		return nil, usageErrorf("--server: %v", err)
	}
	return st, nil
}

type workerOptions struct {
	queues      string
	concurrency int
	kinds       string
	topics      string
	retryCodes  string
	killGrace   time.Duration
	maxOutput   int
	grace       time.Duration
	leaseTTL    time.Duration
	passEnv     []string
	passEnvAll  bool
	// metricsListen serves /metrics there when set (obs).
	metricsListen string
}

func (a *app) workerCmd() *cobra.Command {
	o := workerOptions{
		queues:      lifecycle.DefaultQueue,
		concurrency: 1, kinds: "exec", killGrace: 10 * time.Second, maxOutput: 64 << 10, grace: 30 * time.Second,
		leaseTTL: stint.DefaultLeaseTTL,
	}
	cmd := &cobra.Command{
		Use:   "worker --exec -- CMD [ARGS...]",
		Short: "Work jobs by running a command for each (a CI-style runner)",
		Long: "worker claims jobs of the given kinds and runs CMD for each: the payload on its stdin, its\n" +
			"identity in the environment (STINT_JOB_ID, STINT_ATTEMPT, STINT_MAX_ATTEMPTS, STINT_KIND,\n" +
			"STINT_QUEUE, STINT_FENCING_TOKEN) and, of the worker's own environment, only PATH, HOME,\n" +
			"LANG, TZ and TMPDIR, with those --pass-env names (or --pass-env-all): never " + EnvToken + " or a\n" +
			"database URL unless --pass-env names it exactly. It heartbeats while CMD runs, reports the phases\n" +
			"starting, running and uploading, and every second the tail of CMD's output (stdout and\n" +
			"stderr, the last --max-output bytes), which `stint jobs logs ID` shows. Exit 0 completes\n" +
			"the job: stdout is the result when it is JSON, else {\"output\": its tail}. Any other exit N fails the attempt\n" +
			"with error code exit_N: retried while attempts remain, or, when --retry-exit-codes is\n" +
			"given, only for those codes. A cancel sends SIGTERM to CMD's process group, then SIGKILL\n" +
			"after --kill-grace.\n\n" +
			"With the global --server (env " + EnvServer + ") and --token (env " + EnvToken + ") it works\n" +
			"through a stint server; otherwise on the database of --db or --database-url.",
		Example: `  stint worker --server http://ci:7777 --token $TOKEN --queues builds=4 --kinds build --exec -- ./build.sh
  stint worker --exec -- python3 job.py`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return usageErrorf("give the command after --exec --, such as: stint worker --exec -- ./run.sh")
			}
			return nil
		},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.runWorker(cmd.Context(), cmd.OutOrStdout(), o, args)
		}),
	}
	f := cmd.Flags()
	f.Bool("exec", true, "run the command after -- for each job (the only mode)")
	f.StringVar(&o.queues, "queues", o.queues, "queues to work, comma-separated, each NAME or NAME=WORKERS")
	f.Var(intFlag{p: &o.concurrency, min: 1, max: store.MaxBatch}, "concurrency", "commands at once per queue when --queues gives no number")
	f.StringVar(&o.kinds, "kinds", o.kinds, "job kinds to run, comma-separated")
	f.StringVar(&o.topics, "topics", "", "claim only jobs whose topic matches one of these patterns, comma-separated (job.chat.*, job.>); default: any topic")
	f.StringVar(&o.retryCodes, "retry-exit-codes", "", "exit codes that are retried, comma-separated; others fail the job at once (default: all are retried)")
	f.Var(durationFlag{&o.killGrace}, "kill-grace", "how long a cancelled command has between SIGTERM and SIGKILL")
	f.Var(intFlag{p: &o.maxOutput, min: 1, max: lifecycle.MaxPayloadBytes / 2}, "max-output", "bytes of output kept per job: the tail when longer")
	f.Var(durationFlag{&o.grace}, "shutdown-grace", "how long running commands may finish after Ctrl-C before they are cancelled")
	f.StringVar(&o.metricsListen, "metrics-listen", "", "serve Prometheus metrics (stint_pool_* and the job counters) at http://ADDR/metrics, e.g. :9090")
	f.StringArrayVar(&o.passEnv, "pass-env", nil, "also give commands this variable of the worker's environment (repeatable; globs such as AWS_* allowed)")
	f.BoolVar(&o.passEnvAll, "pass-env-all", false, "give commands the worker's whole environment, except "+EnvToken+" and database URLs unless --pass-env names them")
	f.Var(durationFlag{&o.leaseTTL}, "lease-ttl", "lease of each job; it heartbeats every third of it, and learns of a cancel at the latest then")
	return cmd
}

func (a *app) runWorker(ctx context.Context, out io.Writer, o workerOptions, argv []string) (err error) {
	queues, _, err := parseQueues(o.queues, o.concurrency)
	if err != nil {
		return err
	}
	retry, err := parseExitCodes(o.retryCodes)
	if err != nil {
		return err
	}
	if err := checkPassEnv(o.passEnv); err != nil {
		return err
	}
	kinds, err := parseKinds(o.kinds)
	if err != nil {
		return err
	}
	topics, err := parseTopics(o.topics)
	if err != nil {
		return err
	}
	st, err := a.openStore(ctx, mustExist)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	mux := stint.NewMux()
	r := &runner{argv: argv, retry: retry, killGrace: o.killGrace, maxOutput: o.maxOutput, clock: a.env.Clock,
		environ: a.env.Environ, env: commandEnv{pass: o.passEnv, passAll: o.passEnvAll, secrets: []string{a.token, a.databaseURL}}}
	for _, k := range kinds {
		mux.Handle(k, r)
	}
	mopts, err := a.metricsOptions()
	if err != nil {
		return err
	}
	st, observePool, err := observeWorker(ctx, st, mux, o.metricsListen, out, mopts...) // metrics and traces (obs)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	pool, err := stint.NewPool(st, mux, stint.Config{Queues: queues, Topics: topics, ShutdownGrace: o.grace, LeaseTTL: o.leaseTTL, Clock: a.env.Clock, Logger: logger})
	if err != nil {
		return err
	}
	if err := observePool(pool, queues); err != nil {
		return err
	}
	if err := pool.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(out, "stint worker %s: running %q for kinds %s\n", pool.WorkerID(), strings.Join(argv, " "), o.kinds)
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), o.grace+o.killGrace+10*time.Second)
	defer cancel()
	return pool.Stop(stopCtx)
}

// parseKinds reads --kinds, refusing a kind the store would refuse (so it
// never reaches Mux.Handle, which panics on one) and an empty list.
func parseKinds(s string) ([]string, error) {
	var kinds []string
	for k := range strings.SplitSeq(s, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if err := lifecycle.CheckName("kind", k); err != nil {
			return nil, usageErrorf("--kinds: %v", err)
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return nil, usageErrorf("--kinds %q names no kind: give the kinds to run, comma-separated", s)
	}
	return kinds, nil
}

// parseTopics reads --topics: topic patterns, each checked as the store
// checks them, so a bad one stops the worker before it claims anything.
func parseTopics(s string) ([]string, error) {
	var topics []string
	for t := range strings.SplitSeq(s, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if err := lifecycle.CheckTopicPattern(t); err != nil {
			return nil, usageErrorf("--topics: %v", err)
		}
		if !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	if len(topics) > stint.MaxTopics {
		return nil, usageErrorf("--topics names %d patterns: give at most %d", len(topics), stint.MaxTopics)
	}
	return topics, nil
}

func parseExitCodes(s string) ([]int, error) {
	var codes []int
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		n, err := strconv.Atoi(item)
		if err != nil || n < 1 || n > 255 {
			return nil, usageErrorf("--retry-exit-codes %q: %q is not an exit code from 1 to 255", s, item)
		}
		codes = append(codes, n)
	}
	return codes, nil
}

// runner is the handler of stint worker --exec: one process per attempt.
type runner struct {
	argv      []string
	retry     []int // nil: every failure is retried
	killGrace time.Duration
	maxOutput int
	clock     clock.Clock
	environ   func() []string // the worker's environment
	env       commandEnv      // what of it each command gets
}

// Work runs the command for one attempt.
func (r *runner) Work(ctx context.Context, j *stint.Job) error {
	_ = j.Phase(ctx, "starting")
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	// Its own process group, so a cancel reaches everything it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdin = bytes.NewReader(j.Payload())
	f := j.Fence()
	cmd.Env = append(r.env.build(r.environ()),
		"STINT_JOB_ID="+j.ID(), "STINT_ATTEMPT="+strconv.Itoa(j.Attempt()),
		"STINT_MAX_ATTEMPTS="+strconv.Itoa(j.MaxAttempts()), "STINT_KIND="+j.Kind(),
		"STINT_QUEUE="+j.Queue(), "STINT_FENCING_TOKEN="+f.LeaseID)
	// stdout is the result; the log, both streams as they interleave, is
	// reported as the job's progress for `stint jobs logs`.
	stdout, stderr, log := &tail{max: r.maxOutput}, &tail{max: r.maxOutput}, &tail{max: r.maxOutput}
	cmd.Stdout, cmd.Stderr = io.MultiWriter(stdout, log), io.MultiWriter(stderr, log)
	if err := cmd.Start(); err != nil {
		return stint.WithCode("runner_startup", fmt.Errorf("start %s: %w", r.argv[0], err))
	}
	_ = j.Phase(ctx, "running")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	reported := 0
	var err error
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-r.clock.After(r.killGrace):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			return context.Cause(ctx)
		case <-r.clock.After(logEvery):
			reported = reportLog(ctx, j, log, reported)
		}
	}
	reportLog(ctx, j, log, reported)
	_ = j.Phase(ctx, "uploading")
	if err == nil {
		out, cut := stdout.bytes()
		if !cut && json.Valid(out) && len(bytes.TrimSpace(out)) > 0 {
			return j.SetResult(json.RawMessage(bytes.TrimSpace(out)))
		}
		return j.SetResult(map[string]string{"output": string(out)})
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err
	}
	code := ee.ExitCode()
	if code < 0 { // killed by a signal nobody here sent
		code = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
	}
	errOut, _ := stderr.bytes()
	failure := stint.WithCode(fmt.Sprintf("exit_%d", code), fmt.Errorf("%s exited with %d: %s", r.argv[0], code, strings.TrimSpace(string(errOut))))
	if r.retry != nil && !slices.Contains(r.retry, code) {
		return stint.Permanent(failure)
	}
	return failure
}

// logEvery is how often a running command's new output is reported: a
// write per job per second at most, a human pace.
const logEvery = time.Second

// jobLog is the progress stint worker reports: the tail of the command's
// output, and whether its start was cut off.
type jobLog struct {
	Log string `json:"log"`
	Cut bool   `json:"log_cut,omitempty"`
}

// reportLog reports the output as the job's progress when it grew since
// written bytes were reported, and returns how many are reported now.
func reportLog(ctx context.Context, j *stint.Job, log *tail, reported int) int {
	b, cut, written := log.snapshot()
	if written == reported {
		return reported
	}
	if err := j.Progress(ctx, jobLog{Log: string(b), Cut: cut}); err != nil {
		return reported // the lease is gone or the store is away; the outcome says so
	}
	return written
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	cut     bool
	written int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.written += len(p)
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf, t.cut = append(t.buf[:0], t.buf[over:]...), true
	}
	return len(p), nil
}

// bytes returns what was kept and whether the start was cut off.
func (t *tail) bytes() ([]byte, bool) {
	b, cut, _ := t.snapshot()
	return b, cut
}

// snapshot is bytes and the count of all bytes ever written.
func (t *tail) snapshot() ([]byte, bool, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...), t.cut, t.written
}
