package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/stint-dev/stint"
)

// EmbeddedReport is the embedded pool's phase of a remote benchmark: the
// same jobs, enqueued the same way through the server's API, worked by one
// pool in this process straight on the database.
type EmbeddedReport struct {
	Handlers    int     `json:"handlers"`
	EnqueueRate float64 `json:"enqueue_per_second"`
	WorkedRate  float64 `json:"worked_per_second"`
	Seconds     float64 `json:"seconds"`
	P50MS       float64 `json:"end_to_end_p50_ms"`
	P99MS       float64 `json:"end_to_end_p99_ms"`
	// ClientCPUPerJobUS is this process's CPU (the pool and the producer);
	// DatabaseCPUPerJobUS the pool's own PostgreSQL backends' CPU;
	// ServerCPUPerJobUS and ServerDatabaseCPUPerJobUS the server's and its
	// backends' (the enqueues only).
	ClientCPUPerJobUS         float64 `json:"client_cpu_per_job_us"`
	DatabaseCPUPerJobUS       float64 `json:"database_cpu_per_job_us,omitempty"`
	ServerCPUPerJobUS         float64 `json:"server_cpu_per_job_us,omitempty"`
	ServerDatabaseCPUPerJobUS float64 `json:"server_database_cpu_per_job_us,omitempty"`
	// RemoteShare is the remote pools' worked jobs/s over this phase's
	// (set once both ran).
	RemoteShare float64  `json:"remote_share,omitempty"`
	Runs        int      `json:"runs"`
	ExactlyOnce bool     `json:"exactly_once"`
	Problems    []string `json:"problems,omitempty"`
}

// embedded runs the embedded phase: one pool of Pools × Slots handlers on
// a store of its own straight on the database, before the remote pools
// start (its queue is its own, so the phases never share a job).
func (r *remoteRun) embedded(ctx context.Context) (EmbeddedReport, error) {
	handlers := r.cfg.Pools * r.cfg.Slots
	rep := EmbeddedReport{Handlers: handlers}
	st, err := r.cfg.Embedded(ctx)
	if err != nil {
		return rep, err
	}
	defer st.Close()
	mux := stint.NewMux()
	mux.HandleFunc(remoteKind, r.handle)
	p, err := stint.NewPool(st, mux, stint.Config{Queues: map[string]int{embeddedQueue: handlers}, WorkerID: "bench-embedded",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return rep, err
	}
	if err := p.Start(ctx); err != nil {
		return rep, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = p.Stop(sctx)
	}()
	ph := r.begin(embeddedQueue)
	cpu := func() (c [4]time.Duration, err error) {
		if c[0], err = ProcCPU(os.Getpid()); err != nil {
			return c, err
		}
		if c[1], c[2], err = r.cpu(); err != nil {
			return c, err
		}
		if r.cfg.EmbeddedDatabaseCPU != nil {
			c[3], err = r.cfg.EmbeddedDatabaseCPU()
		}
		return c, err
	}
	before, err := cpu()
	if err != nil {
		return rep, err
	}
	start := time.Now()
	if rep.EnqueueRate, err = r.load(ctx, ph); err != nil {
		return rep, fmt.Errorf("embedded phase: %w", err)
	}
	rep.Seconds = time.Since(start).Seconds()
	after, err := cpu()
	if err != nil {
		return rep, err
	}
	perJob := func(i int) float64 { return float64((after[i] - before[i]).Microseconds()) / float64(r.cfg.Jobs) }
	rep.WorkedRate = float64(r.cfg.Jobs) / rep.Seconds
	rep.ClientCPUPerJobUS = perJob(0)
	rep.ServerCPUPerJobUS, rep.ServerDatabaseCPUPerJobUS, rep.DatabaseCPUPerJobUS = perJob(1), perJob(2), perJob(3)
	rep.P50MS, rep.P99MS = ph.latency()
	rep.Runs, rep.ExactlyOnce, rep.Problems = ph.check()
	return rep, nil
}
