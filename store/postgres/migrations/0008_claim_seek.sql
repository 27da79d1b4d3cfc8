-- The claim seeks to its low-water mark (see lowwater.go) with one row
-- comparison, (-priority, created_at, id) >= (mark), which a btree can only
-- seek on when every column of it sorts the same way: the claim order
-- "priority DESC, created_at, id" is "-priority, created_at, id" ascending.
-- Priorities lie within -1000..1000, so -priority never overflows.
DROP INDEX jobs_claim_idx;
CREATE INDEX jobs_claim_idx ON jobs (queue, (-priority), created_at, id)
    WHERE state = 'queued';
