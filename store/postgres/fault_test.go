package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
)

// injectFault makes the next `times` transactions that append events run
// action inside PostgreSQL: at the insert itself, or at commit (a deferred
// constraint trigger). A sequence counts the firings, since it is not rolled
// back with the transactions it fails.
func injectFault(t *testing.T, d *postgres.Driver, atCommit bool, times int, action string) (fired func() int) {
	t.Helper()
	ctx := context.Background()
	trigger := `CREATE TRIGGER fault AFTER INSERT ON job_events FOR EACH STATEMENT EXECUTE FUNCTION fault()`
	if atCommit {
		trigger = `CREATE CONSTRAINT TRIGGER fault AFTER INSERT ON job_events DEFERRABLE INITIALLY DEFERRED
			FOR EACH ROW EXECUTE FUNCTION fault()`
	}
	for _, sql := range []string{
		`CREATE SEQUENCE fault_seq`,
		fmt.Sprintf(`CREATE FUNCTION fault() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF nextval('fault_seq') <= %d THEN
					%s;
				END IF;
				RETURN NULL;
			END $$`, times, action),
		trigger,
	} {
		if _, err := d.Pool().Exec(ctx, sql); err != nil {
			t.Fatalf("inject fault: %v", err)
		}
	}
	return func() int {
		var n int
		if err := d.Pool().QueryRow(ctx, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM fault_seq`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// Transient failures of a transaction are retried inside the store and never
// reach the caller; other failures reach it, and a failure during COMMIT is
// reported as uncertain, never as success. Every case leaves either the
// whole enqueue (job and event) or nothing.
func TestTransactionFaults(t *testing.T) {
	t.Parallel()
	const selfTerminate = `PERFORM pg_terminate_backend(pg_backend_pid())`
	for _, tc := range []struct {
		name     string
		atCommit bool
		times    int
		action   string
		wantCode string // the SQLSTATE of the error that reaches the caller; "" when none does
		wantRuns int    // how often the fault point was reached
	}{
		{"serialization failure", false, 2, `RAISE EXCEPTION 'injected' USING ERRCODE = 'serialization_failure'`, "", 3},
		{"deadlock", false, 2, `RAISE EXCEPTION 'injected' USING ERRCODE = 'deadlock_detected'`, "", 3},
		{"serialization failure at commit", true, 1, `RAISE EXCEPTION 'injected' USING ERRCODE = 'serialization_failure'`, "", 2},
		{"lost dedupe race", false, 1, `RAISE EXCEPTION 'injected' USING ERRCODE = 'unique_violation', CONSTRAINT = 'jobs_dedupe_key_idx'`, "", 2},
		{"lost request id race", false, 1, `RAISE EXCEPTION 'injected' USING ERRCODE = 'unique_violation', CONSTRAINT = 'jobs_pkey'`, "", 2},
		{"connection lost mid-transaction", false, 2, selfTerminate, "", 3},
		{"other unique violation", false, 1, `RAISE EXCEPTION 'injected' USING ERRCODE = 'unique_violation', CONSTRAINT = 'some_other_idx'`, "23505", 1},
		{"check violation", false, 5, `RAISE EXCEPTION 'injected' USING ERRCODE = 'check_violation'`, "23514", 1},
		{"connection lost during commit, rolled back", true, 1, selfTerminate, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, d := newStore(t, postgres.Options{})
			fired := injectFault(t, d, tc.atCommit, tc.times, tc.action)
			ctx := context.Background()
			_, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs(1, "q")})
			var pe *pgconn.PgError
			switch {
			case tc.wantCode == "" && err != nil:
				t.Fatalf("enqueue: %v; want the store to retry", err)
			case tc.wantCode != "" && (!errors.As(err, &pe) || pe.Code != tc.wantCode):
				t.Fatalf("enqueue: %v; want SQLSTATE %s", err, tc.wantCode)
			}
			if got := fired(); got != tc.wantRuns {
				t.Errorf("the fault point was reached %d times, want %d", got, tc.wantRuns)
			}
			jobs, err := s.JobList(ctx, &store.JobListParams{})
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if tc.wantCode != "" {
				want = 0
			}
			if len(jobs) != want {
				t.Errorf("%d jobs after the enqueue, want %d", len(jobs), want)
			}
			verifyClean(t, s)
		})
	}
}

// Two transactions that lock the same jobs in opposite orders deadlock;
// PostgreSQL aborts one, the driver runs it again, and both succeed.
func TestRealDeadlockIsRetried(t *testing.T) {
	t.Parallel()
	s, d := newStore(t, postgres.Options{})
	ctx := context.Background()
	jobs := enqueue(t, s, 2, "q")
	a, b := jobs[0].ID, jobs[1].ID

	var runs atomic.Int32
	locked := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	lockBoth := func(me int, first, second string) error {
		var once sync.Once
		return d.InTx(ctx, func(tx store.Tx) error {
			runs.Add(1)
			if _, err := tx.JobGet(ctx, []string{first}); err != nil {
				return err
			}
			// On the first run, wait until the other transaction holds its
			// first lock, so the second locks cross.
			once.Do(func() {
				close(locked[me])
				<-locked[1-me]
			})
			_, err := tx.JobGet(ctx, []string{second})
			return err
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- lockBoth(0, a, b) }()
	go func() { errs <- lockBoth(1, b, a) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a transaction failed: %v; want the deadlock retried", err)
		}
	}
	// At least the victim ran again. Under the race detector a fourth run
	// was seen once (cause not pinned down); both must still succeed.
	if got := runs.Load(); got < 3 {
		t.Errorf("the transactions ran %d times, want at least 3 (the deadlock victim run again)", got)
	}
}

// terminator ends the pool's backends of a schema whenever it is poked.
type terminator struct {
	conn   *pgx.Conn
	app    string
	poke   chan struct{}
	killed atomic.Int64
}

func newTerminator(t *testing.T, schema string) *terminator {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return &terminator{conn: conn, app: "stint/" + schema, poke: make(chan struct{}, 1)}
}

func (k *terminator) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-k.poke:
		}
		var n int64
		err := k.conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, k.app).Scan(&n)
		if err != nil && ctx.Err() == nil {
			return err
		}
		k.killed.Add(n)
	}
}

// pokeEvery returns a function that pokes k on every n-th call.
func (k *terminator) pokeEvery(n int64) func() {
	var calls atomic.Int64
	return func() {
		if calls.Add(1)%n == 0 {
			select {
			case k.poke <- struct{}{}:
			default:
			}
		}
	}
}

// Backends terminated in the middle of enqueues, claims and completions
// leave nothing half-applied: every state change has its event and every
// event its state change (Verify), and the store keeps working.
func TestTerminatedBackendsLeaveNothingHalfApplied(t *testing.T) {
	t.Parallel()
	s, d := newStore(t, postgres.Options{MaxConns: 8})
	kill := newTerminator(t, d.Schema())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	killerDone := make(chan error, 1)
	go func() { killerDone <- kill.run(ctx) }()
	poke := kill.pokeEvery(10)

	const workers, rounds = 8, 40
	var (
		completed, uncertain atomic.Int64
		wg                   sync.WaitGroup
		failures             = make(chan error, workers)
	)
	for w := range workers {
		wg.Go(func() {
			worker := fmt.Sprintf("w%d", w)
			queue := fmt.Sprintf("q%d", w%2)
			for range rounds {
				poke()
				if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs(5, queue)}); err != nil {
					if errors.Is(err, postgres.ErrCommitUncertain) {
						uncertain.Add(1)
						continue
					}
					failures <- fmt.Errorf("enqueue: %w", err)
					return
				}
				poke()
				jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: worker, Queues: []string{queue}, Limit: 5, LeaseTTL: time.Hour, Start: true})
				if err != nil {
					if errors.Is(err, postgres.ErrCommitUncertain) {
						uncertain.Add(1)
						continue
					}
					failures <- fmt.Errorf("claim: %w", err)
					return
				}
				done := make([]store.JobCompleteParams, len(jobs))
				for i, j := range jobs {
					done[i] = store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}, Result: []byte(`1`)}
				}
				poke()
				res, err := s.JobComplete(ctx, done)
				if err != nil {
					if errors.Is(err, postgres.ErrCommitUncertain) {
						uncertain.Add(1)
						continue
					}
					failures <- fmt.Errorf("complete: %w", err)
					return
				}
				for _, r := range res {
					if r.Err != nil {
						failures <- fmt.Errorf("complete job %s: %w", r.Job.ID, r.Err)
						return
					}
					completed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	cancel()
	if err := <-killerDone; err != nil {
		t.Fatalf("terminator: %v", err)
	}
	close(failures)
	for err := range failures {
		t.Error(err)
	}
	t.Logf("completed %d jobs, %d backends terminated, %d commits uncertain", completed.Load(), kill.killed.Load(), uncertain.Load())
	if kill.killed.Load() == 0 {
		t.Fatal("no backend was terminated: the test tested nothing")
	}
	if completed.Load() == 0 {
		t.Fatal("no job completed")
	}
	rep := verifyClean(t, s)
	if rep.Jobs == 0 {
		t.Fatal("verify saw no jobs")
	}

	// The store still works, and its listener, terminated too, came back:
	// it hears another store's commits.
	other, err := postgres.OpenStore(context.Background(), pgtest.URL(t), postgres.Options{Schema: d.Schema(), Logger: pgtest.Logger})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	awaitWakeup(t, s, func() { enqueue(t, other, 1, "after") }, "after")
	jobs, err := s.JobClaim(context.Background(), &store.JobClaimParams{WorkerID: "w", Queues: []string{"after"}, Limit: 100, LeaseTTL: time.Minute})
	if err != nil || len(jobs) == 0 {
		t.Fatalf("claim after the storm: %v, %d jobs", err, len(jobs))
	}
}
