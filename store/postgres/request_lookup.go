package postgres

import (
	"context"

	"github.com/stint-dev/stint/lifecycle"
)

// qEventsByRequest reads the events of many (job, request id) pairs: the
// request-id checks of a completion batch in one statement.
const qEventsByRequest = `
SELECT ` + eventSelect + `
FROM unnest($1::text[], $2::text[]) AS r(job_id, request_id)
JOIN job_events e ON e.job_id = r.job_id AND e.request_id = r.request_id
JOIN jobs j ON j.id = e.job_id AND e.at >= j.created_at
WHERE e.request_id <> ''`

// EventsByRequest implements store.RequestLookup.
func (t *tx) EventsByRequest(ctx context.Context, jobIDs, requestIDs []string) ([]lifecycle.Event, error) {
	return t.events(ctx, qEventsByRequest, jobIDs, requestIDs)
}
