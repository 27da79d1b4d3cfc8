package maintenance

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// With both retentions off (negative), the retention service still makes
// the coming history partitions on every pass, by its clock.
func TestRetentionOffMakesPartitions(t *testing.T) {
	t.Parallel()
	d := newPostgres(t)
	r := must(NewRetention(d.s, &RetentionConfig{Clock: d.clock, Logger: d.logger(), Retention: -1, HeartbeatRetention: -1}))
	r.now = d.nowFor()
	passes := watch(r.l)
	start(t, r)
	if n := nextPass(t, passes); n != 0 {
		t.Fatalf("pass deleted %d rows with retention off", n)
	}
	// t0 is 2030-03-04 05:06:07; partitions are a day wide by default.
	for _, table := range []string{"job_events", "run_events", "outbox"} {
		want := []string{table + "_p20300304_0000", table + "_p20300305_0000", table + "_p20300306_0000"}
		if got := pgPartitions(t, d, table); !containsAll(got, want) {
			t.Errorf("%s's partitions after a pass at %v: %v, want %v among them", table, d.clock.Now(), got, want)
		}
	}
	d.clock.Advance(10 * 24 * time.Hour)
	nextPass(t, passes)
	for _, table := range []string{"job_events", "run_events", "outbox"} {
		want := []string{table + "_p20300314_0000", table + "_p20300315_0000", table + "_p20300316_0000"}
		if got := pgPartitions(t, d, table); !containsAll(got, want) {
			t.Errorf("%s's partitions ten days on: %v, want %v among them", table, got, want)
		}
	}
}

// pgPartitions lists the partitions of table in d's schema.
func pgPartitions(t *testing.T, d *db, table string) []string {
	t.Helper()
	var url, schema string
	for _, kv := range d.env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "STINT_HELPER_POSTGRES":
			url = v
		case "STINT_HELPER_SCHEMA":
			schema = v
		}
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = (quote_ident($1) || '.' || quote_ident($2))::regclass ORDER BY 1`, schema, table)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
