package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// queuesCmd is `stint queues`: what waits in each queue, and the queue's
// cluster-wide controls.
func (a *app) queuesCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "queues",
		Short: "Show queues; pause, resume and limit them",
		Long: "Queue controls hold across every node: a paused queue is skipped by claims (running\n" +
			"jobs finish; enqueues still land); limits are enforced inside the claim transaction.\n" +
			"A queue paused or limited for the first time is seen by other nodes within a second.",
	}, a.queuesLsCmd(), a.queuesPauseCmd(true), a.queuesPauseCmd(false), a.queuesLimitCmd())
}

func (a *app) queuesLsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List queues: depth by state, running, paused, limits, oldest waiting, unserved kinds",
		Long: "ls shows every queue that has jobs or settings. UNSERVED lists kinds with queued jobs\n" +
			"that no worker seen in the last minute claims (workers are recorded when they claim).",
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				qs, err := store.Queues(st)
				if err != nil {
					return err
				}
				info, err := qs.QueueInfo(cmd.Context())
				if err != nil {
					return err
				}
				return writeList(cmd.OutOrStdout(), info, asJSON, writeQueues)
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the queues as JSON")
	return cmd
}

func writeQueues(w io.Writer, info []store.QueueInfo) error {
	t := newTable(w, "QUEUE", "PAUSED", "QUEUED", "SCHEDULED", "RUNNING", "RETRYING", "STALLED", "OLDEST WAITING", "MAX RUNNING", "RATE", "PER KEY", "FAIR", "UNSERVED")
	for _, q := range info {
		paused, rate, maxRunning, fair, perKey := "", "", "", "", ""
		if q.KeyLimit > 0 {
			perKey = fmt.Sprint(q.KeyLimit)
		}
		if q.FairTenants {
			fair = "tenants"
		}
		if q.Paused {
			paused = "yes"
		}
		if q.RateLimit > 0 {
			rate = fmt.Sprintf("%d/%s", q.RateLimit, q.RateInterval)
		}
		if q.MaxRunning > 0 {
			maxRunning = fmt.Sprint(q.MaxRunning)
		}
		oldest := ""
		if q.OldestWaiting > 0 {
			oldest = q.OldestWaiting.Round(time.Second).String()
		}
		t.row(q.Name, paused, fmt.Sprint(q.Jobs[lifecycle.Queued]), fmt.Sprint(q.Jobs[lifecycle.Scheduled]), fmt.Sprint(q.Running),
			fmt.Sprint(q.Jobs[lifecycle.Retrying]), fmt.Sprint(q.Jobs[lifecycle.Stalled]), oldest, maxRunning, rate, perKey, fair, strings.Join(q.Unserved, ","))
	}
	return t.flush()
}

// queuesPauseCmd is `stint queues pause` (pause) or `stint queues resume`.
func (a *app) queuesPauseCmd(pause bool) *cobra.Command {
	use, short, done := "resume QUEUE", "Resume a paused queue", "resumed"
	if pause {
		use, short, done = "pause QUEUE", "Pause a queue on every node: claims skip it, running jobs finish, enqueues land", "paused"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  oneName("queue"),
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				qs, err := store.Queues(st)
				if err != nil {
					return err
				}
				if _, err := qs.QueuePause(cmd.Context(), args[0], pause); err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "queue %s: %s\n", args[0], done)
				return err
			})
		}),
	}
}

func (a *app) queuesLimitCmd() *cobra.Command {
	var maxRunning, rate, keyLimit, defAttempts, defPriority int
	var per, defTimeout, defBackoffBase, defBackoffMax time.Duration
	var defBackoffFactor float64
	var fair, kind bool
	var weights map[string]int
	cmd := &cobra.Command{
		Use:   "limit QUEUE [--max-running N] [--rate N --per DURATION] [--default-max-attempts N] [--default-timeout D] [--default-priority P] [--default-backoff-base D --default-backoff-max D --default-backoff-factor F]",
		Short: "Limit a queue across every node (jobs running at once, starts per interval) and set its jobs' defaults",
		Example: `  stint queues limit email --max-running 10
  stint queues limit api --rate 100 --per 1m
  stint queues limit email --max-running 0    # no limit
  stint queues limit --kind send-sms --rate 10 --per 1s   # a kind, in every queue
  stint queues limit email --default-max-attempts 5 --default-timeout 30s   # for jobs that do not say
  stint queues limit --kind report.build --default-priority batch
  stint queues limit email --default-backoff-base 10s --default-backoff-max 10m   # retries of failed attempts`,
		Args: oneName("queue"),
		RunE: run(func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			var l store.QueueLimits
			if f.Changed("max-running") {
				l.MaxRunning = &maxRunning
			}
			if f.Changed("rate") {
				l.RateLimit = &rate
			}
			if f.Changed("per") {
				l.RateInterval = &per
			}
			if f.Changed("key-limit") {
				l.KeyLimit = &keyLimit
			}
			if f.Changed("fair") {
				l.FairTenants = &fair
			}
			if f.Changed("weight") {
				l.Weights = weights
			}
			if f.Changed("default-max-attempts") {
				l.DefaultMaxAttempts = &defAttempts
			}
			if f.Changed("default-timeout") {
				l.DefaultTimeout = &defTimeout
			}
			if f.Changed("default-priority") {
				l.DefaultPriority = &defPriority
			}
			if f.Changed("default-backoff-base") {
				l.DefaultBackoffBase = &defBackoffBase
			}
			if f.Changed("default-backoff-max") {
				l.DefaultBackoffMax = &defBackoffMax
			}
			if f.Changed("default-backoff-factor") {
				l.DefaultBackoffFactor = &defBackoffFactor
			}
			defaults := l.DefaultMaxAttempts != nil || l.DefaultTimeout != nil || l.DefaultPriority != nil ||
				l.DefaultBackoffBase != nil || l.DefaultBackoffMax != nil || l.DefaultBackoffFactor != nil
			if l.MaxRunning == nil && l.RateLimit == nil && l.RateInterval == nil && l.FairTenants == nil && l.Weights == nil && l.KeyLimit == nil && !defaults {
				return usageErrorf("give --max-running, --rate with --per, --key-limit, --fair, --weight or a --default-*")
			}
			if rate > 0 && per <= 0 {
				return usageErrorf("--rate %d needs --per, the interval, such as --per 1m", rate)
			}
			name := args[0]
			if kind {
				if l.RateLimit == nil && l.RateInterval == nil && !defaults || l.MaxRunning != nil || l.KeyLimit != nil || l.FairTenants != nil || l.Weights != nil {
					return usageErrorf("--kind takes only --rate with --per and the --default-* flags (limit the queue for the rest)")
				}
				name = store.KindLimitName(name)
			}
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				qs, err := store.Queues(st)
				if err != nil {
					return err
				}
				q, err := qs.QueueLimit(cmd.Context(), name, l)
				if err != nil {
					return err
				}
				d := q.Defaults
				if kind {
					_, err = fmt.Fprintf(cmd.OutOrStdout(), "kind %s: rate %d per %s (0: no limit), in every queue; defaults: max attempts %d, timeout %s, priority %d, backoff base %s, factor %g, max %s (0: none)\n",
						args[0], q.RateLimit, q.RateInterval, d.MaxAttempts, d.Timeout, d.Priority, d.BackoffBase, d.BackoffFactor, d.BackoffMax)
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "queue %s: max running %d, rate %d per %s, per key %d (0: no limit), fair between tenants: %t; defaults: max attempts %d, timeout %s, priority %d, backoff base %s, factor %g, max %s (0: none)\n",
					q.Name, q.MaxRunning, q.RateLimit, q.RateInterval, q.KeyLimit, q.FairTenants, d.MaxAttempts, d.Timeout, d.Priority, d.BackoffBase, d.BackoffFactor, d.BackoffMax)
				return err
			})
		}),
	}
	f := cmd.Flags()
	f.Var(intFlag{p: &maxRunning, min: 0, max: 1_000_000}, "max-running", "most jobs of the queue claimed or running at once (0: no limit)")
	f.Var(intFlag{p: &rate, min: 0, max: 1_000_000}, "rate", "most jobs of the queue started per --per (0: no limit)")
	f.Var(durationFlag{&per}, "per", "the rate limit's interval, e.g. 1s or 1m")
	f.Var(intFlag{p: &keyLimit, min: 0, max: 1_000_000}, "key-limit", "most jobs per concurrency key (env "+store.ConcurrencyKeyEnv+") at once (0: no limit)")
	f.BoolVar(&kind, "kind", false, "the argument is a job kind: limit its starts per --per in every queue")
	f.BoolVar(&fair, "fair", false, "share each claim between the tenants with queued jobs, by weight")
	f.StringToIntVar(&weights, "weight", nil, "tenant weights for --fair, e.g. --weight acme=3,free=1 (default 1 each)")
	f.Var(intFlag{p: &defAttempts, min: 0, max: lifecycle.MaxMaxAttempts}, "default-max-attempts", "max attempts of the jobs enqueued without their own, by every path (0: none)")
	f.Var(durationFlag{&defTimeout}, "default-timeout", "per-attempt timeout of the jobs enqueued without their own (0: none)")
	f.Var(priorityFlag{&defPriority}, "default-priority", "priority of the jobs enqueued with none (0), an integer or critical, interactive, batch")
	f.Var(durationFlag{&defBackoffBase}, "default-backoff-base", "delay before the first retry of a failed attempt that names no backoff (0: stint's 500ms)")
	f.Var(durationFlag{&defBackoffMax}, "default-backoff-max", "longest delay between retries, at least the base (0: stint's 60s)")
	f.Float64Var(&defBackoffFactor, "default-backoff-factor", 0, "growth of the delay per retry, 1 to 1000 (0: stint's 2)")
	return cmd
}
