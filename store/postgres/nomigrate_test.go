package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// With NoMigrate, Open on a database without the schema says so, names
// `stint migrate`, and creates nothing.
func TestNoMigrateMissingSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	schema := pgtest.NewSchema(t)
	_, err := postgres.Open(ctx, url, postgres.Options{Schema: schema, NoMigrate: true, Logger: pgtest.Logger})
	if !errors.Is(err, store.ErrSchemaMissing) || !strings.Contains(err.Error(), "stint migrate") {
		t.Fatalf("open without a schema: %v; want ErrSchemaMissing naming `stint migrate`", err)
	}
	if schemaExists(t, url, schema) {
		t.Errorf("schema %s exists after a failed NoMigrate open: it must create nothing", schema)
	}
}

// With NoMigrate, Open on a schema lacking migrations says which, names
// `stint migrate`, and applies none; on an up-to-date schema it opens.
func TestNoMigrateOutdatedSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	opts := postgres.Options{Schema: pgtest.NewSchema(t), Logger: pgtest.Logger, MaxConns: 2}
	old, err := postgres.OpenAt(ctx, url, opts, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	opts.NoMigrate = true
	_, err = postgres.Open(ctx, url, opts)
	if !errors.Is(err, store.ErrSchemaOutdated) || !strings.Contains(err.Error(), "stint migrate") || !strings.Contains(err.Error(), "0003_layout") {
		t.Fatalf("open an outdated schema: %v; want ErrSchemaOutdated naming 0003_layout and `stint migrate`", err)
	}
	var n int
	if err := old.Pool().QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("schema_migrations after a NoMigrate open: %d rows, %v; want the 2 it had", n, err)
	}
	if err := old.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := postgres.Open(ctx, url, opts)
	if err != nil {
		t.Fatalf("NoMigrate open of an up-to-date schema: %v", err)
	}
	d.Close()
}

func schemaExists(t *testing.T, url, schema string) bool {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	return exists
}
