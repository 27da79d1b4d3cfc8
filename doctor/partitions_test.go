package doctor_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/doctor"
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
