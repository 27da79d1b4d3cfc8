package postgres_test

import (
	"testing"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/storetest"
)

// TestConformance runs the store's conformance suite on PostgreSQL, each
// subtest in a fresh schema.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return pgtest.NewStore(t) })
}
