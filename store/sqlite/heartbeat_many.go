package sqlite

import (
	"context"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

var (
	_ store.RequestLookup      = (*txn)(nil)
	_ store.ClaimRequestLookup = (*txn)(nil)
)

// qEventsByRequest reads the events of many (job, request id) pairs, given
// as two JSON lists of the same length, through the request index: the
// request-id checks of a heartbeat or completion batch in one statement.
const qEventsByRequest = eventSelect + `
WHERE e.request_id <> '' AND (e.request_id, e.job_id) IN (
    SELECT r.value, j.value FROM json_each(?) j JOIN json_each(?) r ON r.key = j.key)`

// EventsByRequest implements store.RequestLookup.
func (t *txn) EventsByRequest(ctx context.Context, jobIDs, requestIDs []string) ([]lifecycle.Event, error) {
	return collect(ctx, t, qEventsByRequest, newEventScanner().scan, jsonList(jobIDs), jsonList(requestIDs))
}
