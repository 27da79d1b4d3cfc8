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

// openMode says whether a command may create or migrate the database.
type openMode int

const (
	// mustExist is for every command but those below: it opens a database
	// whose schema is up to date and never writes to it on opening, so a
	// mistyped --db or --schema is reported instead of created.
	mustExist openMode = iota
	// mayCreate is for the commands that start a database: migrate, dev,
	// bench (and the server): they create it and apply its migrations.
	mayCreate
)

// openStore opens the store the global flags name: PostgreSQL when
// --database-url is set, otherwise the SQLite file at --db. With mayCreate
// it creates the database and applies its migrations; with mustExist a
// missing or outdated schema is a usage error that names `stint migrate`,
// and nothing is written. The caller closes it.
func (a *app) openStore(ctx context.Context, mode openMode) (store.Store, error) {
	if a.server != "" {
		return a.openRemote()
	}
	var st store.Store
	var err error
	if a.databaseURL != "" {
		st, err = a.openPostgres(ctx, mode)
	} else {
		if err := a.checkSQLite(mode); err != nil {
			return nil, err
		}
		var d *sqlite.Driver
		if d, err = sqlite.Open(ctx, a.db, sqlite.Options{Clock: a.env.Clock, NoMigrate: mode == mustExist}); err == nil {
			st = store.New(d, store.Options{Admission: a.admission})
		}
	}
	return st, a.schemaError(err)
}

// loadAdmission reads the --admission file into a.admission; a missing or
// malformed file is a usage error, before anything is opened or written.
func (a *app) loadAdmission(path string) error {
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return usageErrorf("--admission: %v: give a JSON file of rules (see docs/flow.md)", err)
	}
	if a.admission, err = store.ParseAdmission(data); err != nil {
		return usageErrorf("--admission %s: %v", path, err)
	}
	return nil
}

// schemaError turns a missing or outdated schema into a usage error that
// says which database and what to run.
func (a *app) schemaError(err error) error {
	where, flags := "SQLite database "+a.db, "--db "+shellQuote(a.db)
	if a.databaseURL != "" {
		where, flags = "PostgreSQL schema "+a.pgSchema(), "--database-url ... --schema "+shellQuote(a.pgSchema())
	}
	switch {
	case errors.Is(err, store.ErrSchemaMissing):
		return usageErrorf("no stint schema in the %s (check --db, --database-url and --schema): create it with `stint migrate %s`; nothing was changed", where, flags)
	case errors.Is(err, store.ErrSchemaOutdated):
		return usageErrorf("the %s is older than this stint: upgrade it with `stint migrate %s`; nothing was changed", where, flags)
	}
	return err
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
