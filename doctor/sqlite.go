package doctor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/stint-dev/stint/store/sqlite"
)

// SQLite checks the stint database in the file at path, which must exist.
// SQLite shows no list of readers: a long reader shows as a checkpoint that
// cannot finish, and as a WAL file that grows.
func SQLite(ctx context.Context, path string, opts Options) (Report, error) {
	opts = opts.WithDefaults()
	rep := Report{Backend: "sqlite", Database: path}
	if _, err := os.Stat(path); err != nil {
		return rep, fmt.Errorf("doctor: %w", err)
	}
	// mode=rw: never create a file, and never migrate one.
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=rw&_pragma=busy_timeout(5000)")
	if err != nil {
		return rep, fmt.Errorf("doctor: open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := liteSchema(ctx, db, &rep); err != nil {
		return rep, fmt.Errorf("doctor: check %s: %w", CheckSchema, err)
	}
	if err := liteCheckpoint(ctx, db, &rep, opts); err != nil {
		return rep, fmt.Errorf("doctor: check %s: %w", CheckCheckpoint, err)
	}
	if err := liteWAL(path, &rep, opts); err != nil {
		return rep, fmt.Errorf("doctor: check %s: %w", CheckWAL, err)
	}
	return rep, nil
}

func liteSchema(ctx context.Context, db *sql.DB, rep *Report) error {
	ms, err := sqlite.Migrations()
	if err != nil {
		return err
	}
	want := 0
	if len(ms) > 0 {
		want = ms[len(ms)-1].Version
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		rep.schemaVersion(0, want, false)
		return nil
	}
	var have int
	if err := db.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&have); err != nil {
		return err
	}
	rep.schemaVersion(have, want, true)
	return nil
}

// liteCheckpoint runs a PASSIVE checkpoint: it copies to the database what
// no reader still needs and reports how much of the WAL it could not.
func liteCheckpoint(ctx context.Context, db *sql.DB, rep *Report, opts Options) error {
	var busy, frames, done int64
	if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &done); err != nil {
		return err
	}
	if frames < 0 {
		rep.check(CheckCheckpoint, "the database is not in WAL mode: nothing to check", Finding{Subject: rep.Database,
			Problem: "the database is not in WAL mode: readers block the writer and the writer blocks readers",
			Fix:     "open it with stint, which sets journal_mode=WAL, or run PRAGMA journal_mode=WAL once"})
		return nil
	}
	left := frames - done
	summary := fmt.Sprintf("a PASSIVE checkpoint copied %d of %d WAL frames", done, frames)
	if left < opts.StarvedFrames {
		rep.check(CheckCheckpoint, summary)
		return nil
	}
	rep.check(CheckCheckpoint, summary, Finding{Subject: rep.Database,
		Problem: fmt.Sprintf("checkpoints are starved: %d WAL frames cannot be copied into the database because a reader still needs them; "+
			"while it reads, the WAL file grows without bound and every read gets slower", left),
		Fix: "find the long reader and end it: a read transaction left open (a sqlite3 shell, a backup that copies page by page, " +
			"an analytics query, a process that began a transaction and waits); back up with VACUUM INTO or the backup API instead"})
	return nil
}

func liteWAL(path string, rep *Report, opts Options) error {
	fi, err := os.Stat(path + "-wal")
	if errors.Is(err, fs.ErrNotExist) {
		rep.check(CheckWAL, "no WAL file")
		return nil
	}
	if err != nil {
		return err
	}
	summary := fmt.Sprintf("WAL file %s, modified %s", mib(fi.Size()), fi.ModTime().UTC().Format(time.RFC3339))
	if fi.Size() < opts.WALBytes {
		rep.check(CheckWAL, summary)
		return nil
	}
	rep.check(CheckWAL, summary, Finding{Subject: path + "-wal",
		Problem: fmt.Sprintf("the WAL file is %s, past %s: a long reader starves checkpoints, or did and the WAL has not been reset since "+
			"(stint's journal_size_limit shrinks it to 64 MiB when a checkpoint completes and the next write starts the WAL over)",
			mib(fi.Size()), mib(opts.WALBytes)),
		Fix: "end any long reader (see the checkpoint check); the next completed checkpoint shrinks the file, " +
			"or PRAGMA wal_checkpoint(TRUNCATE) empties it at once"})
	return nil
}
