package postgres_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// The claim's low-water marks (lowwater.go): a job that becomes claimable
// below a queue's mark is the next claimed, whichever way it got there.

const lwQueue = "lw"

// lwEnqueue enqueues one job per priority given, in that order, and
// returns their ids.
func lwEnqueue(t *testing.T, s store.Store, runAt *time.Time, priorities ...int) []string {
	t.Helper()
	specs := make([]lifecycle.Spec, len(priorities))
	for i, p := range priorities {
		specs[i] = lifecycle.Spec{Kind: "test", Queue: lwQueue, Priority: p, RunAt: runAt, Payload: json.RawMessage(`{}`)}
	}
	res, err := s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: specs})
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids
}

// lwClaim claims up to n jobs of the queue and returns them.
func lwClaim(t *testing.T, s store.Store, n int) []store.Job {
	t.Helper()
	jobs, err := s.JobClaim(t.Context(), &store.JobClaimParams{WorkerID: "w", Queues: []string{lwQueue}, Limit: n, LeaseTTL: time.Hour})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return jobs
}

// lwNext claims one job and says which.
func lwNext(t *testing.T, s store.Store) string {
	t.Helper()
	jobs := lwClaim(t, s, 1)
	if len(jobs) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(jobs))
	}
	return jobs[0].ID
}

// lwOpen opens a driver and its store, without the background probe.
func lwOpen(t *testing.T, opts postgres.Options) (store.Store, *postgres.Driver) {
	t.Helper()
	return newStore(t, postgres.WithoutProbeLoop(opts))
}

// lwOpenAgain opens a second driver (another process, to the database) on
// d's schema.
func lwOpenAgain(t *testing.T, d *postgres.Driver, opts postgres.Options) store.Store {
	t.Helper()
	opts.Schema = d.Schema()
	if opts.Logger == nil {
		opts.Logger = pgtest.Logger
	}
	d2, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.WithoutProbeLoop(opts))
	if err != nil {
		t.Fatal(err)
	}
	s := store.New(d2, store.Options{})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// lwAdvance claims the first two of four jobs of priority 0 and checks that
// the queue's mark moved past the first.
func lwAdvance(t *testing.T, s store.Store, d *postgres.Driver) []string {
	t.Helper()
	ids := lwEnqueue(t, s, nil, 0, 0, 0, 0)
	if got := lwNext(t, s); got != ids[0] {
		t.Fatalf("claimed %s, want %s", got, ids[0])
	}
	if got := lwNext(t, s); got != ids[1] {
		t.Fatalf("claimed %s, want %s", got, ids[1])
	}
	if _, _, ok := d.ClaimMark(lwQueue); !ok {
		t.Fatal("no claim mark after two claims")
	}
	return ids
}

func TestLowWaterHigherPriorityEnqueue(t *testing.T) {
	t.Parallel()
	s, d := lwOpen(t, postgres.Options{DisableNotify: true})
	lwAdvance(t, s, d)
	x := lwEnqueue(t, s, nil, 10)[0]
	if got := lwNext(t, s); got != x {
		t.Errorf("claimed %s, want the higher-priority %s enqueued below the mark", got, x)
	}
}

func TestLowWaterPromote(t *testing.T) {
	t.Parallel()
	s, d := lwOpen(t, postgres.Options{DisableNotify: true})
	later := time.Now().Add(time.Hour)
	sched := lwEnqueue(t, s, &later, 0)[0] // created first: the oldest
	lwAdvance(t, s, d)
	now := time.Now().Add(2 * time.Hour)
	if n, err := s.JobPromoteDue(t.Context(), &store.MaintainParams{Now: &now}); err != nil || n != 1 {
		t.Fatalf("promote: %d, %v", n, err)
	}
	if got := lwNext(t, s); got != sched {
		t.Errorf("claimed %s, want the promoted %s, created before the mark", got, sched)
	}
}

func TestLowWaterRelease(t *testing.T) {
	t.Parallel()
	s, d := lwOpen(t, postgres.Options{DisableNotify: true})
	ids := lwEnqueue(t, s, nil, 0, 0, 0, 0, 0)
	first := lwClaim(t, s, 1)[0]
	lwNext(t, s)
	lwNext(t, s)
	if _, _, ok := d.ClaimMark(lwQueue); !ok {
		t.Fatal("no claim mark after three claims")
	}
	if _, err := s.JobRelease(t.Context(), &store.JobReleaseParams{OwnerParams: store.OwnerParams{JobID: first.ID, LeaseID: first.LeaseID}, Requeue: true}); err != nil {
		t.Fatal(err)
	}
	if got := lwNext(t, s); got != ids[0] {
		t.Errorf("claimed %s, want the released %s", got, ids[0])
	}
}

// Another process's enqueue below the mark reaches the claimer by NOTIFY.
func TestLowWaterNotifyFromAnotherProcess(t *testing.T) {
	t.Parallel()
	heard := make(chan string, 100)
	s, d := lwOpen(t, postgres.WithListenHook(postgres.Options{}, func(e string) { heard <- e }))
	waitHeard(t, heard, func(e string) bool { return e == "listen" })
	lwAdvance(t, s, d)
	other := lwOpenAgain(t, d, postgres.Options{})
	x := lwEnqueue(t, other, nil, 10)[0]
	waitHeard(t, heard, func(e string) bool { return strings.HasPrefix(e, "k:10:") && strings.HasSuffix(e, ":"+lwQueue) })
	if p, _, ok := d.ClaimMark(lwQueue); !ok || p != 10 {
		t.Errorf("mark after the notice: priority %d (set %v), want 10", p, ok)
	}
	if got := lwNext(t, s); got != x {
		t.Errorf("claimed %s, want %s, enqueued by another process below the mark", got, x)
	}
}

// waitHeard waits for a listener event that ok accepts.
func waitHeard(t *testing.T, heard <-chan string, ok func(string) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		select {
		case e := <-heard:
			if ok(e) {
				return
			}
		case <-ctx.Done():
			t.Fatal("the listener never heard the notice")
		}
	}
}

// Without notifications, another process's enqueue below the mark waits
// for the probe.
func TestLowWaterProbeWithoutNotify(t *testing.T) {
	t.Parallel()
	s, d := lwOpen(t, postgres.Options{DisableNotify: true})
	ids := lwAdvance(t, s, d)
	other := lwOpenAgain(t, d, postgres.Options{DisableNotify: true})
	x := lwEnqueue(t, other, nil, 10)[0]
	// Nothing told this driver: its mark still hides x.
	if got := lwNext(t, s); got != ids[2] {
		t.Fatalf("claimed %s before the probe, want %s (the mark hides %s)", got, ids[2], x)
	}
	if err := d.ProbeLowWater(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := lwNext(t, s); got != x {
		t.Errorf("claimed %s after the probe, want %s", got, x)
	}
}

// A claimer elsewhere that locks jobs and rolls back leaves them below the
// mark, where the probe finds them. Notifications are off: a listener that
// connects late forgets the marks, and the enqueue's own notice, heard late,
// lowers them; either would unhide the job before the probe (it did under
// -race).
func TestLowWaterProbeAfterForeignRollback(t *testing.T) {
	t.Parallel()
	s, d := lwOpen(t, postgres.Options{DisableNotify: true})
	ids := lwEnqueue(t, s, nil, 0, 0, 0, 0)
	tx, err := d.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var locked string
	if err := tx.QueryRow(t.Context(), `SELECT id FROM jobs WHERE state = 'queued' ORDER BY created_at, id LIMIT 1 FOR UPDATE`).Scan(&locked); err != nil {
		t.Fatal(err)
	}
	if locked != ids[0] {
		t.Fatalf("locked %s, want %s", locked, ids[0])
	}
	if got := lwNext(t, s); got != ids[1] {
		t.Fatalf("claimed %s, want %s (%s is locked)", got, ids[1], ids[0])
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := lwNext(t, s); got != ids[2] {
		t.Fatalf("claimed %s before the probe, want %s (the mark is past %s)", got, ids[2], ids[0])
	}
	if err := d.ProbeLowWater(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := lwNext(t, s); got != ids[0] {
		t.Errorf("claimed %s after the probe, want %s, unlocked by the rollback", got, ids[0])
	}
}

// While a REPEATABLE READ transaction holds the xmin horizon, the entries
// of claimed jobs stay at the head of the claim index. The claim seeking to
// its mark reads a bounded number of buffers however many jobs were
// claimed; a walk from the head reads more with each one (a heap page per
// twenty or so claimed jobs: the buffers count pages, not rows).
func TestLowWaterClaimBoundedBehindHeldHorizon(t *testing.T) {
	t.Parallel()
	const n = 1000
	s, d := lwOpen(t, postgres.Options{DisableNotify: true})
	hold, err := d.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(context.Background()) }()
	if _, err := hold.Exec(t.Context(), "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(t.Context(), "SELECT count(*) FROM jobs"); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, n+10, lwQueue)
	var first, last int
	for i := range n {
		lwNext(t, s)
		if i == 0 {
			first = claimBuffers(t, d, true)
		}
	}
	last = claimBuffers(t, d, true)
	head := claimBuffers(t, d, false)
	t.Logf("buffers per claim: %d after 1 claim, %d after %d with the mark, %d from the head", first, last, n, head)
	if last > first+20 {
		t.Errorf("the claim reads %d buffers after %d claims, %d after one: it walks what was claimed", last, n, first)
	}
	if head < n/25 {
		t.Errorf("a claim from the head read %d buffers after %d claims: the test holds no horizon", head, n)
	}
}

var buffersRE = regexp.MustCompile(`Buffers: shared((?: \w+=\d+)+)`)

// claimBuffers returns the shared buffers a claim of one job reads.
func claimBuffers(t *testing.T, d *postgres.Driver, useMark bool) int {
	t.Helper()
	plan, err := d.ExplainClaim(t.Context(), lwQueue, useMark)
	if err != nil {
		t.Fatal(err)
	}
	if useMark && !strings.Contains(plan, "Index Cond: ((queue = q.queue) AND (ROW((- priority), created_at, id) >= ROW(") {
		t.Fatalf("the claim does not seek to its mark:\n%s", plan)
	}
	m := buffersRE.FindStringSubmatch(plan)
	if m == nil {
		t.Fatalf("no buffers in the plan:\n%s", plan)
	}
	total := 0
	for _, kv := range strings.Fields(m[1]) {
		_, v, _ := strings.Cut(kv, "=")
		n, _ := strconv.Atoi(v)
		total += n
	}
	return total
}
