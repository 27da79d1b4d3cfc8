package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/cron"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// cronCmd is `stint cron`: periodic jobs kept in the database, fired by the
// leader's cron service once per tick across every node.
func (a *app) cronCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "cron",
		Short: "Manage periodic jobs (cron schedules)",
		Long: "A schedule enqueues its job at every tick of a cron expression read in a time zone,\n" +
			"once per tick across every node. Ticks missed while no node ran: the latest runs\n" +
			"once (--missed latest, the default; ticks less than a minute late all run), or every\n" +
			"one (--missed all).",
	}, a.cronAddCmd(), a.cronLsCmd(), a.cronRmCmd(), a.cronPauseCmd(true), a.cronPauseCmd(false))
}

func (a *app) cronAddCmd() *cobra.Command {
	var s store.Schedule
	var file string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add NAME --expr EXPR --kind KIND [flags] | add --file FILE",
		Short: "Create or redefine a schedule (its last tick is kept)",
		Example: `  stint cron add nightly-report --expr "0 2 * * *" --tz Europe/Paris --kind report
  stint cron add heartbeat --expr "@every 30s" --kind ping --queue ops
  stint cron add --file schedules.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: run(func(cmd *cobra.Command, args []string) error {
			var all []store.Schedule
			switch {
			case file != "" && len(args) > 0:
				return usageErrorf("give either a NAME and flags or --file, not both")
			case file != "":
				var err error
				if all, err = cron.LoadFile(file); err != nil {
					return err
				}
			case len(args) == 0:
				return usageErrorf("name the schedule: stint cron add NAME --expr EXPR --kind KIND")
			default:
				s.Name = args[0]
				if err := cron.Check(s); err != nil {
					return err
				}
				all = []store.Schedule{s}
			}
			// Everything is checked above: bad input opens (and creates) nothing.
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				got, err := cron.Declare(cmd.Context(), st, all...)
				if err != nil {
					return err
				}
				return writeSchedules(cmd.OutOrStdout(), got, asJSON)
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&s.Expr, "expr", "", `cron expression: five fields, six with seconds first, or @hourly, @daily, @every 10m`)
	f.StringVar(&s.TimeZone, "tz", "", "IANA time zone the expression is read in (default UTC)")
	f.StringVar(&s.Missed, "missed", "", "ticks missed while no node ran: latest (default) or all")
	f.StringVar(&s.Kind, "kind", "", "kind of the job each tick enqueues (required)")
	f.StringVar(&s.Queue, "queue", "", "queue of the job (default \""+lifecycle.DefaultQueue+"\")")
	f.StringVar(&s.Tenant, "tenant", "", "tenant of the job")
	f.Var(payloadFlag{raw: &s.Payload, stdin: a.env.Stdin}, "payload", "job input: a JSON document, @FILE, or - for stdin")
	f.Var(priorityFlag{&s.Priority}, "priority", "integer, higher runs first, or critical, interactive, default, batch")
	f.Var(intFlag{p: &s.MaxAttempts, min: 1, max: lifecycle.MaxMaxAttempts}, "max-attempts", "attempts of each tick's job")
	f.Var(durationFlag{&s.Timeout}, "timeout", "limit on one attempt of the job, e.g. 30s")
	f.BoolVar(&s.Paused, "paused", false, "create the schedule paused")
	f.StringVar(&file, "file", "", "declare the schedules of a JSON file (an array of schedules)")
	f.BoolVar(&asJSON, "json", false, "print the schedules as JSON")
	return cmd
}

func (a *app) cronLsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the schedules",
		Args:  cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				ss, err := store.Schedules(st)
				if err != nil {
					return err
				}
				all, err := ss.ScheduleList(cmd.Context())
				if err != nil {
					return err
				}
				return writeSchedules(cmd.OutOrStdout(), all, asJSON)
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the schedules as JSON")
	return cmd
}

func (a *app) cronRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Delete a schedule (jobs it enqueued are kept)",
		Args:  oneName("schedule"),
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				ss, err := store.Schedules(st)
				if err != nil {
					return err
				}
				if err := ss.ScheduleDelete(cmd.Context(), args[0]); err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "schedule %s: deleted\n", args[0])
				return err
			})
		}),
	}
}

// cronPauseCmd is `stint cron pause` (pause) or `stint cron resume`.
func (a *app) cronPauseCmd(pause bool) *cobra.Command {
	use, short, done := "resume NAME", "Resume a paused schedule from its next tick", "resumed"
	if pause {
		use, short, done = "pause NAME", "Pause a schedule: its ticks enqueue nothing until resumed", "paused"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  oneName("schedule"),
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				ss, err := store.Schedules(st)
				if err != nil {
					return err
				}
				if _, err := ss.SchedulePause(cmd.Context(), args[0], pause); err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "schedule %s: %s\n", args[0], done)
				return err
			})
		}),
	}
}

// oneName accepts exactly one argument, a valid name of what.
func oneName(what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErrorf("expected one %s name, got %d arguments", what, len(args))
		}
		if err := lifecycle.CheckName(what+" name", args[0]); err != nil {
			return &ExitError{Code: ExitUsage, Err: err}
		}
		return nil
	}
}

func writeSchedules(w io.Writer, all []store.Schedule, asJSON bool) error {
	return writeList(w, all, asJSON, func(w io.Writer, all []store.Schedule) error {
		t := newTable(w, "NAME", "EXPR", "TZ", "KIND", "QUEUE", "TENANT", "MISSED", "PAUSED", "LAST TICK", "NEXT TICK")
		for _, s := range all {
			paused, next := "", ""
			if s.Paused {
				paused = "yes"
			}
			if e, err := cron.Parse(s.Expr, s.TimeZone); err == nil {
				from := s.CreatedAt
				if s.LastTick != nil {
					from = *s.LastTick
				}
				next = fmtTime(e.Next(from))
			}
			t.row(s.Name, s.Expr, s.TimeZone, s.Kind, s.Queue, s.Tenant, s.Missed, paused, fmtTimePtr(s.LastTick), next)
		}
		return t.flush()
	})
}
