// Package step is the durable step engine (DESIGN.md §8, docs/steps.md): it
// runs a handler as a program of named, ordered steps whose results are
// recorded through the store's StepStore, fenced by the attempt's lease.
//
// A later attempt replays the handler: each step finds its record by its
// place in the order and returns the recorded result without running its
// function again, after checking that the name matches (else the job fails
// nondeterministic). Sleeps, waits for signals and waits for child jobs
// hand the lease back (the store's suspend) instead of holding it.
//
// The engine knows nothing of the worker pool: a [Host] gives it the
// attempt's job, lease, store and clock. The root package's stint.Step,
// Job.Sleep, Job.WaitSignal, Job.Rand and Job.Now are built on it.
package step
