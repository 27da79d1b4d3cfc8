package store

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ScheduleTickKey is the dedupe key, and the enqueue request id, of the job
// the tick of the schedule named name enqueues.
func ScheduleTickKey(name string, tick time.Time) string {
	return fmt.Sprintf("cron:%s:%s", name, tick.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano))
}

// ScheduleTickJobID is the id of the job s's tick enqueued, if it enqueued
// one (a paused schedule's or a skipped missed tick enqueued none): the
// dashboard finds a schedule's last job by it without an index.
func ScheduleTickJobID(s Schedule, tick time.Time) string {
	return requestJobID(s.Tenant, ScheduleActor, ScheduleTickKey(s.Name, tick), 0)
}

// requestJobID is the id of the ith job of an enqueue with a request id:
// scoped by tenant and producer, so two of them never share jobs.
func requestJobID(tenant, actorID, requestID string, i int) string {
	return uuid.NewSHA1(requestNS, fmt.Appendf(nil, "%s\x00%s\x00%s\x00%d", tenant, actorID, requestID, i)).String()
}
