-- Leader election: one row per seat. A seat changes hands only when free or
-- expired; term rises each time it does.
CREATE TABLE leaders (
    name       TEXT PRIMARY KEY,
    leader_id  TEXT NOT NULL,
    term       INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
