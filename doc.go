// Package stint is the Go API of stint, a durable job orchestrator: a
// [Client] that enqueues, inspects, cancels and replays jobs, and a worker
// [Pool] that runs them with handlers shaped like net/http's.
//
// Both work on a store.Store: store/sqlite (embedded, one file) or
// store/postgres (many nodes on one database). Every job moves through the
// one lifecycle of package lifecycle, and every transition is recorded in
// the job's event log.
//
// # Producing
//
//	c, _ := stint.NewClient(s, stint.ClientConfig{})
//	res, err := c.Enqueue(ctx, stint.Spec{Kind: "email.send", Payload: json.RawMessage(`{"to":"ada@example.com"}`)})
//
// On PostgreSQL, jobs can be enqueued inside the caller's own transaction
// (see [Client]).
//
// # Working
//
// Register a [Handler] per kind on a [Mux], wrap them with [Middleware], and
// run a [Pool]:
//
//	mux := stint.NewMux()
//	mux.HandleFunc("email.send", func(ctx context.Context, j *stint.Job) error {
//		var m Mail
//		if err := j.Decode(&m); err != nil {
//			return err // dead-lettered as parse_error: it would never decode
//		}
//		return send(ctx, m) // any error: retried with backoff
//	})
//	pool, _ := stint.NewPool(s, mux, stint.Config{})
//	pool.Start(ctx)
//	defer pool.Stop(context.Background())
//
// The handler's return value decides the outcome: nil succeeds (with the
// result set by [Job.SetResult]); [Permanent], [RetryAfter], [Halt] and
// [DeadLetter] say otherwise; any other error is retried while attempts
// remain; a panic fails the attempt with its stack.
//
// The pool claims only the kinds its Mux knows, as many as each queue has
// free slots, claiming again at once while there is work and otherwise
// waking on the store's notifications. It heartbeats every running job at a
// third of the lease TTL, and cancels the handler's context, with a cause
// read by context.Cause, when a cancel is requested ([ErrCancelRequested]),
// the lease is lost ([ErrLeaseLost]), the attempt's timeout or the job's
// deadline passes ([ErrTimeout], [ErrDeadline]), the budget is exceeded
// ([ErrBudgetExceeded]) or the pool is stopping ([ErrShutdown]). A handler
// that ignores cancellation is still fenced: its late reports are rejected.
// The store's lease notices (LISTEN/NOTIFY on PostgreSQL, in process on
// SQLite) make the pool renew a job's lease at once when a cancel, a
// revoked lease, a timeout or a deadline changed it, so the handler's
// context is cancelled within a round trip; heartbeats remain the fallback.
// Completions are written in batches; Stop releases unfinished jobs so
// another pool picks them up at once, without using up an attempt.
// [Config.OnOutcome] hears how each attempt ended as the store recorded it.
//
// Each pool also runs the maintenance services (package maintenance:
// scheduler, reaper, timeouts, cancel finalizer, retention), elected so that
// one process at a time runs them, unless [Config.NoMaintenance]; it warns
// when work stays overdue with no maintenance running anywhere. Lease TTL,
// timeout, attempts, backoff and retry rules can be set per kind and per
// queue ([JobDefaults]). A failing store call is retried with backoff
// (Config.StoreBackoff); a claim whose reply was lost is retried under the
// same request id, which returns the leases it took.
//
// Package stinttest helps test handlers against a real store.
package stint
