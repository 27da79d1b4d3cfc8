package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migration is one embedded schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations in order.
func Migrations() ([]Migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Migration, 0, len(names))
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("sqlite: migration %s: name must start with a version number", n)
		}
		b, err := migrations.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: strings.TrimSuffix(base, ".sql"), SQL: string(b)})
	}
	return out, nil
}

// Migrate applies the embedded migrations the database does not have yet and
// returns the names of those it applied.
func (d *Driver) Migrate(ctx context.Context) ([]string, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	var applied []string
	err = d.InTxSQL(ctx, func(tx *sql.Tx) error {
		applied = applied[:0]
		if _, err := tx.ExecContext(ctx, qCreateMigrations); err != nil {
			return err
		}
		have := map[int]bool{}
		rows, err := tx.QueryContext(ctx, qListMigrations)
		if err != nil {
			return err
		}
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return err
			}
			have[v] = true
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, m := range ms {
			if have[m.Version] {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("sqlite: migration %s: %w", m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, qInsertMigration, m.Version, m.Name); err != nil {
				return err
			}
			applied = append(applied, m.Name)
		}
		return nil
	})
	return applied, err
}
