package cli

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

// openPostgres opens the PostgreSQL store at url in schema (empty: the
// default); with mayCreate it creates the schema and applies migrations as
// needed, with mustExist it only opens an up-to-date schema.
func (a *app) openPostgres(ctx context.Context, mode openMode) (store.Store, error) {
	if _, err := pgx.ParseConfig(a.databaseURL); err != nil {
		return nil, usageErrorf("bad --database-url: %v; expected a URL such as postgres://user@host:5432/db", err)
	}
	// A one-shot command has no use for reconnect chatter; warnings still show.
	log := slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	d, err := postgres.Open(ctx, a.databaseURL, postgres.Options{Schema: a.schema, Logger: log, NoMigrate: mode == mustExist})
	if err != nil {
		return nil, err
	}
	return store.New(d, store.Options{Admission: a.admission}), nil
}

// pgSchema is the PostgreSQL schema the global flags name.
func (a *app) pgSchema() string {
	if a.schema == "" {
		return postgres.DefaultSchema
	}
	return a.schema
}
