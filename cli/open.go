package cli

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// openMode says whether a command may create the database.
type openMode int

const (
	// mustExist is for commands that read or change existing jobs: a
	// mistyped --db is reported instead of creating an empty file.
	mustExist openMode = iota
	// mayCreate is for commands that start a database (migrate, enqueue).
	mayCreate
)

// openStore opens the store the global flags name, with its migrations
// applied: PostgreSQL when --database-url is set, otherwise the SQLite file
// at --db. The caller closes it.
func (a *app) openStore(ctx context.Context, mode openMode) (store.Store, error) {
	if a.server != "" {
		return a.openRemote()
	}
	if a.databaseURL != "" {
		return a.openPostgres(ctx)
	}
	if err := a.checkSQLite(mode); err != nil {
		return nil, err
	}
	return sqlite.OpenStore(ctx, a.db, sqlite.Options{Clock: a.env.Clock})
}

// checkSQLite validates the global flags for the SQLite backend.
func (a *app) checkSQLite(mode openMode) error {
	if a.schema != "" {
		return usageErrorf("--schema applies to PostgreSQL only: set --database-url (or %s) too, or drop --schema", EnvDatabaseURL)
	}
	if a.db == "" {
		return usageErrorf("--db is empty: expected the path of a SQLite file (or set --database-url for PostgreSQL)")
	}
	if mode == mayCreate || a.db == ":memory:" || strings.HasPrefix(a.db, "file:") {
		return nil
	}
	if _, err := os.Stat(a.db); errors.Is(err, fs.ErrNotExist) {
		return usageErrorf("no database at %s: expected an existing file (check --db or %s), or create one with `stint migrate`", a.db, EnvDB)
	}
	return nil
}

// closeStore closes st, keeping the first error.
func closeStore(st store.Store, err *error) {
	if cerr := st.Close(); *err == nil {
		*err = cerr
	}
}

// withStore opens the store as openStore does, runs fn on it and closes it.
// fn's error comes first; a failed Close is reported only when fn succeeded.
func (a *app) withStore(ctx context.Context, mode openMode, fn func(store.Store) error) (err error) {
	st, err := a.openStore(ctx, mode)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	return fn(st)
}
