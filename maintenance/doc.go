// Package maintenance holds the services that move jobs along without a
// worker's help: the [Scheduler] promotes jobs whose run_at has come, the
// [Reaper] stalls jobs whose lease expired and requeues (or dead-letters)
// them, [Timeouts] times out attempts and jobs past their timeout, deadline
// or runtime budget, the [CancelFinalizer] cancels soft cancels nobody
// acknowledged, and [Retention] deletes old terminal jobs and heartbeat
// events.
//
// Every service has the same shape: a Config whose fields document their
// defaults, a constructor that validates it, Start(ctx), Stop() and Wake().
// A service makes one pass at Start, then one every Interval by its clock,
// and one whenever Wake is called; a pass calls its store verb again and
// again until a call changes fewer than Limit jobs, so a backlog is drained
// in one pass.
//
// The [Maintainer] runs all of them. On a database several processes share,
// it runs them only while it holds the leader seat ([Elector]): one node
// maintains, the others stand by and take over within about one TTL when
// the leader dies, or at once when it stops cleanly. Leadership is an
// efficiency, not a safety mechanism: every transition is guarded in the
// store (compare-and-swap on the job's revision), so two maintainers
// running at once would do no harm, only double work.
package maintenance
