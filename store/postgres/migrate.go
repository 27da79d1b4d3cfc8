package postgres

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// migrationFiles are the versioned schema changes, named
// NNNN_description.sql and applied in version order. A released file never
// changes; a change to the schema is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one versioned schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("postgres: migration %s: name it NNNN_description.sql", base)
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("postgres: migrations %s and %s share version %d", out[i-1].name, out[i].name, out[i].version)
		}
	}
	return out, nil
}

// Migrate creates the schema if it is missing and applies, in one
// transaction, the migrations it lacks. An advisory lock keyed on the schema
// makes concurrent callers (several stint processes starting at once) wait
// for each other; the later ones find nothing left to do.
func (d *Driver) Migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qAdvisoryXactLock, migrateLockKey(d.opts.Schema)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, createSchemaSQL(d.opts.Schema)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, qMigrationsTable); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, qMigrationsApplied)
		if err != nil {
			return err
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return err
		}
		applied := map[int]bool{}
		for _, v := range versions {
			applied[int(v)] = true
			if latest := ms[len(ms)-1].version; int(v) > latest {
				d.log.WarnContext(ctx, "postgres: the schema is newer than this binary; upgrade stint", "schema", d.opts.Schema, "version", v, "known", latest)
			}
		}
		for _, m := range ms {
			if applied[m.version] {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("apply %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, qMigrationRecord, m.version, m.name); err != nil {
				return err
			}
			d.log.InfoContext(ctx, "postgres: applied migration", "schema", d.opts.Schema, "migration", m.name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: migrate schema %s: %w", d.opts.Schema, err)
	}
	return nil
}

// migrateLockKey is the advisory lock of a schema's migrations.
func migrateLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("stint migrate " + schema))
	return int64(h.Sum64())
}
