package doctor_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/doctor"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// TestPostgresPartitions builds a partitioned job_events by hand (daily
// ranges on its time, and a DEFAULT partition) and reads it at a fixed time:
// doctor wants a partition covering now, one beyond it, and an empty DEFAULT.
func TestPostgresPartitions(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	day := func(n int) string {
		return now.Truncate(24*time.Hour).AddDate(0, 0, n).Format("2006-01-02 15:04:05Z07:00")
	}
	tests := []struct {
		name        string
		days        []int // the partitions: one per day offset from now's day
		defaultRows int
		want        []string // checks expected to find something
	}{
		{"today and tomorrow", []int{-1, 0, 1}, 0, nil},
		{"tomorrow missing", []int{-1, 0}, 0, []string{doctor.CheckPartitions}},
		{"nothing covers now", []int{-2, -1}, 0, []string{doctor.CheckPartitions}},
		{"rows in the default partition", []int{0, 1}, 3, []string{doctor.CheckDefaultPartition}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			schema := pgtest.NewSchema(t)
			conn := connect(t)
			q := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
			stmts := []string{
				"CREATE SCHEMA " + pgx.Identifier{schema}.Sanitize(),
				"CREATE TABLE " + q("job_events") + " (id bigint NOT NULL, at timestamptz NOT NULL) PARTITION BY RANGE (at)",
				"CREATE TABLE " + q("job_events_default") + " PARTITION OF " + q("job_events") + " DEFAULT",
			}
			for _, d := range tt.days {
				stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')",
					q(fmt.Sprintf("job_events_d%d", d+10)), q("job_events"), day(d), day(d+1)))
			}
			for i := range tt.defaultRows {
				// Far in the past: no partition takes it.
				stmts = append(stmts, fmt.Sprintf("INSERT INTO %s VALUES (%d, '1999-01-01')", q("job_events"), i))
			}
			for _, s := range stmts {
				if _, err := conn.Exec(t.Context(), s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			rep, err := doctor.Postgres(t.Context(), pgtest.URL(t), schema, doctor.Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			for _, check := range []string{doctor.CheckPartitions, doctor.CheckDefaultPartition} {
				want := strings.Contains(strings.Join(tt.want, " "), check)
				if got := findings(rep, check); (len(got) > 0) != want {
					t.Errorf("check %s found %+v, want a finding: %v", check, got, want)
				}
			}
		})
	}
}

// TestPostgresMigratedPartitions checks the partitions the migrations and
// the driver make: none missing on a fresh schema; after the partitions
// from now on are dropped on purpose, missing ones, and an event written
// then lands in the DEFAULT partition, which doctor reports too.
func TestPostgresMigratedPartitions(t *testing.T) {
	t.Parallel()
	d := pgtest.NewDriver(t, postgres.Options{})
	url, schema := pgtest.URL(t), d.Schema()
	rep, err := doctor.Postgres(t.Context(), url, schema, doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, check := range []string{doctor.CheckPartitions, doctor.CheckDefaultPartition} {
		if f := findings(rep, check); len(f) > 0 {
			t.Fatalf("a fresh schema: check %s found %+v", check, f)
		}
	}

	conn := connect(t)
	// Every history table's dated partitions go: each lacks one covering
	// now and any ahead.
	for _, table := range []string{"job_events", "run_events", "outbox"} {
		rows, err := conn.Query(t.Context(), `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass($1) AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'`,
			pgx.Identifier{schema, table}.Sanitize())
		if err != nil {
			t.Fatal(err)
		}
		parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(parts) == 0 {
			t.Fatalf("partitions of %s: %v, %v", table, parts, err)
		}
		for _, p := range parts {
			if _, err := conn.Exec(t.Context(), "DROP TABLE "+pgx.Identifier{schema, p}.Sanitize()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := conn.Exec(t.Context(), "INSERT INTO "+pgx.Identifier{schema, "job_events"}.Sanitize()+
		" (job_id, rev, type, op, at) VALUES ('j1', 1, 'enqueued', 'enqueue', now())"); err != nil {
		t.Fatal(err)
	}
	rep, err = doctor.Postgres(t.Context(), url, schema, doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := findings(rep, doctor.CheckPartitions); len(f) != 6 {
		t.Errorf("partition findings %+v: want, for each of the 3 history tables, none covering now and none ahead", f)
	}
	if f := findings(rep, doctor.CheckDefaultPartition); len(f) != 1 || f[0].Subject != "job_events_default" {
		t.Errorf("default partition findings %+v: want one about job_events_default", f)
	}
}
