package cli

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/bench"
)

// benchStepsCmd measures what durable steps cost (docs/steps.md).
func (a *app) benchStepsCmd() *cobra.Command {
	var cfg bench.StepsConfig
	var asJSON, keep bool
	cfg.Jobs = bench.DefaultStepsJobs
	cmd := &cobra.Command{
		Use:   "steps",
		Short: "Measure the overhead of durable steps: jobs of 1 step against jobs of 10",
		Long: "bench steps enqueues --jobs jobs that each run one no-op durable step (stint.Step),\n" +
			"works them with a worker pool in its default configuration, then does the same with\n" +
			"jobs of ten steps, on a fresh database. Each step is one committed record (a\n" +
			"transaction with its step_recorded event). It prints each mode's jobs/s and ms per\n" +
			"job, the ratio of the two, and what each step beyond the first adds.",
		Example: `  stint bench steps
  stint bench steps --database-url 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' --json`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) (err error) {
			ctx := cmd.Context()
			st, where, _, cleanup, err := a.openBenchStore(ctx, cmd.Flags().Changed("db"), keep)
			if err != nil {
				return err
			}
			defer func() {
				if cerr := cleanup(); err == nil {
					err = cerr
				}
			}()
			cfg.Pool.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			rep, err := bench.RunSteps(ctx, st, cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					Backend  string `json:"backend"`
					Database string `json:"database"`
					bench.StepsReport
				}{a.benchBackend(), where, rep})
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "stint bench steps: %s jobs per mode on %s\n", groupDigits(cfg.Jobs), where)
			for _, m := range rep.Modes {
				fmt.Fprintf(out, "  %2d step(s) per job: %8.0f jobs/s  %6.3f ms/job\n", m.Steps, m.PerSecond, m.MSPerJob)
			}
			fmt.Fprintf(out, "  a %d-step job costs %.1fx a %d-step job; each step adds %.3f ms\n",
				rep.Modes[len(rep.Modes)-1].Steps, rep.Ratio, rep.Modes[0].Steps, rep.PerStepMS)
			return nil
		}),
	}
	f := cmd.Flags()
	f.Var(intFlag{p: &cfg.Jobs, min: 1, max: 10_000_000}, "jobs", "jobs per mode")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&keep, "keep", false, "keep the database and print where it is")
	return cmd
}
