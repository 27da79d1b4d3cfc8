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

	"github.com/stint-dev/stint/store"
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
	return d.migrateTo(ctx, 0)
}

// migrateTo applies the migrations up to version upTo, or all of them when
// upTo is 0. Tests stop early to build a database of an older release.
func (d *Driver) migrateTo(ctx context.Context, upTo int) error {
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
		applied, err := appliedVersions(ctx, tx)
		if err != nil {
			return err
		}
		for v := range applied {
			if latest := ms[len(ms)-1].version; v > latest {
				d.log.WarnContext(ctx, "postgres: the schema is newer than this binary; upgrade stint", "schema", d.opts.Schema, "version", v, "known", latest)
			}
		}
		for _, m := range ms {
			if applied[m.version] || (upTo > 0 && m.version > upTo) {
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

// appliedVersions reads the versions recorded in schema_migrations.
func appliedVersions(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) (map[int]bool, error) {
	rows, err := q.Query(ctx, qMigrationsApplied)
	if err != nil {
		return nil, err
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	applied := make(map[int]bool, len(versions))
	for _, v := range versions {
		applied[int(v)] = true
	}
	return applied, nil
}

// checkSchema is Open's check under NoMigrate: it reads, and creates
// nothing. A schema without stint's tables is missing; one lacking a
// migration this binary has is outdated.
func (d *Driver) checkSchema(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	var exists bool
	if err := d.pool.QueryRow(ctx, qMigrationsTableExists, d.opts.Schema).Scan(&exists); err != nil {
		return fmt.Errorf("postgres: look for schema %s: %w", d.opts.Schema, err)
	}
	if !exists {
		return fmt.Errorf("postgres: schema %s: %w: run `stint migrate` to create it", d.opts.Schema, store.ErrSchemaMissing)
	}
	applied, err := appliedVersions(ctx, d.pool)
	if err != nil {
		return fmt.Errorf("postgres: read schema %s's migrations: %w", d.opts.Schema, err)
	}
	var missing []string
	for _, m := range ms {
		if !applied[m.version] {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("postgres: schema %s lacks migrations %s: %w: run `stint migrate` to bring it up to date",
			d.opts.Schema, strings.Join(missing, ", "), store.ErrSchemaOutdated)
	}
	return nil
}

// migrateLockKey is the advisory lock of a schema's migrations.
func migrateLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("stint migrate " + schema))
	return int64(h.Sum64())
}
