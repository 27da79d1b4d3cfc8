package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/store/sqlite"
)

func (a *app) migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create the database or bring its schema up to date",
		Long: "migrate applies the schema migrations the database does not have yet and prints\n" +
			"each one it applied, or \"up to date\". Other commands also apply them when they open\n" +
			"the database; migrate does it on purpose, e.g. before a deployment.",
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			if a.databaseURL != "" {
				// Opening the PostgreSQL store creates the schema and applies
				// the missing migrations (postgres.Open does not say which).
				st, err := a.openPostgres(cmd.Context())
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

// migrateSQLite applies the missing migrations to the SQLite file and
// returns the names of those it applied and of the latest one.
func (a *app) migrateSQLite(ctx context.Context) (applied []string, latest string, err error) {
	ms, err := sqlite.Migrations()
	if err != nil {
		return nil, "", err
	}
	had, err := sqliteVersions(ctx, a.db)
	if err != nil {
		return nil, "", err
	}
	// sqlite.Open applies the migrations; Migrate is then a no-op, and
	// keeps this command right should Open ever stop migrating.
	d, err := sqlite.Open(ctx, a.db, sqlite.Options{Clock: a.env.Clock})
	if err != nil {
		return nil, "", err
	}
	defer func() {
		if cerr := d.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := d.Migrate(ctx); err != nil {
		return nil, "", err
	}
	for _, m := range ms {
		if !had[m.Version] {
			applied = append(applied, m.Name)
		}
	}
	if len(ms) > 0 {
		latest = ms[len(ms)-1].Name
	}
	return applied, latest, nil
}

// sqliteVersions reads, without changing the file, which migration versions
// the SQLite database at path already has: none when there is no file yet.
// sqlite.Open applies migrations without saying which, so migrate looks first.
func sqliteVersions(ctx context.Context, path string) (map[int]bool, error) {
	have := map[int]bool{}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return have, nil
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if n == 0 {
		return have, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		have[v] = true
	}
	return have, rows.Err()
}
