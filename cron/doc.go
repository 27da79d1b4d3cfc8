// Package cron runs periodic jobs: schedules with cron expressions read in a
// time zone, kept in the store (declared in Go with [Declare], in a JSON file
// with [LoadFile], or with `stint cron add`), and a [Service] that enqueues
// each tick's job once across the whole cluster.
//
// Exactly once: firing a tick is one store transaction that locks the
// schedule, checks that its last tick is still the one the firer saw,
// enqueues the job and records the tick. The job's dedupe key and its
// request id both carry the tick ("cron:<name>:<tick>"), so the id of a
// tick's job is fixed: a leader that dies after the commit, or two leaders
// during a failover, can never make a second job for a tick.
//
// Missed ticks (no leader ran while they came due) follow the schedule's
// policy: "latest" (the default) enqueues the latest missed tick once and
// skips the older ones; "all" enqueues every missed tick, oldest first, up
// to MaxCatchUp per pass. Ticks older than MaxLookBack are never looked at.
// A paused schedule records its ticks without enqueueing them, so resuming
// it does not fire the ticks of the pause.
//
// Expressions are parsed by github.com/robfig/cron/v3: five fields (minute,
// hour, day of month, month, day of week), an optional leading seconds
// field, or a descriptor (@hourly, @daily, @weekly, @monthly, @yearly,
// @every 1h30m).
package cron
