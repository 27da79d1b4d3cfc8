// Package demo holds the job kinds `stint dev` runs, so that a newcomer sees
// every part of the lifecycle in the first minute: a job that sleeps, one
// that fails twice and then succeeds, one that always fails and ends in the
// dead-letter queue, one that checkpoints its progress, and a no-op.
//
//	mux := stint.NewMux()
//	demo.Register(mux, clock.System{})
//	c.EnqueueMany(ctx, demo.Specs())
//
// The kinds are plain handlers built on the public API, so they double as
// examples of how handlers use it: Decode, Attempt, SetResult, Checkpoint,
// Progress and the context's cancellation.
package demo
