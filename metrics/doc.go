// Package metrics exposes what stint does as Prometheus metrics.
//
// [New] makes the collectors and registers them in a registry of your
// choosing (your program's own, or a fresh one); [Metrics.Store] wraps a
// store so that every claim, heartbeat, completion, failure and maintenance
// pass through it is counted; [Metrics.Pool] reports a pool's utilisation;
// and the jobs by queue and state are counted in the background by a
// [Counter], never on a scrape. Names follow Prometheus conventions
// (stint_..._total, _seconds) and no label takes unbounded values: queue,
// kind, state and op only, never a job id.
package metrics
