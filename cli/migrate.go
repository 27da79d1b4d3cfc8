package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/store/sqlite"
)

func (a *app) migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create the database or bring its schema up to date",
		Long: "migrate applies the schema migrations the database does not have yet and prints\n" +
			"each one it applied, or \"up to date\". Only migrate, dev, bench and server create a\n" +
			"database or upgrade its schema; every other command refuses a missing or outdated\n" +
			"one (exit 2) and points here.",
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			if a.databaseURL != "" {
				// Opening the PostgreSQL store creates the schema and applies
				// the missing migrations (postgres.Open does not say which).
				st, err := a.openPostgres(cmd.Context(), mayCreate)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "up to date (PostgreSQL schema %s)\n", a.pgSchema())
				return st.Close()
			}
			if err := a.checkSQLite(mayCreate); err != nil {
				return err
			}
			applied, latest, err := a.migrateSQLite(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, name := range applied {
				fmt.Fprintf(out, "applied %s\n", name)
			}
			if len(applied) == 0 {
				fmt.Fprintf(out, "up to date (latest migration %s)\n", latest)
			}
			return nil
		}),
	}
}

// migrateSQLite opens the SQLite file, which applies the missing migrations,
// and returns the names of those it applied and of the latest one.
func (a *app) migrateSQLite(ctx context.Context) (applied []string, latest string, err error) {
	ms, err := sqlite.Migrations()
	if err != nil {
		return nil, "", err
	}
	d, err := sqlite.Open(ctx, a.db, sqlite.Options{Clock: a.env.Clock})
	if err != nil {
		return nil, "", err
	}
	if len(ms) > 0 {
		latest = ms[len(ms)-1].Name
	}
	return d.Applied(), latest, d.Close()
}
