// Package bench is the harness behind `stint bench`: it measures how fast a
// store and a worker pool with the default configuration enqueue and work
// no-op jobs, how soon an idle pool picks up a job after its enqueue
// returns, and how much memory it takes, then checks from the store and its
// event log that every job succeeded exactly once.
//
//	rep, err := bench.Run(ctx, s, bench.Config{Jobs: 100_000})
//
// Run takes a store that holds no jobs of its kind (a fresh one): the check
// at the end counts every job of that kind.
package bench
