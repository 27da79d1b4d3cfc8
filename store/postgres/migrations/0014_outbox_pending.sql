-- The oldest pending outbox message, found by a seek: a claim of the outbox
-- heads starts its walk there instead of at the first row of the table,
-- over every delivered message before it (store/postgres/outbox_many.go,
-- docs/outbox.md). Delivered and dead rows have no entry. next_attempt_at
-- is never null: that term only keeps the index to the statements that
-- name it or imply it (the claims), since a planner without statistics
-- (a fresh table) chose a plain index of the pending ids for statements it
-- serves badly.
CREATE INDEX IF NOT EXISTS outbox_pending_id ON outbox (id) WHERE state = 'pending' AND next_attempt_at IS NOT NULL;
