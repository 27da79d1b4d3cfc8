package bench

import (
	"context"
	"time"
)

// CPU is what one phase cost in CPU time per job, on each side of the wire.
// Wall-clock rates vary with whatever else runs on the machine; CPU per job
// varies much less, so it is the figure to compare between builds.
type CPU struct {
	// ClientUSPerJob is this process's CPU (user + system, every thread:
	// producers, pool, driver, and on SQLite the database engine) per job.
	ClientUSPerJob float64 `json:"client_us_per_job"`
	// BackendsUSPerJob is the CPU of the PostgreSQL backends serving this
	// process's connections per job; 0 when not measured (SQLite, or a
	// server on another machine).
	BackendsUSPerJob float64 `json:"backends_us_per_job,omitempty"`
	// ClusterUSPerJob is the CPU of the whole PostgreSQL cluster (postmaster,
	// every backend and background process, whoever they serve) per job: what
	// ../shared/bench/compare.sh counts. 0 when not measured.
	ClusterUSPerJob float64 `json:"cluster_us_per_job,omitempty"`
}

// ServerCPU reads the cumulative CPU time of a database server on this
// machine: of the backends serving the benchmark's connections, and of the
// whole cluster. ok is false when it cannot be read (nothing is reported).
type ServerCPU interface {
	ServerCPU(ctx context.Context) (backends, cluster time.Duration, ok bool)
}

// cpuMark is the CPU used so far, on both sides, at the start of a phase.
type cpuMark struct {
	self              time.Duration
	backends, cluster time.Duration
	server            bool
}

// markCPU reads the CPU used so far. The probe's own cost (one query, a
// few /proc reads) is a fixed few milliseconds per phase.
func (r *runner) markCPU(ctx context.Context) cpuMark {
	m := cpuMark{self: processCPU()}
	if r.cfg.ServerCPU != nil {
		m.backends, m.cluster, m.server = r.cfg.ServerCPU.ServerCPU(ctx)
	}
	return m
}

// since is the CPU per job of n jobs since m.
func (r *runner) cpuSince(ctx context.Context, m cpuMark, n int) *CPU {
	end := r.markCPU(ctx)
	if n <= 0 || end.self == 0 {
		return nil
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	c := &CPU{ClientUSPerJob: per(end.self - m.self)}
	if m.server && end.server {
		c.BackendsUSPerJob, c.ClusterUSPerJob = per(end.backends-m.backends), per(end.cluster-m.cluster)
	}
	return c
}
