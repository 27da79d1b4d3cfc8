package sqlite

import (
	"context"
	"database/sql"
)

// qJobsByClaimRequest finds the jobs whose claimed event carries any of
// many request ids (a JSON list): the retry checks of a multi-owner claim
// in one statement.
const qJobsByClaimRequest = `SELECT DISTINCT request_id, job_id FROM job_events
WHERE request_id IN (SELECT value FROM json_each(?)) AND request_id <> '' AND type = 'claimed'`

// JobsByClaimRequest implements store.ClaimRequestLookup.
func (t *txn) JobsByClaimRequest(ctx context.Context, requestIDs []string) (map[string][]string, error) {
	type pair struct{ request, job string }
	pairs, err := collect(ctx, t, qJobsByClaimRequest, func(rows *sql.Rows) (pair, error) {
		var p pair
		return p, rows.Scan(&p.request, &p.job)
	}, jsonList(requestIDs))
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(pairs))
	for _, p := range pairs {
		out[p.request] = append(out[p.request], p.job)
	}
	return out, nil
}
