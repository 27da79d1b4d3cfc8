package cli

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/bus"
)

type benchBusOptions struct {
	url        string
	jobs       int
	asJSON     bool
	cpuProfile string
}

func (a *app) benchBusCmd() *cobra.Command {
	o := benchBusOptions{url: "nats://127.0.0.1:4222", jobs: 10_000}
	cmd := &cobra.Command{
		Use:   "bus",
		Short: "Measure the NATS bus bridge end to end: requests published → jobs committed → results applied",
		Long: "bench bus runs the bus bridge (docs/bus.md) on a fresh database against --nats-url, with\n" +
			"streams and subjects of its own (deleted afterwards), and a bus worker in the same process\n" +
			"that answers every dispatch SUCCEEDED. It publishes --jobs JobRequests at once and prints\n" +
			"jobs/s end to end and the p50/p99 latency of publish → job committed and publish → result\n" +
			"applied, timed by the jobs' own events. The machine's load is printed with the figures.",
		Example: `  stint bench bus
  stint bench bus --jobs 50000 --database-url 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) (err error) {
			ctx := cmd.Context()
			st, where, _, cleanup, err := a.openBenchStore(ctx, cmd.Flags().Changed("db"), false)
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
			out := cmd.OutOrStdout()
			if !o.asJSON {
				fmt.Fprintf(out, "stint bench bus: %s requests on %s through NATS %s (load average %s, %d CPUs)\n",
					groupDigits(o.jobs), where, o.url, loadAverage(), runtime.NumCPU())
			}
			quiet := slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			var rep bus.BenchReport
			err = profiling(profile, func() (err error) {
				rep, err = bus.Bench(ctx, st, bus.BenchConfig{URL: o.url, Jobs: o.jobs, Bridge: bus.Config{Logger: quiet}})
				return err
			})
			if err != nil {
				return err
			}
			if o.asJSON {
				return writeJSON(out, rep)
			}
			fmt.Fprintf(out, "  published in %s; all %s results applied after %s: %.0f jobs/s end to end\n",
				rep.Published.Round(1e6), groupDigits(rep.Jobs), rep.Elapsed.Round(1e6), rep.JobsPerS)
			fmt.Fprintf(out, "  publish → job committed:  p50 %s  p99 %s\n", rep.CommitP50.Round(1e5), rep.CommitP99.Round(1e5))
			fmt.Fprintf(out, "  publish → result applied: p50 %s  p99 %s\n", rep.EndToEndP50.Round(1e5), rep.EndToEndP99.Round(1e5))
			fmt.Fprintf(out, "  commit → event on the bus: p99 %s (the outbox)\n", rep.EventLagP99.Round(1e5))
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "nats-url", o.url, "the NATS server (JetStream enabled)")
	f.Var(intFlag{p: &o.jobs, min: 1, max: 10_000_000}, "jobs", "JobRequests to publish")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof reads it)")
	return cmd
}

// loadAverage is the 1-minute load average, or "unknown" off Linux.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil || len(b) == 0 {
		return "unknown"
	}
	var one string
	_, _ = fmt.Sscan(string(b), &one)
	return one
}
