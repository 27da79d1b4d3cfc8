package postgres

import (
	"fmt"
	"log/slog"
	"regexp"

	"github.com/jackc/pgx/v5"
	"time"
)

// DefaultSchema is the schema stint uses when Options.Schema is empty.
const DefaultSchema = "stint"

// maxSchemaLen keeps the notification channel ("stint_" + schema) within
// PostgreSQL's 63-byte identifier limit.
const maxSchemaLen = 63 - len(channelPrefix)

// schemaName is what a schema name may look like: an unquoted SQL identifier
// in lower case, so it means the same quoted or not.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Options configure a Driver.
type Options struct {
	// Schema holds stint's tables. Several installations (or tests) can
	// share one database under different schemas. It is created when
	// missing. Lower-case letters, digits and underscores, at most 57
	// characters. Defaults to "stint".
	Schema string
	// MaxConns caps the connection pool. Defaults to the URL's
	// pool_max_conns, or else pgxpool's default (the greater of 4 and the
	// number of CPUs).
	MaxConns int32
	// DisableNotify turns LISTEN/NOTIFY off (for example behind a
	// transaction-pooling proxy, which cannot LISTEN); claimers then learn
	// of new work by polling alone. Defaults to false.
	DisableNotify bool
	// Logger receives reconnects and retried transactions. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// NoMigrate opens an existing schema without creating or migrating it:
	// Open fails with store.ErrSchemaMissing or store.ErrSchemaOutdated
	// (wrapped, naming `stint migrate`) and creates nothing. Commands that
	// only read or act on jobs set it. Defaults to false.
	NoMigrate bool
	// EventPartition is the time range of one partition of the event
	// history (job_events); retention drops history a partition at a time,
	// so history past retention lingers up to one partition's width. From
	// one hour to 30 days. Defaults to 24 hours (DefaultEventPartition).
	EventPartition time.Duration
	// DisableAnalyze stops the driver from analyzing its own tables when
	// their statistics go stale (see analyze.go: plans made while the jobs
	// table was small would otherwise scan it whole until the next
	// ANALYZE, which never comes with autovacuum off). Set it when you
	// manage statistics yourself. Defaults to false.
	DisableAnalyze bool

	// tracer, set by tests, sees every statement and batch sent.
	tracer tracer
	// noProbeLoop, set by tests, leaves the low-water probe to them.
	noProbeLoop bool
	// onListen, set by tests, hears "listen" when the listener has
	// connected and each notification's payload once handled.
	onListen func(event string)
}

// tracer is what tests hook into a driver's connections to count round trips.
type tracer interface {
	pgx.QueryTracer
	pgx.BatchTracer
}

// DefaultEventPartition is the default width of an event partition: one
// day keeps a year of history in 365 partitions, few enough for the
// planner, and lets retention of a few days work in whole days.
const DefaultEventPartition = 24 * time.Hour

// WithDefaults returns o with every unset field given its default.
func (o Options) WithDefaults() Options {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.EventPartition == 0 {
		o.EventPartition = DefaultEventPartition
	}
	return o
}

func (o Options) validate() error {
	switch {
	case len(o.Schema) > maxSchemaLen:
		return fmt.Errorf("postgres: schema name %q is %d characters long: use at most %d", o.Schema, len(o.Schema), maxSchemaLen)
	case !schemaName.MatchString(o.Schema):
		return fmt.Errorf("postgres: schema name %q: use lower-case letters, digits and underscores, not starting with a digit", o.Schema)
	case o.EventPartition < time.Hour || o.EventPartition > 30*24*time.Hour:
		return fmt.Errorf("postgres: EventPartition is %v: use from 1h to 720h (30 days), or 0 for the default of 24h", o.EventPartition)
	case o.MaxConns < 0:
		return fmt.Errorf("postgres: MaxConns is %d: use a positive number, or 0 for the default", o.MaxConns)
	}
	return nil
}

// channel is the notification channel of the schema's installation.
func (o Options) channel() string { return channelPrefix + o.Schema }
