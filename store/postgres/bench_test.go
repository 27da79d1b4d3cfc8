package postgres_test

import (
	"testing"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/storetest"
)

// BenchmarkStore runs the hot-path benchmarks (enqueue-many, claim-N,
// complete-many) shared by every backend; each gets a fresh schema.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store {
		s, _ := newStore(b, postgres.Options{})
		return s
	})
}

// BenchmarkEnqueueNotify measures what NOTIFY costs an enqueue: small
// batches from parallel producers, with notifications and without. Each
// committing transaction that notified takes PostgreSQL's global
// notification-queue lock, so its cost shows with many small commits.
func BenchmarkEnqueueNotify(b *testing.B) {
	for _, off := range []bool{false, true} {
		name := "notify"
		if off {
			name = "no_notify"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := newStore(b, postgres.Options{DisableNotify: off, MaxConns: 8})
			batch := specs(10, "q")
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.JobEnqueue(b.Context(), &store.JobEnqueueParams{Jobs: batch}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}
