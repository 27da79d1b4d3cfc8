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
	"net/url"
	"os"
	"strings"
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
	dsn := os.Getenv(EnvURL)
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: CI must run the PostgreSQL tests; point it at a PostgreSQL database", EnvURL)
		}
		t.Skipf("%s is not set: skipping a PostgreSQL test", EnvURL)
	}
	return dsn
}

// NewSchema returns the name of a schema no other test uses and drops it,
// with everything in it, when the test ends. The schema is not created:
// postgres.Open does that.
func NewSchema(t testing.TB) string {
	t.Helper()
	dsn := URL(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "stint_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
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
// closes it when the test ends. Its pool defaults to 4 connections, since
// parallel tests share the server's max_connections. In tests (not
// benchmarks, which measure what production does) its sessions commit
// without waiting for the WAL to reach disk (synchronous_commit=off): a test
// needs no durability across a crash of the server, and an fsync per commit
// would dominate the suite's run time.
func NewDriver(t testing.TB, opts postgres.Options) *postgres.Driver {
	t.Helper()
	dsn := URL(t)
	if _, bench := t.(*testing.B); !bench {
		dsn = withAsyncCommit(dsn)
	}
	opts.Schema = NewSchema(t)
	if opts.Logger == nil {
		opts.Logger = Logger
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = 4
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := postgres.Open(ctx, dsn, opts)
	if err != nil {
		t.Fatalf("pgtest: open PostgreSQL at %s: %v", dsn, err)
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

// withAsyncCommit adds synchronous_commit=off to a connection string, in
// URL or key=value form, unless it sets synchronous_commit already.
func withAsyncCommit(conn string) string {
	const param = "synchronous_commit"
	if strings.Contains(conn, param) {
		return conn
	}
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set(param, "off")
		u.RawQuery = q.Encode()
		return u.String()
	}
	return conn + " " + param + "=off"
}
