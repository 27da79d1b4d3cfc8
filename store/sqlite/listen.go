package sqlite

import (
	"context"
	"time"

	"github.com/stint-dev/stint/store"
)

// Kinds of a notices row: a queue that gained claimable jobs, or a job whose
// lease changed under its owner.
const (
	noticeQueue = "q"
	noticeJob   = "j"
)

const (
	qNoticeInsert = `INSERT INTO notices (kind, name, at) VALUES (?, ?, ?)`
	qNoticesAfter = `SELECT id, kind, name FROM notices WHERE id > ? ORDER BY id`
	qNoticesLast  = `SELECT coalesce(max(id), 0) FROM notices`
	qNoticesTrim  = `DELETE FROM notices WHERE id <= ?`
)

// DefaultNoticePoll is how often Listen reads the notices table.
const DefaultNoticePoll = 25 * time.Millisecond

// Notices are kept about a minute: long enough for every listener, polling
// every few milliseconds, to have read them. Listen trims them through the
// writer every noticeMark.
const (
	noticeKeep = time.Minute
	noticeMark = 10 * time.Second
)

var _ store.Listener = (*Driver)(nil)

// Listen delivers the notices committed to the file since Open, by this
// process and by others (since Open rather than since Listen's start, which
// runs in a goroutine of its own: nothing committed in between is lost), reading them every Options.NoticePoll (DefaultNoticePoll) on a reader
// (an indexed range read past the last id seen) until ctx ends. SQLite has
// no LISTEN; polling a table lets a cancel from `stint jobs cancel` in one
// process reach the handler running in another within a poll, not at its
// next heartbeat. Ids only grow (AUTOINCREMENT) and the single writer
// commits them in order, so no notice is skipped. A failed read is retried
// at the next tick; notices are also made up for by claimers' polling and
// owners' heartbeats.
func (d *Driver) Listen(ctx context.Context, deliver func(store.Notice)) error {
	last := d.noticeFrom
	tick := time.NewTicker(d.noticePoll)
	defer tick.Stop()
	// marks remember the last id seen at each noticeMark, to trim by id
	// (a rowid range) the rows older than noticeKeep.
	type mark struct {
		at time.Time
		id int64
	}
	var marks []mark
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		n, next, err := d.noticesAfter(ctx, last)
		if err != nil {
			continue
		}
		last = next
		if !n.Empty() {
			deliver(n)
		}
		now := d.clock.Now()
		if len(marks) == 0 || now.Sub(marks[len(marks)-1].at) >= noticeMark {
			marks = append(marks, mark{now, last})
		}
		if now.Sub(marks[0].at) >= noticeKeep {
			old := marks[0].id
			marks = marks[1:]
			_ = d.w.do(ctx, func(t *txn) error {
				_, err := t.q.ExecContext(t.stmtCtx(ctx), qNoticesTrim, old)
				return err
			})
		}
	}
}

func (d *Driver) noticesLast(ctx context.Context) (int64, error) {
	st, err := d.rstmts.get(qNoticesLast)
	if err != nil {
		return 0, err
	}
	var id int64
	return id, st.QueryRowContext(ctx).Scan(&id)
}

// noticesAfter reads the notices past id and returns them with the last id
// read.
func (d *Driver) noticesAfter(ctx context.Context, id int64) (store.Notice, int64, error) {
	var n store.Notice
	st, err := d.rstmts.get(qNoticesAfter)
	if err != nil {
		return n, id, err
	}
	rows, err := st.QueryContext(ctx, id)
	if err != nil {
		return n, id, err
	}
	defer rows.Close()
	last := id
	for rows.Next() {
		var kind, name string
		if err := rows.Scan(&last, &kind, &name); err != nil {
			return store.Notice{}, id, err
		}
		switch kind {
		case noticeQueue:
			n.Queues = append(n.Queues, name)
		case noticeJob:
			n.Jobs = append(n.Jobs, name)
		}
	}
	if err := rows.Err(); err != nil {
		return store.Notice{}, id, err
	}
	return n, last, nil
}
