package bench

import (
	"context"
	"fmt"
	"time"
)

// work starts the pool on the enqueued jobs and times it until it has
// completed all of them.
func (r *runner) work(ctx context.Context) (Rate, error) {
	total := int64(r.cfg.Jobs)
	stop := r.progress("work", r.cfg.Jobs, func() int { return int(r.pool.Stats().Succeeded) })
	defer stop()

	cpu := r.markCPU(ctx)
	began := time.Now()
	if err := r.pool.Start(ctx); err != nil {
		return Rate{}, err
	}
	// A 2ms tick keeps the watch's own cost small against the pool's while
	// bounding the error of the phase's end.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := int64(0), began
	var ends segmentEnds
	for {
		st := r.pool.Stats()
		now := time.Now()
		ends.see(st.Succeeded, total, now)
		if st.Succeeded >= total {
			break
		}
		if st.Succeeded != last {
			last, lastChange = st.Succeeded, now
		} else if now.Sub(lastChange) > Patience {
			return Rate{}, fmt.Errorf("%w for %s: %d of %d jobs completed (%+v)", errStalled, Patience, st.Succeeded, total, st)
		}
		select {
		case <-ctx.Done():
			return Rate{}, ctx.Err()
		case <-tick.C:
		}
	}
	end := time.Now()
	rt := rate(r.cfg.Jobs, end.Sub(began))
	rt.CPU = r.cpuSince(ctx, cpu, r.cfg.Jobs)
	rt.Segments = ends.segments(began, end)
	return rt, nil
}

// SegmentJobs is the size of the first and last segments of a work phase
// whose throughput Rate.Segments compares: a burn-down that slows as the
// tables grow or fill with dead rows shows it as a last segment slower
// than the first.
const SegmentJobs = 100_000

// Segments is the throughput of the first and the last SegmentJobs jobs of
// a work phase of at least twice as many.
type Segments struct {
	Jobs int `json:"jobs"`
	// First and Last are jobs/s over the first and the last Jobs jobs.
	First float64 `json:"first_jobs_per_second"`
	Last  float64 `json:"last_jobs_per_second"`
	// LastOverFirst is Last / First: 1 when the phase kept its pace.
	LastOverFirst float64 `json:"last_over_first"`
}

// segmentEnds notes, from the work watch's samples, when the first
// segment ended (the first sample at or past SegmentJobs) and when the last
// one began (the last sample at or before total-SegmentJobs).
type segmentEnds struct {
	firstEnd, lastBegin time.Time
}

func (s *segmentEnds) see(done, total int64, now time.Time) {
	if total < 2*SegmentJobs {
		return
	}
	if s.firstEnd.IsZero() && done >= SegmentJobs {
		s.firstEnd = now
	}
	if done <= total-SegmentJobs {
		s.lastBegin = now
	}
}

// segments is the phase's Segments, or nil for a phase too short.
func (s segmentEnds) segments(began, end time.Time) *Segments {
	if s.firstEnd.IsZero() || s.lastBegin.IsZero() || !s.firstEnd.After(began) || !end.After(s.lastBegin) {
		return nil
	}
	g := &Segments{Jobs: SegmentJobs,
		First: SegmentJobs / s.firstEnd.Sub(began).Seconds(),
		Last:  SegmentJobs / end.Sub(s.lastBegin).Seconds()}
	g.LastOverFirst = g.Last / g.First
	return g
}
