package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// History defaults.
const (
	DefaultHistoryJobs      = 10_000_000
	DefaultHistoryPerHour   = 2_000_000
	DefaultHistoryRetention = time.Hour
	DefaultHistoryBatch     = 1000
	DefaultHistoryWorkers   = 4
	// DefaultHistoryMaintain is the simulated time between maintenance
	// passes (EnsurePartitions and JobRetain), as the retention service's
	// default interval of a minute.
	DefaultHistoryMaintain = time.Minute
)

// HistoryConfig configures [RunHistory].
type HistoryConfig struct {
	// Jobs is how many jobs the run enqueues, claims, starts and completes.
	Jobs int
	// PerHour is how many jobs a simulated hour holds: the simulated clock
	// moves 1h/PerHour per job.
	PerHour int
	// Retention is how long a finished job is kept (the retention
	// service's Retention).
	Retention time.Duration
	// Partition is the width of a history partition: the store's
	// postgres.Options.EventPartition. It only sizes the report's bound.
	Partition time.Duration
	// Batch is the jobs of one enqueue (COPY from 200 up), one claim and
	// one completion call.
	Batch int
	// Workers run batches at once, each in a queue of its own.
	Workers int
	// Maintain is the simulated time between maintenance passes.
	Maintain time.Duration
	// Start is the simulated time of the first job. Defaults to now,
	// truncated to Partition.
	Start time.Time
	// Observe, when set, receives each simulated hour's figures as they
	// are taken.
	Observe func(HistoryPoint)
}

func (c HistoryConfig) withDefaults() HistoryConfig {
	if c.Jobs == 0 {
		c.Jobs = DefaultHistoryJobs
	}
	if c.PerHour == 0 {
		c.PerHour = DefaultHistoryPerHour
	}
	if c.Retention == 0 {
		c.Retention = DefaultHistoryRetention
	}
	if c.Partition == 0 {
		c.Partition = time.Hour
	}
	if c.Batch == 0 {
		c.Batch = DefaultHistoryBatch
	}
	if c.Workers == 0 {
		c.Workers = DefaultHistoryWorkers
	}
	if c.Maintain == 0 {
		c.Maintain = DefaultHistoryMaintain
	}
	if c.Start.IsZero() {
		c.Start = time.Now().UTC().Truncate(c.Partition)
	}
	return c
}

func (c HistoryConfig) validate() error {
	switch {
	case c.Jobs < 1:
		return fmt.Errorf("bench history: %d jobs: run at least 1", c.Jobs)
	case c.PerHour < 1:
		return fmt.Errorf("bench history: %d jobs per hour: use at least 1", c.PerHour)
	case c.Retention <= 0:
		return fmt.Errorf("bench history: retention %s: use a positive duration", c.Retention)
	case c.Batch < 1 || c.Batch > store.MaxBatch:
		return fmt.Errorf("bench history: batch %d: use 1 to %d", c.Batch, store.MaxBatch)
	case c.Workers < 1:
		return fmt.Errorf("bench history: %d workers: use at least 1", c.Workers)
	case c.Maintain <= 0:
		return fmt.Errorf("bench history: maintenance interval %s: use a positive duration", c.Maintain)
	}
	return nil
}

// HistoryTable is one table's size at a point of the run: live rows (an
// exact count), bytes on disk with indexes and TOAST (all partitions of a
// partitioned table), and partitions (0 for a plain table).
type HistoryTable struct {
	Rows       int64 `json:"rows"`
	Bytes      int64 `json:"bytes"`
	Partitions int   `json:"partitions"`
}

// HistoryPoint is the state of the database at one simulated time.
type HistoryPoint struct {
	// Hour is the simulated hours since the start.
	Hour float64 `json:"hour"`
	// At is the simulated time.
	At time.Time `json:"at"`
	// JobsDone is the jobs completed so far.
	JobsDone int `json:"jobs_done"`
	// Elapsed is the wall time since the start of the run.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Tables are job_events, jobs, outbox and run_events.
	Tables map[string]HistoryTable `json:"tables"`
}

// HistoryReport is the outcome of a run.
type HistoryReport struct {
	Jobs      int           `json:"jobs"`
	PerHour   int           `json:"per_hour"`
	Retention time.Duration `json:"retention_ns"`
	Partition time.Duration `json:"partition_ns"`
	Maintain  time.Duration `json:"maintain_ns"`
	// Points are the figures at each simulated hour and at the end.
	Points []HistoryPoint `json:"points"`
	// EventsPerJob is the events one job writes (enqueued, claimed,
	// started, succeeded).
	EventsPerJob float64 `json:"events_per_job"`
	// PartitionWorth is one partition's worth of jobs: PerHour × Partition.
	PartitionWorth float64 `json:"partition_worth_jobs"`
	// HistoryJobs is the jobs whose events job_events holds at the end.
	HistoryJobs float64 `json:"history_jobs"`
	// Ratio is HistoryJobs / PartitionWorth: the target is about 2.
	Ratio float64 `json:"ratio"`
	// PeakRatio is the largest ratio seen at any point.
	PeakRatio float64 `json:"peak_ratio"`
	// Wall is the run's wall time; JobsPerSecond its pace.
	Wall          time.Duration `json:"wall_ns"`
	JobsPerSecond float64       `json:"jobs_per_second"`
}

// MarshalJSON writes the durations also as text.
func (r HistoryReport) MarshalJSON() ([]byte, error) {
	type plain HistoryReport
	return json.Marshal(struct {
		plain
		RetentionText string `json:"retention"`
		PartitionText string `json:"partition"`
		WallText      string `json:"wall"`
	}{plain(r), r.Retention.String(), r.Partition.String(), r.Wall.Round(time.Second).String()})
}

// historyTables are the tables a history run reports on.
var historyTables = []string{"job_events", "jobs", "outbox", "run_events"}

// RunHistory drives the store s directly with a simulated clock, as the
// maintenance services would see hours of steady work: cfg.Jobs jobs, each
// enqueued, claimed with start and completed at once, cfg.PerHour of them
// per simulated hour, with a maintenance pass (EnsurePartitions and
// JobRetain with cfg.Retention) every cfg.Maintain of simulated time. It
// reads the sizes of the history tables through its own connection to url,
// in schema, at every simulated hour and at the end. Nothing in it measures
// speed: it shows how large history grows.
func RunHistory(ctx context.Context, s store.Store, url, schema string, cfg HistoryConfig) (HistoryReport, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return HistoryReport{}, err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return HistoryReport{}, fmt.Errorf("bench history: connect to read sizes: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rep := HistoryReport{Jobs: cfg.Jobs, PerHour: cfg.PerHour, Retention: cfg.Retention, Partition: cfg.Partition, Maintain: cfg.Maintain,
		PartitionWorth: float64(cfg.PerHour) * cfg.Partition.Hours()}
	perJob := time.Hour / time.Duration(cfg.PerHour)
	began := time.Now()
	point := func(at time.Time, done int) error {
		p, err := historyPoint(ctx, conn, schema)
		if err != nil {
			return err
		}
		p.Hour, p.At, p.JobsDone, p.Elapsed = at.Sub(cfg.Start).Hours(), at, done, time.Since(began)
		rep.Points = append(rep.Points, p)
		if cfg.Observe != nil {
			cfg.Observe(p)
		}
		return nil
	}
	maintain := func(at time.Time) error {
		if err := store.EnsurePartitions(ctx, s, &at); err != nil {
			return fmt.Errorf("bench history: make partitions at %v: %w", at, err)
		}
		p := store.RetainParams{FinishedBefore: at.Add(-cfg.Retention), Limit: store.MaxBatch}
		for {
			res, err := s.JobRetain(ctx, &p)
			if err != nil {
				return fmt.Errorf("bench history: retention at %v: %w", at, err)
			}
			if res.Jobs < p.Limit && res.Runs < p.Limit {
				return nil
			}
		}
	}

	if err := maintain(cfg.Start); err != nil {
		return rep, err
	}
	nextMaintain, nextHour := cfg.Start.Add(cfg.Maintain), cfg.Start.Add(time.Hour)
	done := 0
	for done < cfg.Jobs {
		// A round: each worker takes a batch, at consecutive simulated
		// times, in a queue of its own.
		var wg sync.WaitGroup
		errs := make([]error, cfg.Workers)
		n := 0
		for w := 0; w < cfg.Workers && done+n < cfg.Jobs; w++ {
			size := min(cfg.Batch, cfg.Jobs-done-n)
			at := cfg.Start.Add(time.Duration(done+n) * perJob)
			end := at.Add(time.Duration(size) * perJob)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[w] = historyBatch(ctx, s, fmt.Sprintf("history-%d", w), size, at, end)
			}()
			n += size
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return rep, err
		}
		done += n
		now := cfg.Start.Add(time.Duration(done) * perJob)
		if !now.Before(nextMaintain) {
			if err := maintain(now); err != nil {
				return rep, err
			}
			for !now.Before(nextMaintain) {
				nextMaintain = nextMaintain.Add(cfg.Maintain)
			}
		}
		if !now.Before(nextHour) {
			if err := point(now, done); err != nil {
				return rep, err
			}
			for !now.Before(nextHour) {
				nextHour = nextHour.Add(time.Hour)
			}
		}
	}
	end := cfg.Start.Add(time.Duration(done) * perJob)
	if err := maintain(end); err != nil {
		return rep, err
	}
	if n := len(rep.Points); n > 0 && rep.Points[n-1].At.Equal(end) {
		rep.Points = rep.Points[:n-1] // taken again, after the last pass
	}
	if err := point(end, done); err != nil {
		return rep, err
	}
	rep.Wall = time.Since(began)
	rep.JobsPerSecond = float64(done) / rep.Wall.Seconds()
	rep.EventsPerJob = historyEventsPerJob
	for _, p := range rep.Points {
		r := float64(p.Tables["job_events"].Rows) / rep.EventsPerJob / rep.PartitionWorth
		rep.PeakRatio = max(rep.PeakRatio, r)
	}
	last := rep.Points[len(rep.Points)-1]
	rep.HistoryJobs = float64(last.Tables["job_events"].Rows) / rep.EventsPerJob
	rep.Ratio = rep.HistoryJobs / rep.PartitionWorth
	return rep, nil
}

// historyEventsPerJob is the events of a job enqueued, claimed with start
// and completed: enqueued, claimed, started, succeeded.
const historyEventsPerJob = 4

// historyBatch enqueues size jobs in queue at at, claims and starts them at
// at, and completes them at end.
func historyBatch(ctx context.Context, s store.Store, queue string, size int, at, end time.Time) error {
	specs := make([]lifecycle.Spec, size)
	for i := range specs {
		specs[i] = lifecycle.Spec{Kind: "history", Queue: queue}
	}
	if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs, Now: &at}); err != nil {
		return fmt.Errorf("bench history: enqueue %d jobs: %w", size, err)
	}
	claimed := 0
	for claimed < size {
		jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "history-" + queue, Queues: []string{queue},
			Limit: size - claimed, LeaseTTL: time.Hour, Start: true, Now: &at})
		if err != nil {
			return fmt.Errorf("bench history: claim: %w", err)
		}
		if len(jobs) == 0 {
			return fmt.Errorf("bench history: claimed %d of the %d jobs just enqueued in %s, and no more come", claimed, size, queue)
		}
		claimed += len(jobs)
		ps := make([]store.JobCompleteParams, len(jobs))
		for i, j := range jobs {
			ps[i] = store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID, Now: &end}}
		}
		res, err := s.JobComplete(ctx, ps)
		if err != nil {
			return fmt.Errorf("bench history: complete: %w", err)
		}
		for _, r := range res {
			if r.Err != nil {
				return fmt.Errorf("bench history: complete: %w", r.Err)
			}
		}
	}
	return nil
}

// historyPoint reads the tables' rows, bytes and partitions in schema.
func historyPoint(ctx context.Context, conn *pgx.Conn, schema string) (HistoryPoint, error) {
	p := HistoryPoint{Tables: map[string]HistoryTable{}}
	for _, name := range historyTables {
		id := pgx.Identifier{schema, name}.Sanitize()
		var t HistoryTable
		err := conn.QueryRow(ctx, `
SELECT (SELECT count(*) FROM `+id+`),
       coalesce((SELECT sum(pg_total_relation_size(i.inhrelid)) FROM pg_inherits i WHERE i.inhparent = $1::regclass),
                pg_total_relation_size($1::regclass)),
       (SELECT count(*) FROM pg_inherits i WHERE i.inhparent = $1::regclass)`, id).Scan(&t.Rows, &t.Bytes, &t.Partitions)
		if err != nil {
			return p, fmt.Errorf("bench history: size of %s: %w", name, err)
		}
		p.Tables[name] = t
	}
	return p, nil
}
