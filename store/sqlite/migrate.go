package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/stint-dev/stint/store"
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

// migrate applies, in one transaction on the writer's connection (before
// the writer starts), the embedded migrations the database does not have
// yet, and returns the names of those it applied.
func migrate(ctx context.Context, conn *sql.Conn) ([]string, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	var applied []string
	err = retryBusy(ctx, func() error {
		applied = applied[:0]
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		if err := migrateTx(ctx, conn, ms, &applied); err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			return err
		}
		_, err := conn.ExecContext(ctx, "COMMIT")
		return err
	})
	return applied, err
}

func migrateTx(ctx context.Context, conn *sql.Conn, ms []Migration, applied *[]string) error {
	if _, err := conn.ExecContext(ctx, qCreateMigrations); err != nil {
		return err
	}
	have, err := versions(ctx, conn)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if have[m.Version] {
			continue
		}
		if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", m.Name, err)
		}
		if _, err := conn.ExecContext(ctx, qInsertMigration, m.Version, m.Name); err != nil {
			return err
		}
		*applied = append(*applied, m.Name)
	}
	return nil
}

// versions returns the migration versions the database has.
func versions(ctx context.Context, q querier) (map[int]bool, error) {
	rows, err := q.QueryContext(ctx, qListMigrations)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		have[v] = true
	}
	return have, rows.Err()
}

// checkSchema is Open's check under NoMigrate: the file must exist and hold
// every embedded migration. It opens the file read-only, so it creates and
// changes nothing.
func checkSchema(ctx context.Context, path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlite: %s does not exist: %w; run `stint migrate` to create it", path, store.ErrSchemaMissing)
	} else if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", fileURI(path)+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, qHasMigrations).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: %s: %w; run `stint migrate` to create it", path, store.ErrSchemaMissing)
	}
	have, err := versions(ctx, db)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	ms, err := Migrations()
	if err != nil {
		return err
	}
	var missing []string
	for _, m := range ms {
		if !have[m.Version] {
			missing = append(missing, m.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("sqlite: %s: %w (it lacks %s); run `stint migrate` to upgrade it",
			path, store.ErrSchemaOutdated, strings.Join(missing, ", "))
	}
	return nil
}
