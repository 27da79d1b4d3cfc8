-- Rate limits hold over any interval (issue 21): a queue's (or kind's) rate
-- limit keeps a log of the starts of the last interval, "unixmicro:n,..."
-- (store.RateLog), instead of a fixed window and its count, which let up to
-- twice the limit through across a window's boundary. The old window's
-- count is dropped: the first claims after the upgrade see an empty log.
ALTER TABLE queues ADD COLUMN rate_log TEXT NOT NULL DEFAULT '';
ALTER TABLE queues DROP COLUMN rate_window;
ALTER TABLE queues DROP COLUMN rate_count;
