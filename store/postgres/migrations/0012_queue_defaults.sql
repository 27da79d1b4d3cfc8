-- Job defaults of a queue (or of a kind, on its @kind: row): max attempts,
-- timeout and priority for the jobs enqueued without their own, applied by
-- every enqueue (store.SpecDefaults, JSON; '' when none). Issue 21.
ALTER TABLE queues ADD COLUMN IF NOT EXISTS defaults text NOT NULL DEFAULT '';
