package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/doctor"
)

type doctorOptions struct {
	opts   doctor.Options
	walMiB int
	asJSON bool
	bus    busOptions // --nats-url: check the bus bridge's streams and consumers too (cli/bus.go)
}

func (a *app) doctorCmd() *cobra.Command {
	o := doctorOptions{opts: doctor.Options{TransactionAge: doctor.DefaultTransactionAge}, walMiB: doctor.DefaultWALBytes >> 20}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check a deployment for what slows it down over time, and say what to do",
		Long: "doctor opens the database WITHOUT migrating it, changes nothing, and checks:\n" +
			"  PostgreSQL: the oldest open transaction and its xmin age, replication slots that\n" +
			"    hold the horizon or retain WAL, dead tuples of each stint table, autovacuum lag,\n" +
			"    missing future partitions of job_events and rows in its DEFAULT partition;\n" +
			"  SQLite: checkpoints starved by a long reader, and the WAL file's size;\n" +
			"  both: a stint schema older (or newer) than this binary.\n" +
			"Each problem comes with what to do. It exits 1 when it finds something, 0 when all is\n" +
			"well. docs/operations.md explains each check.",
		Example: `  stint doctor --db ./stint.db
  stint doctor --database-url 'postgres://stint@db:5432/app' --schema stint --json`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.runDoctor(cmd, &o)
		}),
	}
	f := cmd.Flags()
	f.Var(durationFlag{d: &o.opts.TransactionAge}, "max-transaction-age", "report transactions holding a snapshot longer than this")
	f.Var(intFlag{p: &o.walMiB, min: 1, max: 1 << 20}, "max-wal-mib", "report a SQLite WAL file larger than this many MiB")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	o.bus.registerDoctor(f)
	return cmd
}

func (a *app) runDoctor(cmd *cobra.Command, o *doctorOptions) error {
	ctx := cmd.Context()
	o.opts.WALBytes = int64(o.walMiB) << 20
	var rep doctor.Report
	var err error
	if a.databaseURL != "" {
		if _, perr := pgx.ParseConfig(a.databaseURL); perr != nil {
			return usageErrorf("bad --database-url: %v; expected a URL such as postgres://user@host:5432/db", perr)
		}
		rep, err = doctor.Postgres(ctx, a.databaseURL, a.schema, o.opts)
	} else {
		if err := a.checkSQLite(mustExist); err != nil {
			return err
		}
		rep, err = doctor.SQLite(ctx, a.db, o.opts)
	}
	if err == nil {
		err = o.bus.doctor(ctx, &rep)
	}
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.asJSON {
		err = writeJSON(out, rep)
	} else {
		err = writeDoctorReport(out, rep)
	}
	if err != nil {
		return err
	}
	if !rep.Clean() {
		return &ExitError{Code: ExitFailure}
	}
	return nil
}

// writeDoctorReport prints every check on one line, then each finding with
// what to do.
func writeDoctorReport(w io.Writer, rep doctor.Report) error {
	fmt.Fprintf(w, "stint doctor: %s %s\n", map[string]string{"postgres": "PostgreSQL", "sqlite": "SQLite"}[rep.Backend], rep.Database)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range rep.Checks {
		status := "ok"
		if !c.OK {
			status = "FOUND"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", status, c.Name, c.Summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Clean() {
		_, err := fmt.Fprintln(w, "nothing to do")
		return err
	}
	fmt.Fprintf(w, "\n%s:\n", plural(len(rep.Findings), "finding"))
	for i, f := range rep.Findings {
		fmt.Fprintf(w, "%d. [%s] %s\n   what to do: %s\n", i+1, f.Check, f.Problem, f.Fix)
	}
	return nil
}
