package sqlite

// The SQL the driver runs, one named statement each. Lists are passed as
// JSON arrays and expanded with json_each.
const (
	qCreateMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))`
	qListMigrations  = `SELECT version FROM schema_migrations`
	qInsertMigration = `INSERT INTO schema_migrations (version, name) VALUES (?, ?)`
	qHasMigrations   = `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`

	// qJobInsertHead and qEventInsertHead take VALUES for one or more rows
	// (see insertQuery).
	qJobInsertHead = `INSERT INTO jobs (` + jobColumns + `)`
	qJobGet        = `SELECT ` + jobColumns + ` FROM jobs WHERE id IN (SELECT value FROM json_each(?))`
	qJobGetOne     = `SELECT ` + jobColumns + ` FROM jobs WHERE id = ?`
	qJobByDedupe   = `SELECT ` + jobColumns + ` FROM jobs WHERE tenant = ? AND dedupe_key = ?
    AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied') LIMIT 1`
	// qJobClaimable reads one queue's claim index in claim order; a claim
	// over several queues runs it per queue and merges (an IN list over
	// queues would make SQLite sort every queued job).
	qJobClaimable = `SELECT ` + jobColumns + ` FROM jobs
    WHERE state = 'queued' AND queue = ?1
      AND (json_array_length(?2) = 0 OR kind IN (SELECT value FROM json_each(?2)))
      AND (json_array_length(?4) = 0 OR EXISTS (SELECT 1 FROM json_each(?4) p WHERE stint_topic_match(p.value, topic)))
    ORDER BY priority DESC, created_at, id LIMIT ?3`
	qJobList = `SELECT ` + jobColumns + ` FROM jobs
    WHERE (json_array_length(?1) = 0 OR state IN (SELECT value FROM json_each(?1)))
      AND (?2 = '' OR queue = ?2) AND (?3 = '' OR kind = ?3) AND id > ?4
    ORDER BY id LIMIT ?5`

	qDuePromote = `SELECT ` + jobColumns + ` FROM jobs WHERE state IN ('scheduled', 'retrying') AND run_at <= ?
    ORDER BY run_at, id LIMIT ?`
	qDueLease = `SELECT ` + jobColumns + ` FROM jobs WHERE state IN ('claimed', 'running', 'cancel_requested')
    AND lease_expires_at <= ? ORDER BY lease_expires_at, id LIMIT ?`
	qDueStalled = `SELECT ` + jobColumns + ` FROM jobs WHERE state = 'stalled' AND ? IS NOT NULL ORDER BY id LIMIT ?`
	qDueCancel  = `SELECT ` + jobColumns + ` FROM jobs WHERE state = 'cancel_requested' AND cancel_deadline <= ?
    ORDER BY cancel_deadline, id LIMIT ?`
	qDueTimeout = `SELECT ` + jobColumns + ` FROM jobs WHERE state = 'running' AND timeout_at IS NOT NULL
    AND timeout_at <= ? ORDER BY timeout_at, id LIMIT ?`
	qDueDeadline = `SELECT ` + jobColumns + ` FROM jobs WHERE deadline IS NOT NULL AND deadline <= ?
    AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'halted', 'dead_lettered', 'denied')
    ORDER BY deadline, id LIMIT ?`

	qEventInsertHead    = `INSERT INTO job_events (` + eventColumns + `)`
	qEventJobsByRequest = `SELECT DISTINCT job_id FROM job_events WHERE request_id = ? AND request_id <> '' AND type = ?`
	qEventByRequest     = eventSelect + ` WHERE e.request_id = ? AND e.request_id <> '' AND e.job_id = ? ORDER BY e.id LIMIT 1`
	qEventList          = eventSelect + ` WHERE e.job_id IN (SELECT value FROM json_each(?)) ORDER BY e.job_id, e.rev`
)

const (
	qLeaderElect = `INSERT INTO leaders (name, leader_id, term, expires_at) VALUES (?1, ?2, 1, ?4)
    ON CONFLICT (name) DO UPDATE SET
        term = CASE WHEN leaders.leader_id = excluded.leader_id THEN leaders.term ELSE leaders.term + 1 END,
        leader_id = excluded.leader_id, expires_at = excluded.expires_at
    WHERE leaders.leader_id = excluded.leader_id OR leaders.expires_at <= ?3
    RETURNING term`
	qLeaderResign = `UPDATE leaders SET expires_at = 0 WHERE name = ? AND leader_id = ?`

	qFinishedSelect = `SELECT id FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ? ORDER BY finished_at LIMIT ?`
	qDeleteEvents   = `DELETE FROM job_events WHERE job_id IN (SELECT value FROM json_each(?))`
	qDeleteJobs     = `DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?))`
	qPruneHeartbeat = `DELETE FROM job_events WHERE id IN (
    SELECT id FROM job_events WHERE type = 'heartbeat' AND at < ? ORDER BY id LIMIT ?)`
)
