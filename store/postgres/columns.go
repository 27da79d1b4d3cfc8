package postgres

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stint-dev/stint/lifecycle"
)

// jobColumns is a batch of jobs as one array per column, the parameters of
// qJobInsert and qJobUpdate. The doc of each job is authoritative; the
// other columns are copied from the same Job so the two always agree.
type jobColumns struct {
	id, tenant, kind, queue, state                      []string
	priority, attempt                                   []int32
	rev                                                 []int64
	runAt, createdAt                                    []time.Time
	leaseExpiresAt, timeoutAt, cancelDeadline, deadline []pgtype.Timestamptz
	finishedAt                                          []pgtype.Timestamptz
	dedupeKey, doc                                      []string
	prevRev                                             []int64 // updates only
}

// jobColumnsOf lays jobs out in columns; prevRev is nil for inserts.
func jobColumnsOf(jobs []lifecycle.Job, prevRev []int64) (*jobColumns, error) {
	n := len(jobs)
	c := &jobColumns{
		id: make([]string, n), tenant: make([]string, n), kind: make([]string, n), queue: make([]string, n),
		state: make([]string, n), priority: make([]int32, n), attempt: make([]int32, n), rev: make([]int64, n),
		runAt: make([]time.Time, n), createdAt: make([]time.Time, n),
		leaseExpiresAt: make([]pgtype.Timestamptz, n), timeoutAt: make([]pgtype.Timestamptz, n),
		cancelDeadline: make([]pgtype.Timestamptz, n), deadline: make([]pgtype.Timestamptz, n),
		finishedAt: make([]pgtype.Timestamptz, n), dedupeKey: make([]string, n), doc: make([]string, n),
		prevRev: prevRev,
	}
	for i, j := range jobs {
		doc, err := marshal(j)
		if err != nil {
			return nil, fmt.Errorf("postgres: encode job %s: %w", j.ID, err)
		}
		c.id[i], c.tenant[i], c.kind[i], c.queue[i], c.state[i] = j.ID, j.Tenant, j.Kind, j.Queue, string(j.State)
		c.priority[i], c.attempt[i], c.rev[i] = int32(j.Priority), int32(j.Attempt), j.Rev
		c.runAt[i], c.createdAt[i] = j.RunAt, j.CreatedAt
		c.leaseExpiresAt[i], c.timeoutAt[i] = timestamptz(j.LeaseExpiresAt), timestamptz(j.TimeoutAt)
		c.cancelDeadline[i], c.deadline[i] = timestamptz(j.CancelDeadline), timestamptz(j.Deadline)
		c.finishedAt[i], c.dedupeKey[i], c.doc[i] = timestamptz(j.FinishedAt), j.DedupeKey, string(doc)
	}
	return c, nil
}

// args returns the columns in the order of the statements' parameters.
func (c *jobColumns) args() []any {
	a := []any{c.id, c.tenant, c.kind, c.queue, c.state, c.priority, c.attempt, c.rev, c.runAt, c.createdAt,
		c.leaseExpiresAt, c.timeoutAt, c.cancelDeadline, c.deadline, c.finishedAt, c.dedupeKey, c.doc}
	if c.prevRev != nil {
		a = append(a, c.prevRev)
	}
	return a
}

func timestamptz(t *time.Time) pgtype.Timestamptz {
	if t == nil {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: *t, Valid: true}
}

// marshal encodes a record for a doc column. Unlike json.Marshal it leaves
// <, > and & alone, so payloads and results keep the bytes they were given
// (json.Marshal would still compact them).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
