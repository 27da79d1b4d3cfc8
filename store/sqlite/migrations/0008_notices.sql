-- Notices for other processes on the same file (see listen.go): one row per
-- queue that gained claimable jobs (kind 'q') and per job whose lease changed
-- under its owner (kind 'j'), written in the transaction that caused it.
-- Listeners read the rows past the last id they saw. AUTOINCREMENT because
-- trimming can empty the table, and a plain rowid would then start over
-- below the ids listeners have already seen.
CREATE TABLE notices (
    id   INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    at   INTEGER NOT NULL
);
