package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store"
)

// Env is what the command line reads from and writes to. Zero fields take
// the process's own: os.Stdout, os.Stderr, os.Getenv and the system clock.
type Env struct {
	// Stdin is read by flags that take input from "-" (enqueue --payload -).
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the STINT_* environment variables that give the global
	// flags their defaults.
	Getenv func(string) string
	// Environ lists the environment (NAME=VALUE) that `stint worker --exec`
	// chooses its commands' variables from.
	Environ func() []string
	// Clock is the clock of the embedded store and of input checks such as
	// "the deadline is in the future".
	Clock clock.Clock
}

func (e Env) withDefaults() Env {
	if e.Stdin == nil {
		e.Stdin = os.Stdin
	}
	if e.Stdout == nil {
		e.Stdout = os.Stdout
	}
	if e.Stderr == nil {
		e.Stderr = os.Stderr
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.Environ == nil {
		e.Environ = os.Environ
	}
	if e.Clock == nil {
		e.Clock = clock.System{}
	}
	return e
}

// app is the state every command shares: the environment and the global flags.
type app struct {
	env Env
	// db is the SQLite file, used when databaseURL is empty.
	db          string
	databaseURL string
	schema      string
	// server and token, when server is set, send every store call to a
	// stint server instead of a database (cli/worker.go).
	server string
	token  string
	// admission, when set (--admission of dev and server), is applied to
	// every enqueue of the store openStore opens.
	admission *store.Admission
}

// Environment variables that set the global flags' defaults.
const (
	EnvDB          = "STINT_DB"
	EnvDatabaseURL = "STINT_DATABASE_URL"
	EnvSchema      = "STINT_SCHEMA"
)

// DefaultDB is the SQLite file used when neither --db nor STINT_DB names one.
const DefaultDB = "./stint.db"

// NewRoot returns the stint command with every subcommand registered.
func NewRoot(env Env) *cobra.Command {
	env = env.withDefaults()
	a := &app{env: env}
	root := &cobra.Command{
		Use:   "stint",
		Short: "stint is a durable, distributed job orchestrator",
		Long: "stint runs jobs through one authoritative lifecycle and records every transition.\n" +
			"It keeps its data in an embedded SQLite file (--db) or in PostgreSQL (--database-url).",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentPreRunE = a.refuseServer // cli/direct.go
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.CompletionOptions.DisableDefaultCmd = true

	f := root.PersistentFlags()
	f.StringVar(&a.db, "db", envOr(env.Getenv, EnvDB, DefaultDB), "SQLite database file (env "+EnvDB+")")
	f.StringVar(&a.databaseURL, "database-url", env.Getenv(EnvDatabaseURL), "PostgreSQL URL; when set, used instead of --db (env "+EnvDatabaseURL+")")
	f.StringVar(&a.schema, "schema", env.Getenv(EnvSchema), "PostgreSQL schema holding stint's tables (env "+EnvSchema+")")
	f.StringVar(&a.server, "server", env.Getenv(EnvServer), "URL of a stint server (several of one cluster, comma-separated); when set, used instead of a database (env "+EnvServer+")")
	f.StringVar(&a.token, "token", env.Getenv(EnvToken), "bearer token for --server (env "+EnvToken+")")

	// One constructor per command, each in its own file. Later commands
	// (dev, server, worker, dlq, runs, bench) register here the same way.
	root.AddCommand(
		a.devCmd(),
		a.migrateCmd(),
		a.enqueueCmd(),
		a.jobsCmd(),
		a.dlqCmd(),
		a.verifyCmd(),
		a.benchCmd(),
		a.doctorCmd(),
		a.serverCmd(),
		a.tokensCmd(),
		a.workerCmd(),
		a.cronCmd(),
		a.queuesCmd(),
		a.runsCmd(),
		a.webhooksCmd(),
		a.outboxCmd(),
	)
	return root
}

// Main runs the stint command line with args (without the program name) and
// returns the process exit code. Errors are printed on env.Stderr.
func Main(ctx context.Context, args []string, env Env) int {
	env = env.withDefaults()
	root := NewRoot(env)
	if args == nil {
		args = []string{} // cobra reads os.Args when args is nil
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return report(env.Stderr, cmd, err)
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// group makes cmd a parent of subcommands (stint jobs, later stint dlq and
// stint runs): alone it prints its help; an unknown subcommand is a usage
// error that suggests the nearest names.
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean: " + strings.Join(s, ", ")
		}
		return usageErrorf("%s (see %q)", msg, c.CommandPath()+" --help")
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	cmd.SuggestionsMinimumDistance = 2
	cmd.AddCommand(subs...)
	return cmd
}
