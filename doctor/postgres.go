package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/store/postgres"
)

// pgDoctor is one run of the PostgreSQL checks on one connection.
type pgDoctor struct {
	conn   *pgx.Conn
	schema string
	opts   Options
	now    time.Time
	rep    *Report
}

// Postgres checks the stint schema at url. It connects once, reads the
// catalogs and statistics views, and changes nothing. An error means a check
// could not run (the server is unreachable, a query failed); problems are
// in the report's findings.
func Postgres(ctx context.Context, url, schema string, opts Options) (Report, error) {
	if schema == "" {
		schema = postgres.DefaultSchema
	}
	rep := Report{Backend: "postgres", Database: "schema " + schema}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return rep, fmt.Errorf("doctor: connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	d := &pgDoctor{conn: conn, schema: schema, opts: opts.WithDefaults(), rep: &rep}
	// Partition bounds are printed in the session's time zone: read them in UTC.
	if _, err := conn.Exec(ctx, "SET TIME ZONE 'UTC'"); err != nil {
		return rep, fmt.Errorf("doctor: %w", err)
	}
	if d.opts.Now != nil {
		d.now = d.opts.Now()
	} else if err := conn.QueryRow(ctx, "SELECT now()").Scan(&d.now); err != nil {
		return rep, fmt.Errorf("doctor: %w", err)
	}
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{CheckSchema, d.checkSchema},
		{CheckTransactions, d.checkTransactions},
		{CheckSlots, d.checkSlots},
		{CheckDeadTuples, d.checkTables},
		{CheckPartitions, d.checkPartitions},
	}
	for _, s := range steps {
		if err := s.fn(ctx); err != nil {
			return rep, fmt.Errorf("doctor: check %s: %w", s.name, err)
		}
	}
	return rep, nil
}

// checkSchema compares schema_migrations with the binary's migrations.
func (d *pgDoctor) checkSchema(ctx context.Context) error {
	want, err := postgres.LatestVersion()
	if err != nil {
		return err
	}
	var exists bool
	if err := d.conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", d.qualified("schema_migrations")).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		d.rep.schemaVersion(0, want, false)
		return nil
	}
	var have int
	err = d.conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+d.qualified("schema_migrations")).Scan(&have)
	if err != nil {
		return err
	}
	d.rep.schemaVersion(have, want, true)
	return nil
}

// qualified is a quoted schema.name.
func (d *pgDoctor) qualified(name string) string {
	return pgx.Identifier{d.schema, name}.Sanitize()
}
