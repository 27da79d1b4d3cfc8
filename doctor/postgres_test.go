package doctor_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/doctor"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// findings returns the report's findings of one check.
func findings(rep doctor.Report, check string) []doctor.Finding {
	var out []doctor.Finding
	for _, f := range rep.Findings {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}

// subject returns the finding about subject, if any.
func subject(rep doctor.Report, check, subject string) (doctor.Finding, bool) {
	for _, f := range findings(rep, check) {
		if f.Subject == subject {
			return f, true
		}
	}
	return doctor.Finding{}, false
}

func connect(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestPostgresFresh checks a freshly migrated schema: every check of the
// schema itself passes. (Sessions and slots are the whole server's, and the
// test server runs with autovacuum off: those checks are not asserted.)
func TestPostgresFresh(t *testing.T) {
	t.Parallel()
	d := pgtest.NewDriver(t, postgres.Options{})
	rep, err := doctor.Postgres(t.Context(), pgtest.URL(t), d.Schema(), doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, check := range []string{doctor.CheckSchema, doctor.CheckDeadTuples, doctor.CheckPartitions, doctor.CheckDefaultPartition} {
		if f := findings(rep, check); len(f) > 0 {
			t.Errorf("check %s found %+v on a fresh schema", check, f)
		}
	}
	names := map[string]bool{}
	for _, c := range rep.Checks {
		names[c.Name] = true
	}
	for _, want := range []string{doctor.CheckSchema, doctor.CheckTransactions, doctor.CheckSlots, doctor.CheckDeadTuples, doctor.CheckAutovacuum, doctor.CheckPartitions} {
		if !names[want] {
			t.Errorf("check %s did not run: %+v", want, rep.Checks)
		}
	}
}

func TestPostgresMissingSchema(t *testing.T) {
	t.Parallel()
	schema := pgtest.NewSchema(t) // never created
	rep, err := doctor.Postgres(t.Context(), pgtest.URL(t), schema, doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := findings(rep, doctor.CheckSchema); len(f) != 1 || !strings.Contains(f[0].Fix, "stint migrate") {
		t.Errorf("schema findings %+v: want one naming stint migrate", f)
	}
	var exists bool
	if err := connect(t).QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil || exists {
		t.Errorf("doctor created schema %s (%v)", schema, err)
	}
}

// TestPostgresHeldTransaction opens a REPEATABLE READ transaction that holds
// a snapshot, and expects doctor to name its session.
func TestPostgresHeldTransaction(t *testing.T) {
	t.Parallel()
	d := pgtest.NewDriver(t, postgres.Options{})
	conn := connect(t)
	tx, err := conn.BeginTx(t.Context(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var pid int32
	if err := tx.QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	// Any open transaction counts as old here: the test must not wait.
	rep, err := doctor.Postgres(t.Context(), pgtest.URL(t), d.Schema(), doctor.Options{TransactionAge: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	f, ok := subject(rep, doctor.CheckTransactions, fmt.Sprintf("pid %d", pid))
	if !ok || !strings.Contains(f.Fix, "pg_terminate_backend") {
		t.Fatalf("no finding about the held transaction of pid %d: %+v", pid, rep.Findings)
	}
	if rep.Clean() {
		t.Error("the report is clean")
	}
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// TestPostgresPhysicalSlot: a physical slot made with immediately_reserve
// holds restart_lsn, not xmin (only a standby's feedback would set its
// xmin): doctor reports the WAL it retains while nothing uses it.
func TestPostgresPhysicalSlot(t *testing.T) {
	t.Parallel()
	d := pgtest.NewDriver(t, postgres.Options{})
	conn := connect(t)
	slot := randomName("stint_test_slot_")
	if _, err := conn.Exec(t.Context(), "SELECT pg_create_physical_replication_slot($1, true)", slot); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "SELECT pg_drop_replication_slot($1)", slot) })
	// Write some WAL past the slot's restart_lsn.
	if _, err := conn.Exec(t.Context(), "CREATE TABLE "+pgx.Identifier{d.Schema(), "wal_filler"}.Sanitize()+" AS SELECT generate_series(1, 100) AS n"); err != nil {
		t.Fatal(err)
	}
	rep, err := doctor.Postgres(t.Context(), pgtest.URL(t), d.Schema(), doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, ok := subject(rep, doctor.CheckSlots, "slot "+slot)
	if !ok || !strings.Contains(f.Problem, "retains") || !strings.Contains(f.Fix, "pg_drop_replication_slot") {
		t.Fatalf("no finding about slot %s retaining WAL: %+v", slot, rep.Findings)
	}
}

// TestPostgresLogicalSlot: a logical slot holds the catalog xmin. It needs
// wal_level=logical, which the shared test server does not have: the test
// skips there and runs on a server that has it.
func TestPostgresLogicalSlot(t *testing.T) {
	t.Parallel()
	d := pgtest.NewDriver(t, postgres.Options{})
	conn := connect(t)
	var level string
	if err := conn.QueryRow(t.Context(), "SHOW wal_level").Scan(&level); err != nil {
		t.Fatal(err)
	}
	if level != "logical" {
		t.Skipf("wal_level is %s: a logical replication slot needs wal_level=logical", level)
	}
	slot := randomName("stint_test_slot_")
	if _, err := conn.Exec(t.Context(), "SELECT pg_create_logical_replication_slot($1, 'test_decoding')", slot); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "SELECT pg_drop_replication_slot($1)", slot) })
	rep, err := doctor.Postgres(t.Context(), pgtest.URL(t), d.Schema(), doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := subject(rep, doctor.CheckSlots, "slot "+slot); !ok || !strings.Contains(f.Problem, "catalog xmin") {
		t.Fatalf("no finding about slot %s holding the catalog xmin: %+v", slot, rep.Findings)
	}
}
