package doctor

import (
	"fmt"
	"time"
)

// Defaults of [Options].
const (
	DefaultTransactionAge  = 5 * time.Minute
	DefaultXminAge         = 10_000_000
	DefaultDeadTuples      = 100_000
	DefaultDeadRatio       = 0.2
	DefaultAutovacuumLag   = 30 * time.Minute
	DefaultWALBytes        = 256 << 20
	DefaultStarvedFrames   = 10_000
	DefaultPartitionsAhead = 1
)

// Options are the thresholds past which a check reports a finding. Zero
// fields take the defaults named on each.
type Options struct {
	// TransactionAge is how long a transaction holding a snapshot may stay
	// open. Defaults to 5 minutes.
	TransactionAge time.Duration
	// XminAge is how many transaction ids old a held xmin (of a session or
	// a replication slot in use) may be. Defaults to 10,000,000.
	XminAge int64
	// DeadTuples and DeadRatio: a table is bloated when it has more dead
	// tuples than DeadTuples and they are more than DeadRatio of its rows.
	// Default to 100,000 and 0.2.
	DeadTuples int64
	DeadRatio  float64
	// AutovacuumLag is how long a table may wait for autovacuum once it has
	// more dead tuples than its vacuum threshold. Defaults to 30 minutes.
	AutovacuumLag time.Duration
	// PartitionsAhead is how many partitions of job_events must exist
	// beyond the one that takes rows now. Defaults to 1.
	PartitionsAhead int
	// WALBytes is the size past which a SQLite WAL file is reported.
	// Defaults to 256 MiB.
	WALBytes int64
	// StarvedFrames is how many WAL frames a PASSIVE checkpoint may leave
	// behind (a reader holds them) before it is reported. Defaults to 10,000.
	StarvedFrames int64
	// Now is the time the PostgreSQL checks compare with (transaction ages,
	// partition bounds). Defaults to the database's clock.
	Now func() time.Time
}

// WithDefaults returns o with every unset field given its default.
func (o Options) WithDefaults() Options {
	if o.TransactionAge == 0 {
		o.TransactionAge = DefaultTransactionAge
	}
	if o.XminAge == 0 {
		o.XminAge = DefaultXminAge
	}
	if o.DeadTuples == 0 {
		o.DeadTuples = DefaultDeadTuples
	}
	if o.DeadRatio == 0 {
		o.DeadRatio = DefaultDeadRatio
	}
	if o.AutovacuumLag == 0 {
		o.AutovacuumLag = DefaultAutovacuumLag
	}
	if o.PartitionsAhead == 0 {
		o.PartitionsAhead = DefaultPartitionsAhead
	}
	if o.WALBytes == 0 {
		o.WALBytes = DefaultWALBytes
	}
	if o.StarvedFrames == 0 {
		o.StarvedFrames = DefaultStarvedFrames
	}
	return o
}

// Names of the checks.
const (
	CheckSchema           = "schema"
	CheckTransactions     = "transactions"
	CheckSlots            = "replication_slots"
	CheckDeadTuples       = "dead_tuples"
	CheckAutovacuum       = "autovacuum"
	CheckPartitions       = "partitions"
	CheckDefaultPartition = "default_partition"
	CheckCheckpoint       = "checkpoint"
	CheckWAL              = "wal_size"
)

// Report is what the checks found.
type Report struct {
	// Backend is "postgres" or "sqlite".
	Backend string `json:"backend"`
	// Database names what was checked: the schema, or the file.
	Database string `json:"database"`
	// Checks says what each check looked at, found or not.
	Checks []Check `json:"checks"`
	// Findings are the problems, each with what to do.
	Findings []Finding `json:"findings"`
}

// Check is one check's outcome.
type Check struct {
	Name string `json:"name"`
	// OK is false when the check made a finding.
	OK bool `json:"ok"`
	// Summary says what it saw, in one line.
	Summary string `json:"summary"`
}

// Finding is one problem.
type Finding struct {
	Check string `json:"check"`
	// Subject is what the problem is about: a table, a slot, a session.
	Subject string `json:"subject,omitempty"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
}

// Clean says nothing was found.
func (r *Report) Clean() bool { return len(r.Findings) == 0 }

// check records a check's outcome with the findings it made.
func (r *Report) check(name, summary string, findings ...Finding) {
	for i := range findings {
		findings[i].Check = name
	}
	r.Checks = append(r.Checks, Check{Name: name, OK: len(findings) == 0, Summary: summary})
	r.Findings = append(r.Findings, findings...)
}

// schemaVersion compares the schema's migrations with the binary's.
func (r *Report) schemaVersion(have, want int, migrated bool) {
	switch {
	case !migrated:
		r.check(CheckSchema, "no schema_migrations table", Finding{Subject: r.Database,
			Problem: "there is no stint schema here (no schema_migrations table)",
			Fix:     "check --db, --database-url and --schema; to create one, run `stint migrate`"})
	case have < want:
		r.check(CheckSchema, fmt.Sprintf("schema at migration %d, binary at %d", have, want), Finding{Subject: r.Database,
			Problem: fmt.Sprintf("the stint schema is at migration %d, older than this binary's %d", have, want),
			Fix:     "run `stint migrate` with this binary (it upgrades in place), then restart the workers"})
	case have > want:
		r.check(CheckSchema, fmt.Sprintf("schema at migration %d, binary at %d", have, want), Finding{Subject: r.Database,
			Problem: fmt.Sprintf("the stint schema is at migration %d, newer than this binary's %d", have, want),
			Fix:     "upgrade this stint binary to the release that migrated the schema"})
	default:
		r.check(CheckSchema, fmt.Sprintf("schema at migration %d, as this binary", have))
	}
}
