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
