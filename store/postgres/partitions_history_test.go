package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// TestOutboxPartitions drives the partitioned outbox with a manual clock:
// retention drops an hour's partition once every message in it is
// delivered or dead before the cutoff, keeps one holding a pending message
// or one that ended after the cutoff, deletes no row, and a dead message is
// still replayed by its id through the partitions.
func TestOutboxPartitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, d := newStore(t, postgres.Options{EventPartition: time.Hour})
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	if err := d.EnsurePartitions(ctx, t0); err != nil {
		t.Fatal(err)
	}
	want := []string{"outbox_default", "outbox_p20300101_0000", "outbox_p20300101_0100", "outbox_p20300101_0200"}
	if got := partitionsOf(t, d, "outbox"); !containsAll(got, want) {
		t.Fatalf("outbox partitions: %v, want %v among them", got, want)
	}
	if _, err := s.WebhookAdd(ctx, store.Webhook{URL: "http://127.0.0.1:1/hook", Secret: "0123456789abcdef0123"}); err != nil {
		t.Fatal(err)
	}

	// Hour 0: three jobs. a's messages are delivered, b's stay pending,
	// c's first is dead-lettered and the rest delivered.
	a := run(t, s, "qa", at(0), at(time.Minute))
	b := run(t, s, "qb", at(2*time.Minute), at(3*time.Minute))
	c := run(t, s, "qc", at(4*time.Minute), at(5*time.Minute))
	var dead int64
	deliverAll(t, s, at(10*time.Minute), func(m store.OutboxMessage) (deliver, stop bool) {
		if m.AggregateID == c.ID && dead == 0 {
			dead = m.ID
			return false, false
		}
		return m.AggregateID != b.ID, m.AggregateID == b.ID
	})
	if dead == 0 {
		t.Fatal("no message of job c was claimed")
	}
	// Hour 1: one job, every message delivered (b's still held).
	run(t, s, "qd", at(70*time.Minute), at(75*time.Minute))
	deliverAll(t, s, at(80*time.Minute), func(m store.OutboxMessage) (bool, bool) { return true, m.AggregateID == b.ID })
	hour0, hour1 := rowsIn(t, d, "outbox_p20300101_0000"), rowsIn(t, d, "outbox_p20300101_0100")
	if hour0 == 0 || hour1 == 0 {
		t.Fatalf("outbox partitions hold %d and %d messages, want some in each hour", hour0, hour1)
	}
	if all := listOutbox(t, s, ""); len(all) != hour0+hour1 {
		t.Fatalf("outbox lists %d messages, partitions hold %d", len(all), hour0+hour1)
	}

	res, err := s.JobRetain(ctx, &store.RetainParams{FinishedBefore: *at(3 * time.Hour)})
	if err != nil || res.Outbox != hour1 {
		t.Fatalf("retain: %+v, %v; want hour 1's %d messages gone", res, err, hour1)
	}
	got := partitionsOf(t, d, "outbox")
	if slices.Contains(got, "outbox_p20300101_0100") {
		t.Errorf("hour 1's outbox partition, all delivered, outlived the cutoff: %v", got)
	}
	if !slices.Contains(got, "outbox_p20300101_0000") || rowsIn(t, d, "outbox_p20300101_0000") != hour0 {
		t.Fatalf("hour 0's outbox partition, with pending messages, lost rows or went: %v", got)
	}

	// The dead message is replayed by id, and every message goes out.
	m, err := s.OutboxReplay(ctx, dead)
	if err != nil || m.State != store.OutboxPending || m.ID != dead {
		t.Fatalf("replay %d: %+v, %v", dead, m, err)
	}
	deliverAll(t, s, at(3*time.Hour+10*time.Minute), nil)
	if left := listOutbox(t, s, store.OutboxPending); len(left) != 0 {
		t.Fatalf("%d messages still pending", len(left))
	}
	// Delivered after the cutoff: the partition stays until a later one.
	if _, err := s.JobRetain(ctx, &store.RetainParams{FinishedBefore: *at(3 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(partitionsOf(t, d, "outbox"), "outbox_p20300101_0000") {
		t.Fatal("hour 0's outbox partition went while messages in it ended after the cutoff")
	}
	res, err = s.JobRetain(ctx, &store.RetainParams{FinishedBefore: *at(4 * time.Hour)})
	if err != nil || res.Outbox != hour0 {
		t.Fatalf("retain: %+v, %v; want hour 0's %d messages gone", res, err, hour0)
	}
	if got := partitionsOf(t, d, "outbox"); slices.Contains(got, "outbox_p20300101_0000") || !slices.Contains(got, "outbox_default") {
		t.Errorf("outbox partitions after the last retention: %v; want hour 0 gone and the default kept", got)
	}
	if all := listOutbox(t, s, ""); len(all) != 0 {
		t.Errorf("%d messages listed after their partitions went", len(all))
	}
	// Ids go on from where they were.
	run(t, s, "qe", at(2*time.Hour+time.Minute), nil)
	for _, m := range listOutbox(t, s, "") {
		if m.ID <= dead {
			t.Errorf("a new message has id %d, not above the old %d", m.ID, dead)
		}
	}
	_ = a
	verifyClean(t, s)
}

// deliverAll claims the due outbox heads at now again and again and
// reports each delivered, until none is left (a claim's lease is an hour);
// decide (nil: deliver all)
// says whether to deliver a message, or else leave it dead, and whether to
// stop claiming its aggregate (leave it pending).
func deliverAll(t *testing.T, s store.Store, now *time.Time, decide func(store.OutboxMessage) (deliver, stop bool)) {
	t.Helper()
	ctx := t.Context()
	held := map[int64]bool{}
	for range 1000 {
		ds, err := s.OutboxClaim(ctx, &store.OutboxClaimParams{Limit: 100, Lease: time.Hour, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			return
		}
		for _, dl := range ds {
			m := dl.Message
			if held[m.ID] {
				continue
			}
			deliver, stop := true, false
			if decide != nil {
				deliver, stop = decide(m)
			}
			p := &store.OutboxReportParams{ID: m.ID, Attempt: m.Attempts, Now: now}
			switch {
			case stop:
				held[m.ID] = true
			case deliver:
				err = s.OutboxDelivered(ctx, p)
			default:
				p.Dead, p.Error = true, "refused"
				err = s.OutboxFailed(ctx, p)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatal("the outbox never emptied")
}

func listOutbox(t *testing.T, s store.Store, state store.OutboxState) []store.OutboxMessage {
	t.Helper()
	ms, err := s.OutboxList(t.Context(), &store.OutboxListParams{State: state, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestRunEventPartitions drives the partitioned run_events with a manual
// clock: retention drops an hour's partition once no run with events in it
// exists, keeps one a live run has events in, and a run created again under
// a deleted run's id reads only its own events.
func TestRunEventPartitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, d := newStore(t, postgres.Options{EventPartition: time.Hour})
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	if err := d.EnsurePartitions(ctx, t0); err != nil {
		t.Fatal(err)
	}
	if err := d.EnsurePartitions(ctx, *at(3 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	runOf(t, s, "done0", "ra", at(0), at(5*time.Minute))
	runOf(t, s, "live", "rb", at(20*time.Minute), nil)
	runOf(t, s, "done1", "rc", at(70*time.Minute), at(75*time.Minute))
	liveEvents, err := s.RunEvents(ctx, "live")
	if err != nil || len(liveEvents) == 0 {
		t.Fatalf("live run's events: %v, %v", liveEvents, err)
	}
	hour0 := rowsIn(t, d, "run_events_p20300101_0000")

	res, err := s.JobRetain(ctx, &store.RetainParams{FinishedBefore: *at(3 * time.Hour)})
	if err != nil || res.Runs != 2 {
		t.Fatalf("retain: %+v, %v; want the 2 finished runs", res, err)
	}
	got := partitionsOf(t, d, "run_events")
	if slices.Contains(got, "run_events_p20300101_0100") {
		t.Errorf("hour 1's run_events partition outlived every run with events in it: %v", got)
	}
	if !slices.Contains(got, "run_events_p20300101_0000") || rowsIn(t, d, "run_events_p20300101_0000") != hour0 {
		t.Fatalf("hour 0's run_events partition, with a live run's events, went or lost rows: %v", got)
	}
	if evs, err := s.RunEvents(ctx, "live"); err != nil || len(evs) != len(liveEvents) {
		t.Errorf("live run's events after retention: %d, %v; want %d", len(evs), err, len(liveEvents))
	}
	// done0's events still sit in hour 0: a new run of that id sees none.
	v := runOf(t, s, "done0", "rd", at(3*time.Hour+time.Minute), nil)
	evs, err := s.RunEvents(ctx, "done0")
	if err != nil || len(evs) == 0 {
		t.Fatalf("new run done0's events: %v, %v", evs, err)
	}
	for i, e := range evs {
		if e.At.Before(v.Run.CreatedAt) || e.Rev != int64(i+1) {
			t.Errorf("new run done0 reads event rev %d at %v, of the deleted run before it", e.Rev, e.At)
		}
	}
	verifyClean(t, s)
}

// runOf creates the run id with one job in queue at start, and runs the
// job to success at end unless end is nil.
func runOf(t *testing.T, s store.Store, id, queue string, start, end *time.Time) store.RunView {
	t.Helper()
	ctx := t.Context()
	v, err := s.RunCreate(ctx, &store.RunCreateParams{Run: lifecycle.RunSpec{ID: id},
		Jobs: []store.RunJobSpec{{Name: "a", Spec: specs(1, queue)[0]}}, Now: start})
	if err != nil {
		t.Fatal(err)
	}
	if end != nil {
		jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "w", Queues: []string{queue}, Limit: 1, LeaseTTL: time.Hour, Start: true, Now: start})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v, %v", jobs, err)
		}
		complete(t, s, jobs[0], end)
	}
	return v
}

// partitionsOf lists the partitions of table by name.
func partitionsOf(t *testing.T, d *postgres.Driver, table string) []string {
	t.Helper()
	rows, err := d.Pool().Query(context.Background(),
		`SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY 1`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	return names
}

// TestUpgradeHistoryPartitions builds a database at migration 0006 with
// outbox messages (delivered, pending, dead) and run events, migrates it,
// and expects every row read back as before, under the same ids, the
// tables partitioned, replay by id working, and new ids above the old.
func TestUpgradeHistoryPartitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	opts := postgres.Options{Schema: pgtest.NewSchema(t), Logger: pgtest.Logger, MaxConns: 2}
	d, err := postgres.OpenAt(ctx, url, opts, 6)
	if err != nil {
		t.Fatalf("open at version 6: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	// Today's enqueues read the queues' job defaults (0012), which this
	// test's writes at version 6 go through: give the old table the column
	// (0012 adds it only if missing).
	if _, err := d.Pool().Exec(ctx, `ALTER TABLE queues ADD COLUMN defaults text NOT NULL DEFAULT ''`); err != nil {
		t.Fatal(err)
	}
	s := store.New(d, store.Options{})
	if _, err := s.WebhookAdd(ctx, store.Webhook{URL: "http://127.0.0.1:1/hook", Secret: "0123456789abcdef0123"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	runOf(t, s, "r1", "ra", at(0), at(time.Second))
	runOf(t, s, "r2", "rb", at(2*time.Second), nil)
	var dead int64
	deliverAll(t, s, at(3*time.Second), func(m store.OutboxMessage) (bool, bool) {
		switch {
		case m.AggregateID == "r2":
			return false, true
		case dead == 0:
			dead = m.ID
			return false, false
		}
		return true, false
	})
	beforeOutbox := listOutbox(t, s, "")
	beforeEvents := map[string][]store.RunEvent{}
	for _, id := range []string{"r1", "r2"} {
		if beforeEvents[id], err = s.RunEvents(ctx, id); err != nil || len(beforeEvents[id]) == 0 {
			t.Fatalf("run %s events: %v, %v", id, beforeEvents[id], err)
		}
	}
	states := map[store.OutboxState]int{}
	for _, m := range beforeOutbox {
		states[m.State]++
	}
	if states[store.OutboxDelivered] == 0 || states[store.OutboxPending] == 0 || states[store.OutboxDead] != 1 {
		t.Fatalf("outbox before the upgrade: %v, want delivered, pending and one dead message", states)
	}

	if err := d.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if err := d.EnsurePartitions(ctx, time.Time{}); err != nil {
		t.Fatalf("ensure partitions: %v", err)
	}
	for _, table := range []string{"outbox", "run_events"} {
		var kind string
		if err := d.Pool().QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE oid = $1::regclass`, table).Scan(&kind); err != nil || kind != "p" {
			t.Errorf("%s after the upgrade: relkind %q, %v; want partitioned", table, kind, err)
		}
		// The current period's rows sit in the default, carried over: it
		// gets no partition of its own, the next ones do.
		if got := partitionsOf(t, d, table); len(got) < 1+2 || !slices.Contains(got, table+"_default") {
			t.Errorf("%s's partitions after the upgrade: %v; want the default and two ahead", table, got)
		}
	}
	sameJSON(t, "outbox", listOutbox(t, s, ""), beforeOutbox)
	for id, want := range beforeEvents {
		got, err := s.RunEvents(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "run "+id+" events", got, want)
	}
	if m, err := s.OutboxReplay(ctx, dead); err != nil || m.State != store.OutboxPending {
		t.Fatalf("replay %d after the upgrade: %+v, %v", dead, m, err)
	}
	maxID := beforeOutbox[len(beforeOutbox)-1].ID
	runOf(t, s, "r3", "rc", nil, nil)
	after := listOutbox(t, s, "")
	if len(after) <= len(beforeOutbox) || after[len(after)-1].ID <= maxID {
		t.Errorf("new messages after the upgrade: %d listed, last id %d; want new ids above %d", len(after), after[len(after)-1].ID, maxID)
	}
	deliverAll(t, s, at(2*time.Hour), nil)
	if left := listOutbox(t, s, store.OutboxPending); len(left) != 0 {
		t.Errorf("%d messages still pending after delivering all", len(left))
	}
	verifyClean(t, s)
}
