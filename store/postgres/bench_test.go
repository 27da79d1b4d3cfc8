package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

// Batch sizes of the benchmarks: the hot path's enqueue-many, claim-N and
// complete-many.
const (
	benchEnqueueBatch  = 1000
	benchClaimBatch    = 100
	benchCompleteBatch = 100
	// benchRefill is how many jobs a benchmark enqueues, off the clock,
	// whenever it runs out.
	benchRefill = 10000
)

func BenchmarkEnqueueMany(b *testing.B) {
	s, _ := newStore(b, postgres.Options{})
	ctx := context.Background()
	batch := specs(benchEnqueueBatch, "bench")
	n := 0
	for b.Loop() {
		n++
		if _, err := s.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: batch}); err != nil {
			b.Fatal(err)
		}
	}
	reportJobsPerSec(b, n*benchEnqueueBatch)
}

func BenchmarkClaimN(b *testing.B) {
	s, _ := newStore(b, postgres.Options{})
	ctx := context.Background()
	left, n := 0, 0
	for b.Loop() {
		n++
		if left < benchClaimBatch {
			b.StopTimer()
			fill(b, s, benchRefill)
			left += benchRefill
			b.StartTimer()
		}
		jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "bench", Queues: []string{"bench"}, Limit: benchClaimBatch, LeaseTTL: time.Hour, Start: true})
		if err != nil || len(jobs) != benchClaimBatch {
			b.Fatalf("claim: %v, %d jobs", err, len(jobs))
		}
		left -= len(jobs)
	}
	reportJobsPerSec(b, n*benchClaimBatch)
}

func BenchmarkCompleteMany(b *testing.B) {
	s, _ := newStore(b, postgres.Options{})
	ctx := context.Background()
	var claimed []store.Job
	n := 0
	for b.Loop() {
		n++
		if len(claimed) < benchCompleteBatch {
			b.StopTimer()
			fill(b, s, benchRefill)
			for len(claimed) < benchRefill {
				jobs, err := s.JobClaim(ctx, &store.JobClaimParams{WorkerID: "bench", Queues: []string{"bench"}, Limit: 1000, LeaseTTL: time.Hour, Start: true})
				if err != nil {
					b.Fatal(err)
				}
				claimed = append(claimed, jobs...)
			}
			b.StartTimer()
		}
		done := make([]store.JobCompleteParams, benchCompleteBatch)
		for i, j := range claimed[:benchCompleteBatch] {
			done[i] = store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}, Result: json.RawMessage(`true`)}
		}
		claimed = claimed[benchCompleteBatch:]
		res, err := s.JobComplete(ctx, done)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	reportJobsPerSec(b, n*benchCompleteBatch)
}

// fill enqueues n jobs in queue "bench".
func fill(b *testing.B, s store.Store, n int) {
	for range n / benchEnqueueBatch {
		enqueue(b, s, benchEnqueueBatch, "bench")
	}
}

// reportJobsPerSec reports jobs handled per second of timed work.
func reportJobsPerSec(b *testing.B, jobs int) {
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(jobs)/sec, "jobs/s")
	}
}
