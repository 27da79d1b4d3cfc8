// Package conformance holds one scenario set that every stint worker SDK
// must pass: the Go remote pool (server/remote with stint.NewPool), the
// TypeScript Worker (sdk/typescript) and the Python Worker (sdk/python).
//
// The tests build the stint binary from this checkout, start `stint server`
// on a fresh SQLite file, and run each language's scenario worker as a
// process (the Go one is this test binary run again). The scenarios live
// here, once, in Go: they enqueue jobs, watch the jobs through the API and
// read what the worker prints. Every scenario worker has the same handlers
// and the same settings, and speaks the same line protocol on stdout:
//
//	ready               the worker is claiming
//	started ID          the block handler began job ID
//	aborted ID REASON   its abort signal fired: cancel, shutdown, lease_lost, timeout, deadline
//	rejected ID KIND    a report for job ID was refused (KIND: stale_lease, ...)
//	ran ID STEP         the steps handler's step function STEP (one, two) ran
//	stopped             stdin closed and the graceful stop finished
//
// Handlers: echo returns {echo: payload, lang, attempt}; flaky fails with
// error code "flaky" while attempt <= payload.fail (then, with
// payload.retryAfterMs, asks RetryAfter once); block waits for its abort
// signal and then returns its reason as the error; stale releases its own
// lease behind the worker's back on the first run (so the worker's report
// is stale) and returns "second" the next time; steps runs step "one"
// (returning 1), waits durably for the signal "go" (an hour at most),
// sleeps durably 10ms ("nap"), runs step "two" (returning one + 1) and
// returns {one, two, received, payload, lang}. Settings: queue from
// STINT_QUEUE with 4 slots, a 10-minute lease (heartbeats every 200s, so a
// cancel must arrive by the notices stream), 5s claim long-polls, no
// shutdown grace.
package conformance
