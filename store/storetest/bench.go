package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// Batch sizes of the hot-path benchmarks.
const (
	benchEnqueueBatch  = 1000
	benchClaimBatch    = 100
	benchCompleteBatch = 100
	// benchRefill is how many jobs a benchmark enqueues, off the clock,
	// whenever it runs out.
	benchRefill = 10000
)

// Bench runs the hot-path benchmarks against a backend, each on a fresh
// store from newStore: EnqueueMany (1000 per call), ClaimN (100 per call,
// claimed and started) and CompleteMany (100 per call, each with the record
// its claim returned, as a pool completes). Each reports jobs/s,
// so backends and changes can be compared with benchstat.
func Bench(b *testing.B, newStore func(b *testing.B) store.Store) {
	b.Run("EnqueueMany", func(b *testing.B) { benchEnqueue(b, newStore(b)) })
	b.Run("ClaimN", func(b *testing.B) { benchClaim(b, newStore(b)) })
	b.Run("CompleteMany", func(b *testing.B) { benchComplete(b, newStore(b)) })
}

func benchEnqueue(b *testing.B, s store.Store) {
	batch := benchSpecs(benchEnqueueBatch)
	n := 0
	for b.Loop() {
		n++
		if _, err := s.JobEnqueue(context.Background(), &store.JobEnqueueParams{Jobs: batch}); err != nil {
			b.Fatal(err)
		}
	}
	reportJobsPerSec(b, n*benchEnqueueBatch)
}

func benchClaim(b *testing.B, s store.Store) {
	left, n := 0, 0
	for b.Loop() {
		n++
		if left < benchClaimBatch {
			b.StopTimer()
			benchFill(b, s)
			left += benchRefill
			b.StartTimer()
		}
		jobs := benchClaimN(b, s, benchClaimBatch)
		left -= len(jobs)
	}
	reportJobsPerSec(b, n*benchClaimBatch)
}

func benchComplete(b *testing.B, s store.Store) {
	var claimed []store.Job
	n := 0
	for b.Loop() {
		n++
		if len(claimed) < benchCompleteBatch {
			b.StopTimer()
			benchFill(b, s)
			for len(claimed) < benchRefill {
				claimed = append(claimed, benchClaimN(b, s, 1000)...)
			}
			b.StartTimer()
		}
		done := make([]store.JobCompleteParams, benchCompleteBatch)
		for i := range claimed[:benchCompleteBatch] {
			// As a pool completes: with the record its claim returned.
			j := &claimed[i]
			done[i] = store.JobCompleteParams{OwnerParams: store.OwnerParams{JobID: j.ID, LeaseID: j.LeaseID}, Result: json.RawMessage(`true`), Held: j}
		}
		claimed = claimed[benchCompleteBatch:]
		res, err := s.JobComplete(context.Background(), done)
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

func benchClaimN(b *testing.B, s store.Store, n int) []store.Job {
	jobs, err := s.JobClaim(context.Background(), &store.JobClaimParams{
		WorkerID: "bench", Queues: []string{"bench"}, Limit: n, LeaseTTL: time.Hour, Start: true})
	if err != nil || len(jobs) != n {
		b.Fatalf("claim: %v, %d of %d jobs", err, len(jobs), n)
	}
	return jobs
}

// benchFill enqueues benchRefill jobs in queue "bench".
func benchFill(b *testing.B, s store.Store) {
	batch := benchSpecs(benchEnqueueBatch)
	for range benchRefill / benchEnqueueBatch {
		if _, err := s.JobEnqueue(context.Background(), &store.JobEnqueueParams{Jobs: batch}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchSpecs(n int) []lifecycle.Spec {
	out := make([]lifecycle.Spec, n)
	for i := range out {
		out[i] = lifecycle.Spec{Kind: "bench", Queue: "bench", Payload: json.RawMessage(`{"n":1}`)}
	}
	return out
}

func reportJobsPerSec(b *testing.B, jobs int) {
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(jobs)/sec, "jobs/s")
	}
}
