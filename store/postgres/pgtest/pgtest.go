// Package pgtest gives tests a fresh PostgreSQL store: a schema of its own
// in the test database, dropped when the test ends. The database is the one
// STINT_TEST_DATABASE_URL names; without it the test is skipped, except
// under CI (CI set), where it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

// EnvURL names the environment variable holding the test database's URL,
// for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const EnvURL = "STINT_TEST_DATABASE_URL"

// URL returns the test database's URL. When it is not set, the test is
// skipped, or fails when the CI environment variable is set: in CI the
// PostgreSQL tests must run.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: CI must run the PostgreSQL tests; point it at a PostgreSQL database", EnvURL)
		}
		t.Skipf("%s is not set: skipping a PostgreSQL test", EnvURL)
	}
	return url
}

// NewSchema returns the name of a schema no other test uses and drops it,
// with everything in it, when the test ends. The schema is not created:
// postgres.Open does that.
func NewSchema(t testing.TB) string {
	t.Helper()
	url := URL(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "stint_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// Logger logs errors only: tests that break connections on purpose would
// otherwise fill their output with reconnect warnings.
var Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

// NewDriver opens a driver on a fresh schema (opts.Schema is replaced) and
// closes it when the test ends.
func NewDriver(t testing.TB, opts postgres.Options) *postgres.Driver {
	t.Helper()
	url := URL(t)
	opts.Schema = NewSchema(t)
	if opts.Logger == nil {
		opts.Logger = Logger
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := postgres.Open(ctx, url, opts)
	if err != nil {
		t.Fatalf("pgtest: open PostgreSQL at %s: %v", url, err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// NewStore returns a store on a fresh schema, closed when the test ends.
func NewStore(t testing.TB) store.Store {
	t.Helper()
	s := store.New(NewDriver(t, postgres.Options{}), store.Options{})
	t.Cleanup(func() { _ = s.Close() })
	return s
}
